"""``lanemon compare`` as text: the table, Markdown, HTML and JSON of a :func:`lanemon.reports.compare.compare`
result (pure, no Textual; the Rich table is built on demand).  docs/COMPARE.md describes the output."""

from __future__ import annotations

import io
import math
from typing import Any

import orjson

from lanemon.reports.charts import Chart, lane_colour, svg_chart
from lanemon.reports.format import esc, int_key, length_label, secs, tok
from lanemon.reports.render.html import CSS, html_page
from lanemon.results.common import to_json_obj
from lanemon.results.compare import CompareRow, Comparison, OnlyIn, Side
from lanemon.reports.render.markdown import md_table

FORMATS = ("table", "md", "html", "json")
MIN_TEST_REPS = 3  # measure/stats.py MIN_REPS (compare results carry it as "min_reps")


# ----------------------------------------------------------------- text helpers
def value_text(v: Any, unit: str, metric: str = "") -> str:
    if v is None:
        return "—"
    if metric == "task_passed":
        return "pass" if v else "fail"
    if unit == "tok/s":
        return tok(v)
    if unit == "s":
        return secs(v)
    if unit == "nats":
        return f"{v:.4f}"
    if unit == "tok/J":
        return f"{v:.2f} tok/J"
    if unit == "USD":
        return f"${v:.2f}"
    return f"{v:g}"


def range_text(r: Any, unit: str) -> str:
    return "" if not r else f" ({value_text(r[0], unit)}–{value_text(r[1], unit)})"


def ratio_str(r: CompareRow) -> str:
    return "—" if r.ratio is None else f"{r.ratio:.3f}×"


def change_text(r: CompareRow, names: tuple[str, str] = ("old", "new")) -> str:
    """From NEW's point of view: ``worse, significant`` (tested, adjusted p < 0.05) / ``better, noise`` (tested,
    or inside the noise band) / ``worse, beyond band (untested)`` (too few reps to test) / ``worse, not judged``
    (lanemon was starved) / ``same``."""
    if r.better is None:
        return "same" if r.old == r.new else "—"
    word = "better" if r.better == "new" else "worse"
    if names != ("old", "new"):
        word = f"{names[1]} {word}"
    if r.significant:
        return f"{word}, significant"
    if r.unreliable and r.band is not None:
        return f"{word}, not judged (client-bound)"
    if r.p is None and r.beyond_band:
        return f"{word}, beyond band (untested)"
    return f"{word}, noise"


def simulated_text(result: Comparison) -> str | None:
    """``SIMULATED: ...`` when either side's lanes include lanemon's simulator (None otherwise)."""
    names = sorted({n for side in (result.old, result.new) for n in side.simulated})
    if not names:
        return None
    return (f"SIMULATED: lane{'s' if len(names) > 1 else ''} {', '.join(names)} "
            f"{'are' if len(names) > 1 else 'is'} lanemon's simulator, not a real server: these figures show "
            "the simulator's model, not any hardware.")


def _lane_of(side: Side) -> str | None:
    return side.lane if isinstance(side.lane, str) else None


def side_names(result: Comparison) -> tuple[str, str]:
    if result.mode == "lanes":
        return str(_lane_of(result.old)), str(_lane_of(result.new))
    return "old", "new"


def side_title(result: Comparison, side: str) -> str:
    env = result.old if side == "old" else result.new
    if result.mode == "lanes":
        model = next((x.model for x in env.lanes if x.name == _lane_of(env)), None)
        return f"lane {_lane_of(env)}" + (f" ({model})" if model else "")
    bits = [str(env.recording or "?")]
    if env.created:
        bits.append(str(env.created))
    if env.command:
        bits.append(str(env.command))
    return " · ".join(bits)


def cell_text(r: CompareRow | OnlyIn) -> str:
    if r.cell_kind == "length":
        return f"{length_label(r.cell)} tok"
    if r.cell_kind == "category":
        return f"{r.cell} (C1)"
    return str(r.cell)


