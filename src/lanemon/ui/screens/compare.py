"""The compare screen: summary, decode curves and prefill ladders overlaid, races side by side, every row."""

from __future__ import annotations


from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from lanemon.ui.widgets.footer import Footer
from lanemon.reports import compare as cmp
from lanemon.reports.format import length_label
from lanemon.results.compare import CompareRow, Comparison
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.bench_chart import BenchChart


def _x(cell: str) -> float:
    try:
        return float(cell.lstrip("C"))
    except ValueError:
        return float("inf")


def race_rows(result: Comparison) -> tuple[list[str], list[list[str]]]:
    """One row per (race prompt, lane): TTFT, decode tok/s and total, OLD → NEW."""
    a, b = cmp.side_names(result)
    by: dict[tuple[str, str], dict[str, CompareRow]] = {}
    for r in result.rows:
        if r.bench == "race":
            by.setdefault((r.cell, r.lane), {})[r.metric] = r
    cols = ["race", "lane", f"TTFT {a} → {b}", f"decode {a} → {b}", f"total {a} → {b}", "total change"]
    rows = []
    for (cell, lane), ms in by.items():
        def pair(metric: str) -> str:
            x = ms.get(metric)
            if x is None:
                return "—"
            return f"{cmp.value_text(x.old, x.unit)} → {cmp.value_text(x.new, x.unit)}"
        total = ms.get("total_s")
        rows.append([cell, lane, pair("ttft_s"), pair("decode_tok_s"), pair("total_s"),
                     cmp.change_text(total, (a, b)) if total else "—"])
    return cols, rows


def tui_columns(result: Comparison) -> tuple[list[str], list[int]]:
    """The rows table's columns on screen: the verdict (ratio, change) right after what the row is (cell,
    lane, metric), the values after and the bench last (the cell says its kind: ``C4``, ``2,000 tok``), so at
    100 columns the ratio and the change are on screen; and the index of each in
    :func:`lanemon.reports.compare.table_rows`'s cells."""
    heads = cmp._headers(result)
    first = heads.index("metric") + 1
    order = list(range(1, first)) + [first + 2, first + 3, first, first + 1, 0]
    return [heads[i] for i in order], order


SHORT_LABELS = {"aggregate tok/s (steady state)": "aggregate tok/s (steady)",
                "aggregate tok/s (first send → last end)": "aggregate tok/s (span)"}
"""Metric labels on a narrow screen (the steady / span words of the bench screen's legend)."""


def compact_cells(row: CompareRow, cells: list[str], names: tuple[str, str]) -> list[str]:
    """A row's cells for a narrow screen: short metric words, values without their rep range, the change in
    fewer words -- so the ratio, the change and both values fit at 100 columns, none cut."""
    out = list(cells)
    i = len(cells) - 5  # ... metric, old, new, ratio, change
    out[i] = SHORT_LABELS.get(out[i], out[i])
    out[i + 1] = cmp.value_text(row.old, row.unit, row.metric)
    out[i + 2] = cmp.value_text(row.new, row.unit, row.metric)
    out[i + 4] = out[i + 4].replace("beyond band (untested)", "beyond band, untested").replace(
        "not judged (client-bound)", "not judged")
    return out


def beyond(row: CompareRow) -> bool:
    """A row that moved: significant, or beyond the runs' own spread (and judged)."""
    return bool(row.significant or (row.beyond_band and not row.unreliable))


def _styled(row: CompareRow, cells: list[str]) -> list[Text]:
    style = ""
    if row.significant:
        style = "bold green" if row.better == "new" else "bold red"
    elif row.better is not None:
        style = "dim"
    return [Text(c, style=style, justify="left") for c in cells]


