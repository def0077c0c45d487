"""The dashboard's window table with fewer samples than a percentile needs (issue 40): one request read
`171·max 171·171 ms` -- three copies of one number under `p50·90·99`.  A percentile its samples cannot carry
is not shown as one: one sample is its value and `n=1`; under 10 the p50 and the largest with the count."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.geometry import Region

from lanemon.folds.series import WindowStats
from lanemon.ui.widgets.lane_stats import LaneStats, triple


@pytest.mark.parametrize("vals,n,tpot,want", [
    ((0.171, 0.171, 0.171), 1, False, "171 ms n=1"),
    ((0.171, 0.190, 0.190), 8, False, "171·max 190 ms n=8"),
    ((0.171, 0.180, 0.190), 50, False, "171·180·max 190 ms"),
    ((0.171, 0.180, 0.190), 150, False, "171·180·190 ms"),
    ((0.0171, 0.0171, 0.0171), 1, True, "17.1 ms n=1"),
    ((12.1, 13.0, 14.0), 3, False, "12.1·max 14.0 s n=3"),
    ((0.171, 0.180, 0.190), None, False, "171·180·190 ms"),  # no count known: as it was
])
def test_triple_says_what_its_samples_carry(vals, n, tpot, want):
    assert triple(vals, tpot=tpot, n=n) == want


class _Host(App):
    def compose(self):
        yield LaneStats(id="stats")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_window_table_with_one_request_shows_it_once_with_its_count(size):
    one = WindowStats(n=1, requests_ok=1, rate_rps=0.02, ttft=(0.171, 0.171, 0.171), tpot=(0.0121,) * 3,
                      e2e=(1.5, 1.5, 1.5), samples=(1, 1, 1))
    eight = WindowStats(n=8, requests_ok=8, rate_rps=0.13, ttft=(0.2, 0.31, 0.31), tpot=(0.011, 0.013, 0.013),
                        e2e=(1.4, 1.9, 1.9), samples=(8, 8, 8))
    app = _Host()
    async with app.run_test(size=size) as pilot:
        stats = app.query_one(LaneStats)
        await pilot.pause()
        stats.update_from({"A": one, "B": eight}, {"A": "red", "B": "blue"}, "1m")
        await pilot.pause()
        lines = [strip.text for strip in stats.render_lines(Region(0, 0, stats.outer_size.width,
                                                                  stats.outer_size.height))]
        text = "\n".join(lines)
        assert "171 ms n=1" in text, text
        assert "171·max 171" not in text and "171·171" not in text
        assert "200·max 310 ms n=8" in text, text