def summary_line(result: Comparison) -> str:
    s = result.summary
    a, b = side_names(result)
    who = "new" if (a, b) == ("old", "new") else b
    extra = ""
    if s.untested_beyond_band:
        extra += f" ({s.untested_beyond_band} beyond the noise band but untested: too few reps)"
    if s.unreliable:
        extra += f"; {s.unreliable} not judged (lanemon was starved)"
    return (f"{s.rows} figures compared: {s.significant_better} significantly better in {who}, "
            f"{s.significant_worse} significantly worse, {s.noise} not significant{extra}; "
            f"{s.only_old} cells only in {a}, {s.only_new} only in {b}.")


def headline(result: Comparison, n: int = 5) -> list[str]:
    """The largest significant changes as sentences (worse first)."""
    a, b = side_names(result)
    sig = [r for r in result.rows if r.significant and r.better]
    sig.sort(key=lambda r: (r.better != "old", -abs(math.log(r.ratio)) if r.ratio else 0))
    out = []
    for r in sig[:n]:
        lane = "" if result.mode == "lanes" else f" on {r.lane}"
        word = "better" if r.better == "new" else "worse"
        out.append(f"{r.bench} {cell_text(r)} {r.label}{lane}: {value_text(r.old, r.unit, r.metric)}"
                   f" → {value_text(r.new, r.unit, r.metric)} ({ratio_str(r)}), {b} {word}")
    return out


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f} %"


def _spread_words(r: CompareRow) -> str:
    """Whether a row's change is beyond the runs' own spread, and how sure that is."""
    if r.unreliable:
        return "not judged: lanemon was starved during these cells"
    band = r.band
    band_txt = f"noise band {band * 100:.0f} %" if band is not None else "no noise band"
    if r.significant:
        p = r.p_adjusted if r.p_adjusted is not None else r.p
        return f"significant (p = {p:.3g} adjusted, {r.old_reps} vs {r.new_reps} reps)"
    if r.beyond_band:
        if r.p is None:
            reps = (f"{r.old_reps} vs {r.new_reps} reps" if r.old_reps or r.new_reps
                    else "one figure a side")
            return f"beyond the runs' own spread ({band_txt}) but untested: {reps} (a test needs {MIN_TEST_REPS} reps a side)"
        return f"beyond the runs' own spread ({band_txt}) but not significant"
    return f"within the runs' own spread ({band_txt})"


def lead(result: Comparison) -> list[str]:
    """The headline every compare starts with (text and TUI): what an interrupted side did not run, then the
    figure that changed most (by how much, and whether beyond the runs' own spread), then how many
    figures moved beyond the spread, per lane and direction."""
    a, b = side_names(result)
    out = [f"INTERRUPTED {t}" for t in result.interrupted]
    rows = [r for r in result.rows if r.ratio and r.better and r.metric != "task_passed"]
    if not rows:
        out.append("Nothing changed: no figure differs between the two sides." if result.rows
                   else "Nothing to compare: the two sides share no figure.")
        return out

    def rank(r: CompareRow) -> tuple:
        sure = 3 if r.significant else 2 if r.beyond_band and not r.unreliable else 1 \
            if not r.unreliable else 0
        return (sure, abs(math.log(r.ratio)))

    top = max(rows, key=rank)
    lane = "" if result.mode == "lanes" else f" on {top.lane}"
    who = "new" if (a, b) == ("old", "new") else b
    word = "better" if top.better == "new" else "worse"
    unit = f" {top.unit}" if top.unit in ("tok/s", "nats") else ""
    out.append(f"Biggest change: {top.bench} {top.label} at {cell_text(top)}{lane}: "
               f"{value_text(top.old, top.unit, top.metric)} → "
               f"{value_text(top.new, top.unit, top.metric)}{unit} ({_pct(top.ratio)}), {who} {word}; "
               f"{_spread_words(top)}.")
    moved: dict[str, dict[str, int]] = {}
    for r in rows:
        if (r.significant or r.beyond_band) and not r.unreliable:
            d = moved.setdefault(r.lane, {"better": 0, "worse": 0})
            d["better" if r.better == "new" else "worse"] += 1
    if moved:
        per_lane = "; ".join(f"{lane_}: " + ", ".join(f"{n} {who} {k}" for k, n in d.items() if n)
                             for lane_, d in moved.items())
        total = sum(sum(d.values()) for d in moved.values())
        out.append(f"Beyond the spread: {total} of {len(result.rows)} figures ({per_lane}).")
    else:
        out.append(f"Every other figure is within the runs' own spread ({len(result.rows)} compared).")
    return out


