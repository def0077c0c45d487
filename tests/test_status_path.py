"""The status bar's recording path at 100 columns (issue 25 item 10): where the whole path does not fit beside
the facts, the file's name shows whole ('demo.jsonl' beside the REPLAY chip, 'from demo.jsonl' with room), not a path cut in the name ('from sample_sessions/
demo.…'); with room, the whole path."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Label

from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource

LONG = Path("recordings/lab-bench-2026/december/20260503-101500-demo.jsonl")


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("size,want", [((100, 30), LONG.name), ((240, 45), f"from {LONG}")],
                         ids=["100x30", "240x45"])
async def test_path_keeps_the_file_name_whole(size, want):
    app = make_app(ScriptedSource(mode="replay", speed=4.0, recording_path=LONG))
    async with app.run_test(size=size) as pilot:
        for _ in range(4):
            await pilot.pause(0.05)
            app.redraw(force=True)
        await pilot.pause()
        label = app.screen.query_one("#path", Label)
        assert label.visual.plain == want
        assert len(want) <= label.size.width - 2  # shown whole
