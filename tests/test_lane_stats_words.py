"""The window table under the lane panels says what it covers and which way its ratios are better (issue 40
items 4 and 8: `B/A 0.94× … p50 1.29×` said neither; `■ A 0.15 5 ok` beside a card's `59 ok` did not say
it covers the last minute)."""

from __future__ import annotations

from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.widgets.lane_stats import LaneStats, time_ratio


def test_time_ratio_says_which_way_is_better():
    assert time_ratio(1.29, 1.0) == "p50 1.29× slower"
    assert time_ratio(0.94, 1.0) == "p50 0.94× faster"
    assert time_ratio(1.001, 1.0) == "p50 1.00× same"
    assert time_ratio(None, 1.0) == "—" and time_ratio(1.0, None) == "—"


async def test_the_window_table_says_its_window_and_the_ratio_direction():
    app = make_app(ScriptedSource(sample_events(), mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.2)
        app.redraw(force=True)
        await pilot.pause()
        table = app.screen.query_one(LaneStats)
        lines = [line.text for line in table.render_lines(table.region.reset_offset)]
        assert lines[0].lstrip().startswith("last 1 min ")  # the window, where the lane column's header was
        ratio_row = next(line for line in lines if line.lstrip().startswith("B/A"))
        assert any(word in ratio_row for word in ("slower", "faster", "same"))


async def test_at_80x24_the_table_drops_whole_columns_not_letters():
    """Issue 40 item 10: `l…  req…    e…  f…` at 80x24: the E2E and TPOT percentiles go whole instead."""
    app = make_app(ScriptedSource(sample_events(), mode="live", hold=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        app.redraw(force=True)
        await pilot.pause()
        table = app.screen.query_one(LaneStats)
        lines = [line.text for line in table.render_lines(table.region.reset_offset)]
        header = lines[0]
        assert "…" not in header, header
        assert "req/s" in header and "TTFT p50·90·99" in header and "E2E" not in header