HEADERS = ["bench", "lane", "cell", "metric", "old", "new", "ratio", "change"]


def _headers(result: Comparison) -> list[str]:
    """Table columns; in lanes mode there is no lane column (every row is "A vs B")."""
    a, b = side_names(result)
    if result.mode == "lanes":
        return ["bench", "cell", "metric", a, b, f"{b}/{a}", "change"]
    return ["bench", "lane", "cell", "metric", a, b, "ratio", "change"]


def table_rows(result: Comparison, ranges: bool = True) -> list[list[str]]:
    """The table's rows as text; ``ranges=False`` leaves the reps' ranges out of the old and new cells (a
    narrow terminal keeps the figures and the verdict instead)."""
    names = side_names(result)
    lanes_mode = result.mode == "lanes"

    def rng(r: Any, unit: str) -> str:
        return range_text(r, unit) if ranges else ""
    return [[r.bench] + ([] if lanes_mode else [r.lane]) + [
             cell_text(r), r.label,
             value_text(r.old, r.unit, r.metric) + rng(r.old_range, r.unit),
             value_text(r.new, r.unit, r.metric) + rng(r.new_range, r.unit),
             ratio_str(r), change_text(r, names)] for r in result.rows]


def _only_text(items: list[OnlyIn]) -> list[str]:
    return [f"{x.bench} {x.lane} {cell_text(x)}" for x in items]


NOTE = ("Significant = an exact permutation test on the reps (at least 3 a side) gives p < 0.05 after the "
        "Benjamini-Hochberg correction over every tested row of this comparison; figures with fewer reps are never "
        "called significant, only inside or beyond the noise band (5 % throughput, 10 % TTFT/latency, 10 % KL, "
        "widened to a side's rep spread). Counts must match exactly; the qeval score uses the paired exact "
        "McNemar test. Cells lanemon ran while itself starved (client-bound) are not judged.")


WRAPS = {"metric": 20, "change": 16}
"""Columns of words, which wrap: each counts this wide at most when the table is fitted to a terminal (the
figures' columns never wrap)."""


def fitted_compare_table(result: Comparison, width: int | None):
    """:func:`compare_table` for ``width`` columns: whole when it fits (the metric's words may wrap); else
    without the reps' ranges (said in ``notes``), then columns dropped by rank as :meth:`ResultTable.fit` does."""
    from dataclasses import replace as _replace

    full = compare_table(result)
    if width is None:
        return full

    def fit(model):
        widths = model.col_widths()
        slack = sum(max(0, w - WRAPS[c.label]) for c, w in zip(model.columns, widths) if c.label in WRAPS)
        return model.fit(width + slack)
    t = fit(full)
    if not [h for h in t.hidden if h != "bench"]:
        return t
    t = fit(compare_table(result, ranges=False))
    return _replace(t, notes=t.notes + ["the reps' ranges of old and new are left out at this width "
                                         "(a wider terminal, --format md or --json shows them)"])


