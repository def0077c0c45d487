"""Keys a newcomer can find (issue 40 item 12): the command palette finds `err` and `race`, and the footer shows
`e Errors` and `y History` where it has room (they were only under ctrl+p → Keys)."""

from __future__ import annotations


from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from test_starved_notice import _wait  # the bounded wait for a state the pilot test asserts


async def test_the_palette_names_every_key_of_the_screen():
    app = make_app(ScriptedSource(mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Errors (e)" in titles and "Race (r)" in titles and "History (y)" in titles
        assert any(t.lower().startswith("quit") for t in titles)  # Textual's own stay
        errors = next(c for c in app.get_system_commands(app.screen) if c.title == "Errors (e)")
        await errors.callback()
        await _wait(pilot, lambda: app.screen_name() == "errors")


async def test_the_footer_shows_e_and_y_where_it_has_room():
    app = make_app(ScriptedSource(mode="live", hold=True))
    async with app.run_test(size=(240, 50)) as pilot:
        await _wait(pilot, lambda: {k.key for k in app.screen.query("FooterKey")} >= {"q"})
        keys = {k.key for k in app.screen.query("FooterKey")}
        assert {"e", "y"} <= keys, keys
