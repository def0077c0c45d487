"""The numbers beside the charts: per lane over the chart window, and the ratio to the first lane.

The lane column's header is the window (``last 1m``): the table counts that window, the lane cards the
whole session.  Columns: request rate, outcomes (ok / err / cut / not counted), and p50 · p90 · p99 of TTFT, TPOT
and end-to-end over the clean samples only (a p99 over fewer than 100 of them is the largest, shown ``max``;
under 10 the p50 and the largest with their count, ``171·max 190 ms n=8``; one sample ``171 ms n=1``).  With two or more lanes one more row per extra lane
gives its p50s over the first lane's, saying which way is better (``B/A p50 1.29× slower``: B takes 29 %
longer; ``0.94× faster``; within half a percent ``same``).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from lanemon.folds.series import WindowStats
from lanemon.measure.metrics import tail_ok


def _ms(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x * 1000:,.{digits}f}"


def triple(vals: tuple[float | None, float | None, float | None], *, tpot: bool = False,
           n: int | None = None) -> str:
    """``172·190·199 ms`` (or seconds when the median is over 10 s); ``—`` for nothing.  A percentile its
    samples (``n``) cannot carry is not shown as one (``tail_ok``): under 100 the third figure is the largest
    sample, said so (``172·190·max 199 ms``); under 10 the p50 and the largest with the count
    (``172·max 199 ms n=8``); one sample is that value and ``n=1`` -- never three copies of one number."""
    if vals[0] is None:
        return "—"
    seconds = not tpot and vals[0] >= 10
    digits = 1 if tpot else 0

    def one(v: float | None) -> str:
        return "—" if v is None else f"{v:.1f}" if seconds else _ms(v, digits)

    unit = " s" if seconds else " ms"
    if n is None or tail_ok(90, n):
        marks = ["", "", "" if n is None or tail_ok(99, n) else "max "]
        return "·".join(m + one(v) for m, v in zip(marks, vals)) + unit
    if n <= 1:
        return f"{one(vals[0])}{unit} n={n}"
    top = vals[2] if vals[2] is not None else vals[1]  # under 10 samples p90 and p99 are the largest sample
    return f"{one(vals[0])}·max {one(top)}{unit} n={n}"


def ratio(b: float | None, a: float | None) -> str:
    return "—" if not a or b is None else f"{b / a:.2f}×"


def time_ratio(b: float | None, a: float | None) -> str:
    """A time's ratio and which way is better (a shorter time is): ``p50 1.29× slower``, ``p50 0.94× faster``."""
    if not a or b is None:
        return "—"
    r = b / a
    return f"p50 {r:.2f}× " + ("same" if f"{r:.2f}" == "1.00" else "slower" if r > 1 else "faster")


class LaneStats(Static):
    """A compact table redrawn from :meth:`lanemon.folds.series.SeriesState.window` results."""

    DEFAULT_CSS = """
    LaneStats { height: auto; padding: 0 1; background: $surface; }
    """

    _shown_key: tuple | None = None
    _lines = 0
    renders = 0
    """How many times the table was laid out (once per change of what it shows; tests count them)."""

    def update_from(self, stats: dict[str, WindowStats], colours: dict[str, str], window: str, *,
                    slo: dict[str, tuple[float | None, float | None]] | None = None) -> None:
        """``slo``: per lane (attainment, goodput req/s) over the window when an SLO is set (two more columns)."""
        names = list(stats)
        width = self.size.width or 200
        # more than two lanes: one "vs the first lane" column instead of a ratio row per lane, when it fits
        many = len(names) > 2 and width >= 130
        rows = []
        for name in names:
            st = stats[name]
            first = stats[names[0]]
            extra = []
            if many:
                extra = ["" if name == names[0] else
                         f"{ratio(st.ttft[0], first.ttft[0])}·{ratio(st.tpot[0], first.tpot[0])}·"
                         f"{ratio(st.e2e[0], first.e2e[0])}"]
            rows.append([Text(f"■ {name}", style=colours.get(name, "")),
                         "—" if st.rate_rps is None else f"{st.rate_rps:.2f}",
                         str(st.requests_ok),
                         Text(str(st.requests_err), style="bold red" if st.requests_err else ""),
                         Text(str(st.requests_truncated), style="bold yellow" if st.requests_truncated else ""),
                         Text(str(st.requests_empty), style="bold yellow" if st.requests_empty else ""),
                         Text(str(st.flagged), style="yellow" if st.flagged else ""),
                         triple(st.ttft, n=st.samples[0]), triple(st.tpot, tpot=True, n=st.samples[1]),
                         triple(st.e2e, n=st.samples[2]), *extra])
            if slo is not None:
                share, good = slo.get(name, (None, None))
                rows[-1] += ["—" if share is None else f"{share:.0%}", "—" if good is None else f"{good:.2f}"]
        if len(names) == 2:
            a = stats[names[0]]
            for name in names[1:]:
                b = stats[name]
                rows.append([Text(f"{name}/{names[0]}", style="bold"), ratio(b.rate_rps, a.rate_rps), "", "", "", "",
                             "", time_ratio(b.ttft[0], a.ttft[0]), time_ratio(b.tpot[0], a.tpot[0]),
                             time_ratio(b.e2e[0], a.e2e[0])])
        # the lane column's header says the window the table covers (the cards count the whole session)
        columns = [(f"last {window}", "left")] + list(COLUMNS[1:]) + ([(f"p50 ÷ {names[0]} (<1 faster)", "right")] if many else [])
        if slo is not None:  # after the lane columns (and the p50 ratio column when it shows); ratio rows leave them empty
            columns += [("SLO met", "right"), ("good/s", "right")]
        shown = fitting_columns(columns, rows, width)
        key = (rows, columns, shown, window)
        if key == self._shown_key:  # the same figures: no repaint (widgets/repaint.py)
            return
        self._shown_key = key
        cols = [columns[i] for i in shown]
        cells = [[row[i] if i < len(row) else "" for i in shown] for row in rows]
        # a table that fits is laid out here (StatsLines: ~20x cheaper than Rich's Table, the same segments);
        # one wider than its room goes to Rich's Table, whose columns shrink with an ellipsis
        table: StatsLines | Table | None = StatsLines.fitting(cols, cells, self.size.width)
        if table is None:
            table = rich_table(cols, cells)
        self.renders += 1
        self.border_title = f"last {window}"
        lines = len(rows) + 1
        self.update(table, layout=lines != self._lines)  # the same rows keep the same height: no reflow
        self._lines = lines