def compare_table(result: Comparison, ranges: bool = True):
    """The figures as a :class:`lanemon.reports.tables.ResultTable` (the model the terminal table is fitted
    from): on a narrow terminal the old value goes first, then the change words, then the bench when every row
    is of one bench; the lane, cell, metric, new value and ratio always stay (a number is never shown without
    its label, nor a row without its lane)."""
    from lanemon.reports.tables import BAD, GOOD, Cell, Column, ResultTable

    heads = _headers(result)
    several = len({r.bench for r in result.rows}) > 1
    cols = []
    for i, h in enumerate(heads):
        left = h in ("bench", "lane", "cell", "metric", "change")
        back = len(heads) - i  # old is 4th from the end, change the last
        drop = {4: 3, 1: 2}.get(back, 0)
        if h == "bench" and i == 0:
            drop = 0 if several else 4
        cols.append(Column(h, drop, "left" if left else "right"))
    rows = []
    for r, cells_ in zip(result.rows, table_rows(result, ranges)):
        tag = (GOOD if r.better == "new" else BAD) if r.significant else ("dim" if r.better is not None else None)
        rows.append([Cell(text, tag) for text in cells_])
    return ResultTable("compare", "", cols, rows)


# ----------------------------------------------------------------- renderers
def rich_renderables(result: Comparison, width: int | None = None) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    a, b = side_names(result)
    sim = simulated_text(result)
    out: list[Any] = [Text(sim, style="bold yellow")] if sim else []
    out += [Text(t, style="bold yellow" if t.startswith("INTERRUPTED") else "bold") for t in lead(result)]
    out += [Text(f"{a}: {side_title(result, 'old')}"), Text(f"{b}: {side_title(result, 'new')}"),
            Text(summary_line(result))]
    model = fitted_compare_table(result, width)  # the columns that fit, whole (Rich would cut or wrap figures)
    t = Table(show_lines=False, header_style="bold")
    for c in model.columns:  # every column but the words (metric, change) on one line: no figure split or cut
        t.add_column(c.label, justify=c.align, no_wrap=c.label not in WRAPS)
    styles = {"good": "bold green", "bad": "bold red", "dim": "dim"}
    for row in model.rows:
        tag = next((c.tag for c in row if c.tag), None)
        t.add_row(*[c.text for c in row], style=styles.get(tag or ""))
    out.append(t)
    for note in model.notes + ([model.hidden_note()] if model.hidden else []):
        out.append(Text(note, style="dim"))
    for label, items in ((f"only in {a}", result.only_old), (f"only in {b}", result.only_new)):
        if items:
            out.append(Text(f"{label}: " + ", ".join(_only_text(items))))
    for w in result.warnings:
        out.append(Text(f"warning: {w}", style="yellow"))
    out.append(Text(NOTE, style="dim"))
    return out


def render_table(result: Comparison, width: int = 150) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False, highlight=False)
    for r in rich_renderables(result, width):
        console.print(r)
    return buf.getvalue()


def render_markdown(result: Comparison) -> str:
    a, b = side_names(result)
    title = f"Compare: lane {a} vs lane {b}" if result.mode == "lanes" else "Compare: old vs new session"
    sim = simulated_text(result)
    lines = [f"# {title}", ""] + ([f"> **{sim}**", ""] if sim else [])
    lines += [f"- **{a}**: {side_title(result, 'old')}", f"- **{b}**: {side_title(result, 'new')}", ""]
    lines += [x for t in lead(result) for x in (f"**{t}**", "")]
    lines += [summary_line(result), ""]
    for w in result.warnings:
        lines += [f"> **Warning:** {w}", ""]
    head = headline(result)
    if head:
        lines += ["## Significant changes", ""] + [f"- {s}" for s in head] + [""]
    lines += ["## All figures", ""]
    rows = table_rows(result)
    for r, cells_ in zip(result.rows, rows):
        if r.significant:
            cells_[-1] = f"**{cells_[-1]}**"
    lines += md_table(_headers(result), rows) + [""]
    for label, items in ((f"Only in {a}", result.only_old), (f"Only in {b}", result.only_new)):
        if items:
            lines += [f"## {label}", ""] + [f"- {x}" for x in _only_text(items)] + [""]
    lines += [f"_{NOTE}_", ""]
    return "\n".join(lines)


