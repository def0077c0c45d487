"""A shared session says so all along (issue 25 item 9): the status bar's chip names it shared with how many
viewers (kept current, also while paused) and ``s`` repeats how to attach; the token notice at the start
was the only trace before, gone after 30 s."""

from __future__ import annotations

import pytest
from textual.widgets import Label

from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


class FakePublisher:
    """What the app reads of share.server.Publisher."""

    url = "ws://127.0.0.1:8765"
    attach_command = "lanemon attach ws://127.0.0.1:8765 --token TOKEN123"

    def __init__(self) -> None:
        self.viewers = 0


async def redraw(app, pilot) -> None:
    for _ in range(3):
        await pilot.pause(0.05)
        app.redraw()
    await pilot.pause()


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_status_bar_says_shared_with_viewers_and_s_says_how_to_attach(size):
    app = make_app(ScriptedSource(mode="live", hold=True))
    pub = app.share = FakePublisher()
    async with app.run_test(size=size) as pilot:
        await redraw(app, pilot)
        chip = app.screen.query_one("#mode", Label)
        assert chip.visual.plain == "LIVE · SHARED 0 viewers"
        await pilot.press("p")  # paused: the count still follows
        pub.viewers = 2
        await redraw(app, pilot)
        assert chip.visual.plain == "LIVE · SHARED 2 viewers"
        assert chip.region.width >= len("LIVE · SHARED 2 viewers")  # never cut
        await pilot.press("s")
        await pilot.pause()
        assert any(pub.attach_command in str(n.message) and "2 watching" in str(n.message)
                   for n in app._notifications)


async def test_no_share_no_chip_and_no_s():
    app = make_app(ScriptedSource(mode="live", hold=True))
    async with app.run_test(size=(100, 30)) as pilot:
        await redraw(app, pilot)
        assert app.screen.query_one("#mode", Label).visual.plain == "LIVE"
        assert app.check_action("share_info", ()) is False
