"""The TUI history screen (``y``): trends across sessions from the catalogue, the latest session marked when it
moved beyond the lane's own spread."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from lanemon.measure.summary import LaneSummary
from lanemon.monitor import history
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.screens.history import HistoryScreen


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def test_the_history_screen_shows_trends_and_marks_a_shift():
    rows = [LaneSummary(session=f"s{i}.jsonl", lane="A", workload="probe", started_s=float(i), requests=10,
                        ttft_p50=v, simulated=True) for i, v in enumerate([0.20, 0.21, 0.19, 0.20, 0.31])]
    rows += [LaneSummary(session=f"s{i}.jsonl", lane="B", workload="probe", started_s=float(i), requests=10,
                         ttft_p50=v) for i, v in enumerate([0.30, 0.31, 0.29, 0.30])]
    with history.connect() as conn:
        history.insert(conn, rows)
    app = make_app(ScriptedSource(sample_events(), mode="live", hold=True))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        await pilot.press("y")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        for _ in range(200):  # the catalogue is read in a worker thread
            if screen.loads:
                break
            await pilot.pause(0.05)
        assert screen.loads == 1
        app.redraw(force=True)
        await pilot.pause()
        lines = screen.query_one("#hi-list", Static).visual.plain.splitlines()
        a = next(line for line in lines if line.startswith("A "))
        b = next(line for line in lines if line.startswith("B "))
        assert "latest 310 ms" in a and "median 200 ms of 4" in a and "SHIFT +55%" in a
        assert "latest 300 ms" in b and "SHIFT" not in b
        await pilot.press("m")
        app.redraw(force=True)
        await pilot.pause()
        assert "ttft_p90" in str(screen.query_one("#hi-head").visual.plain)