def chart_series(result: Comparison, bench: str, metric: str, cell_kind: str
                 ) -> tuple[list[str], dict[str, list[float | None]]]:
    """(cells in order, {"LANE old"/"LANE new" or the two lane names: values}) of one metric's rows."""
    rows = [r for r in result.rows if r.bench == bench and r.metric == metric and r.cell_kind == cell_kind]
    xs: list[str] = []
    for r in rows:
        if r.cell not in xs:
            xs.append(r.cell)
    xs.sort(key=lambda c: (int_key(c.lstrip("C")), c))
    a, b = side_names(result)
    series: dict[str, list[float | None]] = {}
    lanes_mode = result.mode == "lanes"
    for r in rows:
        for side, name in (("old", a), ("new", b)):
            key = name if lanes_mode else f"{r.lane} {name}"
            series.setdefault(key, [None] * len(xs))[xs.index(r.cell)] = r.old if side == "old" else r.new
    return xs, series


def lane_order(result: Comparison) -> list[str]:
    """The lanes of a comparison in colour order: the NEW session's lane order, then lanes only in OLD
    (two lanes of one session: that recording's order)."""
    order: list[str] = []
    for side in (result.new, result.old):
        for x in side.lanes:
            name = x.name
            if isinstance(name, str) and name not in order:
                order.append(name)
    return order


def series_sides(result: Comparison, series: dict[str, list[float | None]]) -> dict[str, tuple[str, str]]:
    """Series name (of :func:`chart_series`) -> (lane, side): ``"A old"`` -> ``("A", "old")``; two lanes of
    one session: the series are the lanes themselves (side ``""``)."""
    if result.mode == "lanes":
        return {k: (k, "") for k in series}
    a, b = side_names(result)
    out = {}
    for k in series:
        for side, name in (("old", a), ("new", b)):
            if k.endswith(f" {name}"):
                out[k] = (k[: -len(name) - 1], side)
                break
        else:
            out[k] = (k, "")
    return out


def _colours(result: Comparison, series: dict[str, list[float | None]]) -> dict[str, int]:
    """Each series in its lane's report colour (the lane's place in :func:`lane_order`, the same colour as
    in that lane's reports): two sessions draw a lane's OLD and NEW in one colour (OLD faded, see
    :func:`faded_series`), two lanes of one session each in its own."""
    order = lane_order(result)
    sides = series_sides(result, series)
    return {k: lane_colour(sides[k][0], order) if sides[k][0] in order else i for i, k in enumerate(series)}


def faded_series(result: Comparison, series: dict[str, list[float | None]]) -> set[str]:
    """The OLD side's series of a two-session comparison: drawn as a quieter variant (dashed line, light
    bar) of the lane's colour, so OLD and NEW of one lane read as the same lane."""
    return {k for k, (_, side) in series_sides(result, series).items() if side == "old"}


def _charts(result: Comparison) -> list[Chart]:
    charts = []
    xs, series = chart_series(result, "decode", "steady_tok_s", "level")
    if not xs:  # recordings from before the steady-state figure
        xs, series = chart_series(result, "decode", "aggregate_tok_s", "level")
    if xs:
        charts.append(Chart("line", "Decode: aggregate throughput vs concurrency, overlaid", "concurrent streams",
                                "aggregate tok/s", xs, series, colors=_colours(result, series),
                                faded=faded_series(result, series)))
    for bench, title in (("prefill", "Prefill ladder, overlaid"), ("needles", "Needles: prefill by context")):
        xs, series = chart_series(result, bench, "prefill_tok_s", "length")
        if xs:
            charts.append(Chart("bars", title, "prompt tokens", "prefill tok/s",
                                    [length_label(x) for x in xs], series,
                                    colors=_colours(result, series), faded=faded_series(result, series)))
    xs, series = chart_series(result, "decode", "per_stream_tok_s", "category")
    if xs:
        charts.append(Chart("bars", "Per-stream decode at C1 by category", "category", "tok/s", xs, series,
                                colors=_colours(result, series), faded=faded_series(result, series)))
    return charts


