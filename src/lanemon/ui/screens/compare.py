"""The compare screen: summary, decode curves and prefill ladders overlaid, races side by side, every row."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from lanemon.ui.widgets.footer import Footer
from lanemon.reports import compare as cmp
from lanemon.reports.format import length_label
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.bench_chart import BenchChart


def _x(cell: str) -> float:
    try:
        return float(cell.lstrip("C"))
    except ValueError:
        return float("inf")


def race_rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """One row per (race prompt, lane): TTFT, decode tok/s and total, OLD → NEW."""
    a, b = cmp.side_names(result)
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in result["rows"]:
        if r["bench"] == "race":
            by.setdefault((r["cell"], r["lane"]), {})[r["metric"]] = r
    cols = ["race", "lane", f"TTFT {a} → {b}", f"decode {a} → {b}", f"total {a} → {b}", "total change"]
    rows = []
    for (cell, lane), ms in by.items():
        def pair(metric: str) -> str:
            x = ms.get(metric)
            if x is None:
                return "—"
            return f"{cmp.value_text(x['old'], x['unit'])} → {cmp.value_text(x['new'], x['unit'])}"
        total = ms.get("total_s")
        rows.append([cell, lane, pair("ttft_s"), pair("decode_tok_s"), pair("total_s"),
                     cmp.change_text(total, (a, b)) if total else "—"])
    return cols, rows


def _styled(row: dict[str, Any], cells: list[str]) -> list[Text]:
    style = ""
    if row["significant"]:
        style = "bold green" if row["better"] == "new" else "bold red"
    elif row["better"] is not None:
        style = "dim"
    return [Text(c, style=style, justify="left") for c in cells]


class CompareScreen(LanemonScreen):
    """Filled once from a compare result (:func:`lanemon.reports.compare.compare` / ``compare_lanes``)."""

    NAME = "compare"

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

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__()
        self.result = result

    def on_resize(self) -> None:
        self.set_class(self.size.height < 40, "-short")

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
    def _colour_by_lane(chart: BenchChart, result: dict[str, Any], series: dict[str, Any]) -> None:
        """Every series in its lane's colour (the same as on every other screen and in the reports): a lane's
        OLD and NEW in one colour, OLD faded (○ on the lines, ▒ bars); the legend names each."""
        sides = cmp.series_sides(result, series)
        chart.lane_order = cmp.lane_order(result)
        chart.lane_of = {k: lane for k, (lane, _) in sides.items()}
        chart.faded_series = {k for k, (_, side) in sides.items() if side == "old"}

    def show(self, result: dict[str, Any]) -> None:
        self.result = result
        a, b = cmp.side_names(result)
        s = result["summary"]
        lines = [f"[b]{escape(a)}[/]: {escape(cmp.side_title(result, 'old'))}",
                 f"[b]{escape(b)}[/]: {escape(cmp.side_title(result, 'new'))}",
                 f"[b]{escape(cmp.summary_line(result))}[/]"]
        for h in cmp.headline(result, 3):
            lines.append(("[$error]▼ " if h.endswith("worse") else "[$success]▲ ") + escape(h) + "[/]")
        for label, items in ((a, result["only_old"]), (b, result["only_new"])):
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
        self.query_one("#cmp-charts").display = decode.display or prefill.display

        races = self.query_one("#cmp-races", DataTable)
        cols, rows = race_rows(result)
        races.clear(columns=True)
        races.border_title = "races side by side"
        races.display = bool(rows)
        races.add_columns(*cols)
        for r in rows:
            races.add_row(*r)

        table = self.query_one("#cmp-rows", DataTable)
        table.clear(columns=True)
        table.border_title = (f"every figure ({s['rows']}): significant changes highlighted "
                              f"(green: {b} better, red: {b} worse)")
        table.add_columns(*cmp._headers(result))
        for row, cells in zip(result["rows"], cmp.table_rows(result)):
            table.add_row(*_styled(row, cells))
