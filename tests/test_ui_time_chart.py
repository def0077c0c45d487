"""The shared time chart: zero at the bottom, one scale for every lane, flagged samples not plotted.

On two lanes whose TTFTs differ by 30 %, the chart alone must show which is faster and by roughly
how much: the slower lane's points sit ~30 % higher on an axis that starts at zero.
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from lanemon.folds.series import SeriesState
from lanemon.measure.records import RequestRecord
from lanemon.ui.widgets.time_chart import TimeChart, nice_max

S = 1_000_000_000
MS = 1_000_000


def test_nice_max_is_the_next_round_number():
    assert [nice_max(v) for v in (0, 0.17, 0.221, 1.0, 3.2, 147, 640)] == [1, 0.2, 0.25, 1, 4, 150, 800]


class ChartApp(App):
    def compose(self) -> ComposeResult:
        yield TimeChart("TTFT", id="c")


def rows_of(text: str, row_count: int) -> list[int]:
    """Plot rows (0 = top) that hold braille dots, from a rendered chart."""
    lines = text.split("\n")[1:1 + row_count]
    return [i for i, line in enumerate(lines) if any(0x2800 < ord(ch) <= 0x28FF for ch in line)]


async def test_two_lanes_30_percent_apart_read_as_such():
    app = ChartApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(TimeChart)
        a = [(i * S, 0.170) for i in range(1, 30)]
        b = [(i * S + S // 2, 0.221) for i in range(1, 30)]  # 30 % slower
        for name, pts in (("A", a), ("B", b)):
            chart.show(series={name: pts}, marks={}, t0=0, t1=31 * S, colours={name: "#ffffff"},
                       value_fmt=lambda v: f"{v * 1000:.0f} ms", x_fmt=lambda t: f"{t / S:.0f}s")
            await pilot.pause()
            chart.y_max = 0.25  # the shared axis both lanes are drawn on together
            text = chart.render().plain
            plot_rows = chart.size.height - 3
            (row,) = set(rows_of(text, plot_rows)) or {None}
            height_fraction = (plot_rows - 1 - row) / (plot_rows - 1)
            if name == "A":
                a_frac = height_fraction
            else:
                b_frac = height_fraction
        # zero at the bottom: the heights are proportional to the values (within a row of rounding)
        assert a_frac == pytest.approx(0.170 / 0.25, abs=1 / (plot_rows - 1))
        assert b_frac == pytest.approx(0.221 / 0.25, abs=1 / (plot_rows - 1))
        assert b_frac / a_frac == pytest.approx(1.3, abs=0.12)
        # together: one scale, the y axis starts at 0 and tops at a round number above both
        chart.show(series={"A": a, "B": b}, marks={"B": [(10 * S, "error")]}, t0=0, t1=31 * S,
                   colours={"A": "#0000ff", "B": "#ff0000"}, value_fmt=lambda v: f"{v * 1000:.0f} ms",
                   x_fmt=lambda t: f"{t / S:.0f}s")
        await pilot.pause()
        text = chart.render().plain
        assert chart.y_max == 0.25
        lines = text.split("\n")
        assert lines[1].lstrip().startswith("250 ms") and lines[chart.size.height - 3].strip().startswith("0")
        assert "✖" in lines[-2]  # the error is marked on the strip, not plotted
        assert "━━ A" in lines[0] and "━━ B" in lines[0] and "✖ error" in lines[0]


def _rec(lane: str, req: str, start: int, ttft_ms: float, *, error: dict | None = None,
         finish: str | None = "stop") -> RequestRecord:
    rec = RequestRecord(lane=lane, req=req, sent_ns=start)
    if error is None:
        t = start + int(ttft_ms * MS)
        rec.token_ns = [t + k * 10 * MS for k in range(20)]
        rec.chunk_tokens = [None] * 20
        rec.first_content_ns = t
        rec.end_ns = rec.token_ns[-1]
        rec.finish_reason = finish
    else:
        rec.end_ns = start + 50 * MS
        rec.error = error
    return rec


def test_series_window_numbers_and_outcomes():
    st = SeriesState(["A", "B"])
    for i in range(10):
        st.add(_rec("A", f"a{i}", i * S, 170 + i))
        st.add(_rec("B", f"b{i}", i * S, 221 + i))
    st.add(_rec("B", "bx", 11 * S, 0, error={"cls": "http", "status": 503, "message": "503"}))
    st.add(_rec("B", "bt", 12 * S, 230, finish=None))  # no finish_reason: truncated
    st.add(_rec("A", "ac", 12 * S, 0, error={"cls": "cancelled", "message": "quit"}))  # lanemon's own: skipped
    st.last_t = 13 * S
    a, b = st.window("A", 0, 13 * S), st.window("B", 0, 13 * S)
    assert (a.n, a.requests_ok, a.requests_err) == (10, 10, 0)
    assert (b.n, b.requests_ok, b.requests_err, b.requests_truncated) == (12, 10, 1, 1)
    assert a.ttft[0] == pytest.approx(0.1745, abs=0.001) and b.ttft[0] == pytest.approx(0.2255, abs=0.001)
    assert a.tpot[0] == pytest.approx(0.010, rel=0.01)
    assert b.rate_rps == pytest.approx(12 / 13)
    # a window holds only what ended in it
    assert st.window("A", 5 * S, 13 * S).n == 5


def test_throughput_counts_clean_requests_only():
    """A request run while lanemon was starved (client-bound) is not lane throughput."""
    from lanemon import events as schema
    from lanemon.events import Event

    st = SeriesState(["A"])
    st.add(_rec("A", "a0", 0, 100))            # 20 tokens, first token at 0.1 s, end at 0.29 s
    st.add(_rec("A", "a1", 2 * S, 100))        # the same two seconds later
    st.last_t = 4 * S
    clean = sum(v for _, v in st.tokens_per_s("A", 0, 4 * S, avg_s=1))
    assert clean == pytest.approx(40, rel=1e-6)  # 1-s buckets of tok/s: 20 + 20 tokens in all
    # the watcher reports the second request's span starved
    st.apply(Event(2 * S + 50 * MS, getattr(schema, "CLIENT_LOAD", "client_load"), None, None,
                   {"bound": False, "lag_ms": 1.0}))
    st.apply(Event(3 * S, getattr(schema, "CLIENT_LOAD", "client_load"), None, None,
                   {"bound": True, "lag_ms": 80.0, "t0": 2 * S + 60 * MS}))
    assert sum(v for _, v in st.tokens_per_s("A", 0, 4 * S, avg_s=1, final=True)) == pytest.approx(20, rel=1e-6)