EXTRA_CSS = """
tr.better td { background: rgba(27,158,119,.14); } tr.worse td { background: rgba(217,95,2,.16); }
tr.better td:last-child, tr.worse td:last-child { font-weight: 600; } tr.noise td { color: var(--muted); }
"""


def render_html(result: Comparison) -> str:
    e = esc
    a, b = side_names(result)
    title = f"Compare: lane {a} vs lane {b}" if result.mode == "lanes" else "Compare: old vs new session"
    sim = simulated_text(result)
    body = [f"<h1>{e(title)}</h1>"] + ([f'<p class="warn"><strong>{e(sim)}</strong></p>'] if sim else [])
    body.append(f'<p class="sub">{e(a)}: {e(side_title(result, "old"))}<br>{e(b)}: {e(side_title(result, "new"))}</p>')
    body.append('<section class="verdict lead">' + "".join(
        f'<p class="warn"><strong>{e(t)}</strong></p>' if t.startswith("INTERRUPTED") else f"<p><strong>{e(t)}</strong></p>"
        for t in lead(result)) + "</section>")
    for w in result.warnings:
        body.append(f'<p class="warn"><strong>Warning:</strong> {e(w)}</p>')
    head = headline(result)
    body.append('<section class="verdict"><h2>Summary</h2><p>' + e(summary_line(result)) + "</p>"
                + ("<ul>" + "".join(f"<li>{e(s)}</li>" for s in head) + "</ul>" if head else "") + "</section>")
    for i, chart in enumerate(_charts(result), 1):
        svg = svg_chart(chart, [])
        if svg:
            body.append(f"<figure>{svg}<figcaption>Figure {i}. {e(chart.title)}.</figcaption></figure>")
    body.append("<h2>All figures</h2>")
    heads = _headers(result)

    first_num = heads.index("metric") + 1

    def align(j: int) -> str:
        return "" if first_num <= j < first_num + 3 else ' class="t"'

    t = ["<table><thead><tr>" + "".join(f"<th{align(j)}>{e(h)}</th>" for j, h in enumerate(heads))
         + "</tr></thead><tbody>"]
    for r, cells_ in zip(result.rows, table_rows(result)):
        cls = ("better" if r.better == "new" else "worse") if r.significant else "noise"
        t.append(f'<tr class="{cls}" title="{e(r.basis)}">'
                 + "".join(f"<td{align(j)}>{e(c)}</td>" for j, c in enumerate(cells_)) + "</tr>")
    t.append("</tbody></table>")
    body.append("".join(t))
    for label, items in ((f"Only in {a}", result.only_old), (f"Only in {b}", result.only_new)):
        if items:
            body.append(f"<h2>{e(label)}</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in _only_text(items)) + "</ul>")
    body.append(f'<p class="notes">{e(NOTE)}</p>')
    return html_page(title, body, CSS + EXTRA_CSS)


def render_json(result: Comparison) -> str:
    """The comparison as JSON (docs/JSON.md, "compare"), indented."""
    return orjson.dumps(to_json_obj(result), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def render(result: Comparison, fmt: str) -> str:
    if fmt == "table":
        return render_table(result)
    if fmt == "md":
        return render_markdown(result)
    if fmt == "html":
        return render_html(result)
    if fmt == "json":
        return render_json(result)
    raise ValueError(f"unknown compare format {fmt!r} (choose: {', '.join(FORMATS)})")




__all__ = ["EXTRA_CSS", "FORMATS", "HEADERS", "NOTE", "cell_text", "change_text", "chart_series", "headline", "lead",
           "range_text", "ratio_str", "render", "render_html", "render_json", "render_markdown", "render_table",
           "rich_renderables", "side_names", "side_title", "simulated_text", "summary_line", "table_rows",
           "value_text"]