def rich_table(columns: list[tuple[str, str]], rows: list[list]) -> Table:
    """The window table as a Rich ``Table`` (what :class:`StatsLines` draws when it fits, and what shrinks
    its columns when it does not)."""
    table = Table(box=None, pad_edge=False, padding=(0, 1), expand=False, show_edge=False,
                  header_style="dim", title=None)
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis")  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    return table


def _cell(value: object) -> Text:
    """A cell as text: a ``Text`` as it is, anything else plain (never read as markup: a lane called
    ``[b]x`` is shown as written)."""
    return value.copy() if isinstance(value, Text) else Text(str(value))


class StatsLines:
    """The window table laid out without Rich's ``Table``: each column as wide as its widest cell, one space
    either side of it (none outside the first and last), the header dim, the cells justified as their column
    says, their padding in the cell's own style -- the segments ``rich_table`` gives when the table fits its
    width (tests/test_lane_stats_lines.py compares them), at a twentieth of the CPU: a Rich ``Table`` measures
    and renders each cell through its ``Padding`` and ``render_lines`` (~6 ms per change of the dashboard's
    table, the dearest widget left; docs/PERFORMANCE.md)."""

    def __init__(self, lines: list[Text], width: int) -> None:
        self.lines = lines
        self.width = width

    @classmethod
    def fitting(cls, columns: list[tuple[str, str]], rows: list[list], width: int) -> StatsLines | None:
        """The table laid out in ``width`` cells; None when it is wider (or the width is not known yet)."""
        header = [Text(name) for name, _ in columns]
        body = [[_cell(v) for v in row] for row in rows]
        last = len(columns) - 1
        widths = [max([cell_len(header[i].plain)] + [cell_len(r[i].plain) for r in body if i < len(r)])
                  for i in range(len(columns))]
        total = sum(widths) + 2 * last
        if width <= 0 or total > width or any(len(r) != len(columns) for r in body):
            return None
        out: list[Text] = []
        for k, cells in enumerate([header] + body):
            line = Text(end="", no_wrap=True)
            for i, (cell, (_, justify)) in enumerate(zip(cells, columns)):
                if justify == "right":
                    cell.rstrip()
                    cell.pad_left(widths[i] - cell_len(cell.plain))
                else:
                    cell.pad_right(widths[i] - cell_len(cell.plain))
                if k == 0:  # the header: everything dim, its padding too (Rich's header_style)
                    cell = Text((" " if i else "") + cell.plain + (" " if i < last else ""), style="dim")
                    line.append_text(cell)
                    continue
                if i:
                    line.append(" ")
                line.append_text(cell)
                if i < last:
                    line.append(" ")
            out.append(line)
        return cls(out, total)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines:
            yield from line.render(console)
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.width, self.width)


COLUMNS = (("lane", "left"), ("req/s", "right"), ("ok", "right"), ("err", "right"), ("trunc", "right"),
           ("empty", "right"), ("flag", "right"), ("TTFT p50·90·99", "right"), ("TPOT p50·90·99", "right"),
           ("E2E p50·90·99", "right"))
SPARE = (5, 4, 6)
"""The columns left out first when the table is wider than its place (empty, trunc, flag), each only
while it holds nothing but zeros: a count that is not zero is never hidden."""
WHOLE = (9, 8)
"""Then, still too wide (80 columns), the E2E and then the TPOT percentiles, whole (the TTFT and decode charts
stay beside the table): never every column cut to ``re…``, ``f…``."""


def fitting_columns(columns: list[tuple[str, str]], rows: list[list], width: int) -> list[int]:
    """The indices of the columns to show: all of them when the table fits ``width``, else without
    the all-zero counts of :data:`SPARE`, in that order, until it fits (the cells' ellipsis cuts the rest)."""
    def text(v: object) -> str:
        return v.plain if isinstance(v, Text) else str(v)

    # each column: its widest cell plus one space either side (none outside the first and last)
    sizes = [max([len(name)] + [len(text(r[i])) for r in rows if i < len(r)]) + 2 for i, (name, _) in enumerate(columns)]
    shown = list(range(len(columns)))
    for i in SPARE:
        if sum(sizes[j] for j in shown) - 2 <= width:
            break
        if all(text(r[i]) in ("", "0") for r in rows if i < len(r)):
            shown.remove(i)
    for i in WHOLE:
        if sum(sizes[j] for j in shown) - 2 <= width:
            break
        if i in shown:
            shown.remove(i)
    return shown
