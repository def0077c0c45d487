"""The footer fits its width (issue 25 item 10): at 100 columns a replay's footer keeps ←/→ and [/] (it stopped
at ``r Race``), the dashboard shows its zoom keys ``1–8`` (they were only in the palette), and no hint is cut at
the right edge: keys left out are left out whole, the screens' letters first."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from lanemon.ui.app import make_app
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
from lanemon.ui.widgets.footer import fit_bindings


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_fit_drops_the_screens_letters_first_and_takes_back_what_fits():
    groups = [(None, [("quit", "q", "Quit")]), (None, [("open('race')", "r", "Race")]),
              (None, [("open('timeline')", "t", "Timeline")]), (None, [("toggle_host", "h", "Host")])]
    assert fit_bindings(groups, 100, False) == set()
    # 'q Quit' 8, 'r Race' 8, 't Timeline' 12, 'h Host' 8, margin 1 = 37: in 30, timeline goes, the rest stays
    assert fit_bindings(groups, 30, False) == {"open('timeline')"}
    assert fit_bindings(groups, 10, False) == {"open('timeline')", "open('race')", "toggle_host"}


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_replay_footer_keeps_seek_and_zoom_keys(size):
    from lanemon.sessions.sources import ReplaySession

    app = make_app(ReplaySession(SAMPLES / "demo.jsonl", speed=1.0))
    async with app.run_test(size=size) as pilot:
        for _ in range(5):
            await pilot.pause(0.05)
        footer = app.screen.query_one("Footer")
        keys = [k for k in footer.query(FooterKey) if k.display]
        shown = {k.key_display for k in keys}
        assert {"←", "→", "[", "]", "1–8", "q", "p"} <= shown, shown
        right = max(k.region.right for k in keys if "-command-palette" not in k.classes)
        palette = [k for k in keys if "-command-palette" in k.classes]
        assert right <= (palette[0].region.x if palette else footer.region.right)  # nothing under ^p, nothing cut
