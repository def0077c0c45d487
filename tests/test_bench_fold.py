"""The bench screen at 100x30 (issue 25 item 10): the header never cuts the recording's name (where even the
name does not fit it says '● rec' and the errors panel's border, full width, names the file), and the results
table never hides its last rows without saying so ('↓ N more' in its border); a finished bench gives the
progress panel's lines (every bar full, the header says N/N cells) to the results."""

from __future__ import annotations

import pytest
from textual.widgets import Label

from lanemon.ui.app import make_app
from lanemon.ui.widgets.bench_log import BenchLog
from lanemon.ui.widgets.bench_progress import BenchProgress
from lanemon.ui.widgets.bench_table import BenchTable
from test_ui_bench import steady_bench
from test_ui_snapshots import settle


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def test_the_header_shows_the_recording_name_whole_or_not_at_all():
    bench = steady_bench()
    app = make_app(bench)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        label = app.screen.query_one("#path", Label)
        text = label.visual.plain
        name = bench.recording_path.name
        assert len(text) <= label.size.width - 2  # drawn whole, no ellipsis
        assert text == "● rec" or name in text
        log = app.screen.query_one(BenchLog)
        assert (name in str(log.border_subtitle)) == (text == "● rec")  # named below where not in the header


@pytest.mark.parametrize("height", [18, 30])
async def test_the_results_table_says_when_rows_are_below_the_fold(height):
    app = make_app(steady_bench())
    async with app.run_test(size=(100, height)) as pilot:
        await settle(pilot)
        await pilot.pause()
        table = app.screen.query_one(BenchTable)
        assert table.row_count == 8
        assert not app.screen.query_one(BenchProgress).display  # finished: its lines went to the results
        below = table.row_count - (table.size.height - 1)
        if below > 0:
            assert f"↓ {below} more" in str(table.border_subtitle)
        else:
            assert "more" not in str(table.border_subtitle)
        assert (below > 0) == (height == 18)  # 18 rows: some below the fold; at 100x30 every row shows