class CompareScreen(LanemonScreen):
    """Filled once from a compare result (:func:`lanemon.reports.compare.compare` / ``compare_lanes``)."""

    NAME = "compare"
    AUTO_FOCUS = "#cmp-rows"  # arrows scroll the rows at once

    BINDINGS = [
        Binding("f", "toggle_filter", "Only changes"),
        Binding("c", "toggle_charts", "Charts"),
    ]

    DEFAULT_CSS = """
    CompareScreen #cmp-head { height: auto; max-height: 9; padding: 0 1; background: $panel; }
    CompareScreen.-short #cmp-head { max-height: 4; }
    CompareScreen.-short #cmp-races { max-height: 6; }
    CompareScreen #cmp-charts { height: 1fr; min-height: 10; padding: 0 1; }
    CompareScreen #cmp-charts BenchChart { width: 1fr; }
    CompareScreen #cmp-tables { height: 1fr; padding: 0 1; }
    CompareScreen #cmp-races { height: auto; max-height: 10; border: round $primary 40%;
                                border-title-color: $text-muted; background: $surface; }
    CompareScreen #cmp-rows { height: 1fr; border: round $primary 40%; border-title-color: $text-muted;
                               background: $surface; }
    """

    def __init__(self, result: Comparison) -> None:
        super().__init__()
        self.result = result
        self.only_changes = False
        self.charts: bool | None = None
        """Charts shown: None follows the height (hidden under 40 rows, where the rows need the room)."""

    def on_resize(self) -> None:
        self.set_class(self.size.height < 40, "-short")
        self._charts_display()

    def _charts_display(self) -> None:
        charts = self.query_one("#cmp-charts")
        wanted = self.charts if self.charts is not None else self.size.height >= 40
        has = any(c.display for c in self.query(BenchChart))
        charts.display = bool(wanted and has)

    def action_toggle_filter(self) -> None:
        self.only_changes = not self.only_changes
        self._fill_rows()

    def action_toggle_charts(self) -> None:
        self.charts = not (self.charts if self.charts is not None else self.size.height >= 40)
        self._charts_display()

    def compose(self) -> ComposeResult:
        yield Static("", id="cmp-head")
        with Horizontal(id="cmp-charts"):
            yield BenchChart(id="chart-decode")
            yield BenchChart(id="chart-prefill")
        with Vertical(id="cmp-tables"):
            yield DataTable(id="cmp-races", cursor_type="none", zebra_stripes=True)
            yield DataTable(id="cmp-rows", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.show(self.result)

    @staticmethod
    def _colour_by_lane(chart: BenchChart, result: Comparison, series: dict[str, list[float | None]]) -> None:
        """Every series in its lane's colour (the same as on every other screen and in the reports): a lane's
        OLD and NEW in one colour, OLD faded (○ on the lines, ▒ bars); the legend names each."""
        sides = cmp.series_sides(result, series)
        chart.lane_order = cmp.lane_order(result)
        chart.lane_of = {k: lane for k, (lane, _) in sides.items()}
        chart.faded_series = {k for k, (_, side) in sides.items() if side == "old"}

    def show(self, result: Comparison) -> None:
        self.result = result
        a, b = cmp.side_names(result)
        lines = []
        for t in result.lead or cmp.lead(result):  # the headline: what changed most, beyond the spread?
            lines.append(("[$warning]" if t.startswith("INTERRUPTED") else "[b]") + escape(t) + "[/]")
        lines.append(escape(cmp.summary_line(result)))
        lines += [f"[b]{escape(a)}[/]: {escape(cmp.side_title(result, 'old'))}",
                  f"[b]{escape(b)}[/]: {escape(cmp.side_title(result, 'new'))}"]
        for h in cmp.headline(result, 3):
            lines.append(("[$error]▼ " if h.endswith("worse") else "[$success]▲ ") + escape(h) + "[/]")
        for label, items in ((a, result.only_old), (b, result.only_new)):
            if items:
                lines.append(f"[dim]only in {escape(label)}: {escape(', '.join(cmp._only_text(items))[:300])}[/]")
        self.query_one("#cmp-head", Static).update("\n".join(lines))

        decode = self.query_one("#chart-decode", BenchChart)
        xs, series = cmp.chart_series(result, "decode", "steady_tok_s", "level")
        what = "steady"
        if not xs:  # recordings from before the steady-state figure
            xs, series = cmp.chart_series(result, "decode", "aggregate_tok_s", "level")
            what = "first send → last end"
        self._colour_by_lane(decode, result, series)
        pts = {name: [(_x(x), v) for x, v in zip(xs, vals) if v is not None] for name, vals in series.items()}
        if any(pts.values()):
            decode.show_lines(f"decode: aggregate tok/s ({what}) vs concurrency, overlaid", "concurrent streams",
                              "tok/s", pts, series_label="")
        else:
            decode.show_empty("decode: aggregate tok/s vs concurrency", "no decode cells in common")
        prefill = self.query_one("#chart-prefill", BenchChart)
        xs, series = cmp.chart_series(result, "prefill", "prefill_tok_s", "length")
        self._colour_by_lane(prefill, result, series)
        if xs:
            prefill.show_bars("prefill ladder, overlaid", "prompt tokens", "tok/s", [length_label(x) for x in xs],
                              {k: list(vals) for k, vals in series.items()})  # None: not in that session
        else:
            prefill.show_empty("prefill ladder, overlaid", "no prefill cells in common")
        prefill.display = bool(xs)
        decode.display = any(pts.values())
        self._charts_display()

        races = self.query_one("#cmp-races", DataTable)
        cols, rows = race_rows(result)
        races.clear(columns=True)
        races.border_title = "races side by side"
        races.display = bool(rows)
        races.add_columns(*cols)
        for r in rows:
            races.add_row(*r)

        self._fill_rows()

    def _fill_rows(self) -> None:
        result = self.result
        a, b = cmp.side_names(result)
        table = self.query_one("#cmp-rows", DataTable)
        table.clear(columns=True)
        heads, order = tui_columns(result)
        benches = list(dict.fromkeys(r.bench for r in result.rows))
        if len(benches) == 1:  # one bench: said in the title, not in a column the screen would cut
            heads, order = heads[:-1], order[:-1]
        pairs = [(row, cells) for row, cells in zip(result.rows, cmp.table_rows(result))
                 if not self.only_changes or beyond(row)]
        what = (f"{len(pairs)} of {len(result.rows)} figures moved beyond the runs' spread (f: all)"
                if self.only_changes else f"every figure ({len(result.rows)}; f: only changes)")
        table.border_title = (f"{benches[0]}: " if len(benches) == 1 else "") + f"{what} · green: {b} better, red: {b} worse"
        table.border_subtitle = "↑↓ rows · ←→ more columns"  # the focused table's own keys (not in the footer)
        table.add_columns(*heads)
        compact = (self.size.width or 160) < 140
        for row, cells in pairs:
            if compact:
                cells = compact_cells(row, cells, (a, b))
            table.add_row(*_styled(row, [cells[i] for i in order]))
