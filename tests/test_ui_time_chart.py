"""The shared time chart: zero at the bottom, one scale for every lane, flagged samples not plotted.

On two lanes whose TTFTs differ by 30 %, the chart alone must show which is faster and by roughly
how much: the slower lane's points sit ~30 % higher on an axis that starts at zero.
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from lanemon.folds.series import SeriesState
from lanemon.measure.records import RequestRecord
from lanemon.results.requests import read_error
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
        rec.error = read_error(error)
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
    points = st.tokens_per_s("A", 0, 4 * S, avg_s=1, final=True)
    assert sum(v for _, v in points) == pytest.approx(20, rel=1e-6)
    # the starved second has no point at all: neither its tokens nor a drop to zero the lane never had
    assert [t // S for t, _ in points] == [1, 2, 4]
    assert dict((t // S, v) for t, v in points)[1] == pytest.approx(20, rel=1e-6)


async def test_cells_two_lanes_share_are_drawn_as_shared_and_named():
    """A cell holding two lanes' points is not drawn in one lane's colour only: it is a shared cell."""
    app = ChartApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(TimeChart)
        a = [(i * S, 0.200) for i in range(1, 30)]
        b = [(i * S, 0.200) for i in range(1, 15)] + [(i * S, 0.100) for i in range(15, 30)]  # B under A, then apart
        chart.show(series={"A": a, "B": b}, marks={"A": [(20 * S, "error")], "B": [(20 * S, "truncated")]},
                   t0=0, t1=31 * S, colours={"A": "#0000ff", "B": "#ff0000"}, shared_colour="#ffffff",
                   value_fmt=lambda v: f"{v * 1000:.0f} ms", x_fmt=lambda t: f"{t / S:.0f}s")
        await pilot.pause()
        text = chart.render()
        rows, cols = chart.size.height - 3, len(text.plain.split("\n")[1]) - len("250 ms┤")
        grid = chart.cells(rows, cols)
        shared = {rc for rc, (_, owners) in grid.items() if len(owners) > 1}
        assert shared and set(chart.shared) == shared
        assert all(lanes == {"A", "B"} for lanes in chart.shared.values())
        # every shared cell is left of B's drop; after it, A and B each have cells of their own
        last_shared = max(c for _, c in shared)
        assert last_shared < cols // 2 + 2
        alone = {next(iter(owners)) for (r, c), (_, owners) in grid.items() if len(owners) == 1 and c > last_shared}
        assert alone == {"A", "B"}
        # drawn in the shared colour, named in the legend; the two marks at 20 s share a strip cell too
        r, c = min(shared)
        line_start = sum(len(line) + 1 for line in text.plain.split("\n")[:1 + r])
        styles = {str(span.style) for span in text.spans if span.start <= line_start + len("250 ms┤") + c < span.end}
        assert "bold #ffffff" in styles
        assert "⣿ A+B" in text.plain.split("\n")[0]
        strip = text.plain.split("\n")[-2]
        assert ("✂" in strip) != ("✖" in strip)  # one cell, one glyph, in the shared colour


def test_wall_axis_labels_round_local_times_in_an_explicit_zone():
    from datetime import datetime, timedelta, timezone

    from lanemon.ui.widgets.time_chart import WallAxis

    start = datetime(2026, 5, 3, 10, 14, 52, 500000, tzinfo=timezone.utc).timestamp()
    utc = WallAxis(start, tz=timezone.utc)
    assert utc.label(0, 15) == "10:14:52" and utc.label(0, 60) == "10:14"
    ticks = utc.ticks(0, 60 * S, 15)
    assert [utc.label(t, 15) for t in ticks] == ["10:15:00", "10:15:15", "10:15:30", "10:15:45"]
    assert ticks[0] == 7_500_000_000  # 7.5 s after the start
    # the same instant in another zone: labels move with the zone, ticks stay on round minutes
    plus = WallAxis(start, tz=timezone(timedelta(hours=5, minutes=30)))
    assert [plus.label(t, 60) for t in plus.ticks(0, 300 * S, 60)] == ["15:45", "15:46", "15:47", "15:48", "15:49"]


async def test_chart_x_axis_in_wall_clock_fits_its_width():
    from datetime import datetime, timezone

    from lanemon.ui.widgets.time_chart import WallAxis

    start = datetime(2026, 5, 3, 10, 15, 0, tzinfo=timezone.utc).timestamp()
    app = ChartApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(TimeChart)
        for window_s, fmt_len in ((60, 8), (900, 5)):
            t1 = 1000 * S
            chart.show(series={"A": [(t1 - S, 1.0)]}, marks={}, t0=t1 - window_s * S, t1=t1,
                       colours={"A": "#ffffff"}, value_fmt=lambda v: f"{v:g}", x_fmt=lambda t: "never",
                       wall=WallAxis(start, tz=timezone.utc))
            await pilot.pause()
            lines = chart.render().plain.split("\n")
            labels = [text for _, text in chart.x_labels]
            assert len(labels) >= 3 and all(len(x) == fmt_len for x in labels), labels
            assert all(text in lines[-1] for text in labels) and "never" not in lines[-1]
            starts = [at for at, _ in chart.x_labels]
            assert starts == sorted(starts)
            assert lines[-2].count("┬") == len(labels)
        # 15 minutes ending at 10:31:40: whole minutes, e.g. 10:20 ... 10:30
        assert labels[-1] in ("10:30", "10:31") and labels[0] >= "10:16"


async def test_with_three_lanes_the_legend_names_which_lanes_share_cells():
    """A+B share the first third, B+C the second, all three the last: each combination is named, the one
    sharing the most cells first; where the title row is too narrow, the rest give way to an ellipsis."""
    app = ChartApp()
    async with app.run_test(size=(100, 24)) as pilot:
        chart = app.query_one(TimeChart)
        a = [(i * S, 0.2 if i < 10 else 0.1 if i < 20 else 0.3) for i in range(1, 30)]
        b = [(i * S, 0.2 if i < 20 else 0.3) for i in range(1, 30)]
        c = [(i * S, 0.05 if i < 10 else 0.2 if i < 20 else 0.3) for i in range(1, 30)]
        c += [(i * S + S // 2, 0.2) for i in range(10, 20)]  # B+C share more cells than the others
        kw = dict(marks={}, t0=0, t1=31 * S, colours={"A": "#0000ff", "B": "#ff0000", "C": "#00ff00"},
                  shared_colour="#ffffff", value_fmt=lambda v: f"{v * 1000:.0f} ms", x_fmt=lambda t: f"{t / S:.0f}s")
        chart.show(series={"A": a, "B": b, "C": c}, **kw)
        await pilot.pause()
        head = chart.render().plain.split("\n")[0]
        assert set(chart.shared.values()) == {frozenset("AB"), frozenset("BC"), frozenset("ABC")}
        assert chart.shared_sets()[0] == frozenset("BC")
        assert "⣿ B+C, A+B, A+B+C" in head or "⣿ B+C, A+B+C, A+B" in head, head
        assert chart.shared_name(12) in ("B+C, A+B, …", "B+C, …")
        assert chart.shared_name(12).endswith("…") and chart.shared_name(3) == "B+C, …"
        # the title row of a narrow chart: the first combination, then an ellipsis; never cut mid-name
        chart.styles.width = 40
        await pilot.pause()
        head = chart.render().plain.split("\n")[0]
        assert len(head) <= 40 and "…" in head, head


async def test_a_lane_with_two_series_is_one_lane_solid_and_broken():
    """The server queue: running (solid) and waiting (broken, faded) of one lane share cells as that lane,
    not as a shared cell; the legend names the lanes once and the two line styles."""
    app = ChartApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chart = app.query_one(TimeChart)
        running = [(i * S, 2.0) for i in range(0, 31)]
        waiting = [(i * S, 2.0 if i < 15 else 0.0) for i in range(0, 31)]
        chart.show(series={"A running": running, "A waiting": waiting}, marks={}, t0=0, t1=30 * S,
                   colours={"A": "#0000ff"}, value_fmt=lambda v: f"{v:g}", x_fmt=lambda t: f"{t / S:.0f}s",
                   connect=True, connect_ns=2 * S, lane_of={"A running": "A", "A waiting": "A"}, dashed={"A waiting"},
                   kinds=(("━", "running"), ("┄", "waiting")))
        await pilot.pause()
        text = chart.render()
        assert not chart.shared
        head = text.plain.split("\n")[0]
        assert head.count("━━ A") == 1 and "━ running" in head and "┄ waiting" in head and "⣿" not in head
        rows, cols = chart.size.height - 3, chart.size.width - 2 - len("4┤")
        grid = chart.cells(rows, cols)
        bottom = sorted(c for (r, c), (_, owners) in grid.items() if r == rows - 1 and "A waiting" in owners)
        assert bottom and any(b - a > 1 for a, b in zip(bottom, bottom[1:]))  # broken: gaps along the line
        running_cols = sorted(c for (_, c), (_, owners) in grid.items() if "A running" in owners)
        assert running_cols == list(range(running_cols[0], running_cols[-1] + 1))  # solid: no gaps


async def test_a_live_chart_settles_a_column_at_a_time_and_repaints_only_changed_lines():
    """Issue 23: ``settle`` holds a point until its column is complete (the axis and the new points move
    together, once per column-period), and a repaint redraws the lines that changed, not the chart."""
    app = ChartApp()
    window = 60 * S
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(TimeChart)
        column = chart.column_ns(window)
        base = [(i * S, 0.170) for i in range(60, 100)]
        args = dict(marks={}, colours={"A": "#ffffff"}, value_fmt=lambda v: f"{v * 1000:.0f} ms",
                    x_fmt=lambda t: f"{t / S:.0f}s", window_ns=window, settle=True, y_max=0.25)
        t1 = 100 * column  # on a column's edge
        chart.show(series={"A": base}, t0=t1 - window, t1=t1, **args)
        await pilot.pause()
        lines = chart.size.height
        drawn, repaints = chart.lines_repainted, chart.repaints
        # a new point inside the column being filled: held, nothing repainted
        late = base + [(t1 + column // 2, 0.2)]
        chart.show(series={"A": late}, t0=t1 + column // 2 - window, t1=t1 + column // 2, **args)
        assert chart.repaints == repaints and (t1 + column // 2, 0.2) not in chart.series["A"]
        # the column complete: drawn, with the axis step; only the lines that changed are redrawn
        chart.show(series={"A": late}, t0=t1 + column - window, t1=t1 + column, **args)
        assert chart.repaints == repaints + 1 and (t1 + column // 2, 0.2) in chart.series["A"]
        await pilot.pause()
        assert 0 < chart.lines_repainted - drawn < lines - 3  # not the title, nor the empty rows
        # unsettled (a replay, a paused screen): every point at once
        chart.show(series={"A": late + [(t1 + column + 1, 0.1)]}, t0=t1 + column + 1 - window,
                   t1=t1 + column + 1, **{**args, "settle": False})
        assert (t1 + column + 1, 0.1) in chart.series["A"]


@pytest.mark.parametrize("width", [26, 30, 33, 38, 44, 60])
async def test_a_narrow_title_row_keeps_each_legend_item_whole_or_leaves_it_out(width):
    """At 100x30 the dashboard's three charts are ~33 columns: the legend read 'decode per stream ━ A ━ B  ⣿…'
    and '━ A ━ B …' (issue 25 item 10). Each item -- a lane, a mark's name, the shared cells -- is whole or
    not there; the lanes come first."""
    app = ChartApp()
    async with app.run_test(size=(100, 24)) as pilot:
        chart = app.query_one(TimeChart)
        chart.title = "decode per stream"
        a = [(i * S, 0.2) for i in range(1, 30)]
        b = [(i * S, 0.2 if i < 15 else 0.1) for i in range(1, 30)]  # B under A (shared), then apart
        chart.show(series={"A": a, "B": b}, marks={"A": [(20 * S, "error")], "B": [(25 * S, "truncated")]},
                   t0=0, t1=31 * S, colours={"A": "#0000ff", "B": "#ff0000"}, shared_colour="#ffffff",
                   value_fmt=lambda v: f"{v * 1000:.0f} ms", x_fmt=lambda t: f"{t / S:.0f}s")
        chart.styles.width = width
        await pilot.pause()
        head = chart.render().plain.split("\n")[0].rstrip()
        assert len(head) <= width
        assert "…" not in head, head  # nothing cut
        rest = head[len("decode per stream"):]
        items = [x for x in rest.replace("━━", "━").split("  ") if x.strip()]
        whole = {"━ A", "━ B", "✖ error", "✂ truncated", "⣿ A+B", "━ A ━ B", "━ A +B", "+A B", "+2"}  # +: left out
        assert all(x.strip() in whole for x in items), items
        if chart.content_region.width >= len("decode per stream") + 8:
            assert "━ A" in rest and "━ B" in rest  # the lanes first


@pytest.mark.parametrize("width", [24, 26, 30, 44])
async def test_a_title_gives_way_to_the_lanes_in_their_colours(width):
    """80x24's decode chart is ~26 columns: it read 'decode per stream +A B' (the lanes as bare names, not in
    their colours).  Given shorter forms, the chart draws the fullest one beside which every lane fits."""
    app = ChartApp()
    async with app.run_test(size=(100, 24)) as pilot:
        chart = app.query_one(TimeChart)
        chart.show(series={"A": [(i * S, 0.2) for i in range(1, 30)], "B": [(i * S, 0.1) for i in range(1, 30)]},
                   marks={}, t0=0, t1=31 * S, colours={"A": "#0000ff", "B": "#ff0000"}, shared_colour="#ffffff",
                   value_fmt=lambda v: f"{v:.0f} tok/s", x_fmt=lambda t: f"{t / S:.0f}s",
                   title=("decode per stream", "decode/stream", "decode"))
        chart.styles.width = width
        await pilot.pause()
        head = chart.render().plain.split("\n")[0].rstrip()
        assert "━ A" in head and "━ B" in head and "+" not in head, head
        title = head.split(" ━")[0].rstrip()
        fullest = next(t for t in chart.titles if len(t) + len(" ━ A ━ B") <= chart.content_region.width)
        assert title == fullest, (head, chart.content_region.width)


@pytest.mark.parametrize("width", [12, 16, 26, 29, 30, 36, 44, 49, 60])
async def test_lanes_left_out_of_a_narrow_legend_are_named_or_counted(width):
    """Eight lanes at 100x30: the legend stopped at '━ F' with nothing saying G and H were left out (issue 25).
    Every lane is in the title row: drawn (``━ A``), or after the last one drawn by name (``+G H``) or in a
    count (``+2``), within the width."""
    names = "ABCDEFGH"
    app = ChartApp()
    async with app.run_test(size=(100, 24)) as pilot:
        chart = app.query_one(TimeChart)
        chart.title = "TTFT"
        chart.show(series={x: [(i * S, 0.1 + 0.01 * k) for i in range(1, 30)] for k, x in enumerate(names)},
                   marks={}, t0=0, t1=31 * S, colours={x: "#0000ff" for x in names}, shared_colour="#ffffff",
                   value_fmt=lambda v: f"{v * 1000:.0f} ms", x_fmt=lambda t: f"{t / S:.0f}s")
        chart.styles.width = width
        await pilot.pause()
        head = chart.render().plain.split("\n")[0].rstrip()
        assert len(head) <= chart.content_region.width and "…" not in head, head
        legend = head[len("TTFT"):].split("  ⣿")[0].replace("━━", "━")
        drawn = [part.strip()[-1] for part in legend.split("+")[0].split("━")[1:]]
        assert drawn == list(names[:len(drawn)]), head  # the first lanes, in order
        if len(drawn) < len(names):
            rest = legend.split("+", 1)[1].split()
            assert rest == list(names[len(drawn):]) or rest == [str(len(names) - len(drawn))], head
        if chart.content_region.width >= len("TTFT ━ A +7"):
            assert drawn, head  # a lane drawn before any count


async def test_a_chart_is_built_as_one_span_per_run_of_one_style():
    """A chart row is appended run by run, not cell by cell (a repaint splits and renders every span):
    a connected line of one lane in a row is one span of its colour over dots only, and the axis strip
    with one mark is at most four spans.  Built per cell, the line's row had a span per dotted cell and
    the strip a span per column."""
    app = ChartApp()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(TimeChart)
        flat = [(i * S // 4, 0.2) for i in range(0, 121)]  # one row, every column: a connected line
        chart.show(series={"A": flat}, marks={"A": [(15 * S, "error")]}, t0=0, t1=30 * S,
                   colours={"A": "#0000ff"}, value_fmt=lambda v: f"{v * 1000:.0f} ms",
                   x_fmt=lambda t: f"{t / S:.0f}s", y_max=0.25, connect=True)
        await pilot.pause()
        lines = chart.render().split("\n", allow_blank=True)
        plot_rows = chart.size.height - 3
        row = next(r for r in range(1, plot_rows + 1) if any(0x2800 < ord(ch) < 0x2900 for ch in lines[r].plain))
        dotted = [s for s in lines[row].spans if s.style == "#0000ff"]
        assert len(dotted) == 1
        span = dotted[0]
        assert set(lines[row].plain[span.start:span.end]) <= {chr(c) for c in range(0x2801, 0x2900)}
        assert span.end - span.start >= 50  # the whole line across the plot, in one span
        strip = lines[plot_rows + 1]
        assert "✖" in strip.plain and len(strip.spans) <= 4  # "└" dim, "───" dim, "✖" its colour, "───" dim
