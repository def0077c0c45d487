"""The gauntlet's lane cards at 80x24 (34 cells) leave the turns' prompt and cached columns out: they said
nothing of it (the header's `hidden: prompt, cached` did not fit beside `17–21↑↓`).  The note takes a line of
its own, the blank one over the header, so no turn row is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_card_that_leaves_columns_out_says_which(size):
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app
    from lanemon.ui.widgets.gauntlet_lane import GauntletLanePanel
    from test_replay_snapshots import played_out

    app = make_app(ReplaySession(SAMPLES / "gauntlet.jsonl", speed=float("inf")))
    async with app.run_test(size=size) as pilot:
        await played_out(pilot)
        await pilot.pause(0.1)
        panels = list(app.screen.query(GauntletLanePanel))
        assert len(panels) == 2
        for panel in panels:
            head = panel.query_one("#turns-head").visual.plain
            rows = panel.query_one("#turns").visual.plain.split("\n")
            width = panel.query_one("#turns-head").content_region.width
            assert all(len(line) <= width for line in head.split("\n")), (head, width)
            shows_prompt = "prompt" in head.replace("hidden: prompt", "")
            if not shows_prompt:  # the columns went: the card says so, whole
                assert "hidden: prompt, cached" in head, head
            elif "cached" not in head.replace("hidden: ", "").replace("prompt, cached", ""):
                assert "hidden: cached" in head, head
            if size == (80, 24):
                assert not shows_prompt and len(rows) == 5, (head, rows)  # no turn row given up for the note
        await pilot.press("q")
