"""The SVG chart engine of the HTML reports (and the compare page): :class:`Chart` -> inline ``<svg>``.

A chart is a spec (line or grouped bars, x labels, one series per lane, optional whiskers,
stacked segments, notes and a shaded band); :func:`svg_chart` draws it with colours from the
CSS classes ``s0``..``s7`` (light and dark in the page's stylesheet, templates/report.css): a lane
has the same colour in every chart of a report, picked in one place (:func:`lane_colour`).
Pure, no IO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lanemon.reports.format import esc, kilo, tok


@dataclass
class Chart:
    kind: str  # "line" | "bars"
    title: str
    x_title: str
    y_title: str
    x: list[str]
    series: dict[str, list[float | None]]
    notes: dict[tuple[str, int], str] = field(default_factory=dict)
    """(series, x index) -> small label drawn above that point/bar (e.g. "cache hit 12.5K")."""
    band: tuple[int, int] | None = None
    band_label: str = ""
    ranges: dict[tuple[str, int], tuple[float, float]] = field(default_factory=dict)
    """(series, x index) -> (min, max) over reps, drawn as a whisker."""
    stack: dict[str, list[float | None]] = field(default_factory=dict)
    """bars: series -> a second segment drawn (lighter) on top of that series' bar."""
    stack_label: tuple[str, str] = ("", "")
    """legend words for the (solid, light) segments of stacked bars."""
    integer: bool = False
    """values are counts: whole-number ticks and labels."""
    colors: dict[str, int] = field(default_factory=dict)
    """series -> colour index, for series that are not lane names (:data:`NEUTRAL` for the neutral colour)."""
    note_legend: str = ""
    """what a note is, said once in the legend beside its marker (e.g. "cache hit tok/s (not prefill)")."""
    faded: set[str] = field(default_factory=set)
    """series drawn as a quieter variant of their colour (dashed line, light bar, light swatch): the OLD side
    of a compare, so a lane's OLD and NEW read as the same lane."""
    gaps: bool = False
    """line: a missing value (None) breaks the line instead of being bridged (a point left out on purpose,
    e.g. a decode level run while lanemon was starved)."""


def nice_max(v: float) -> tuple[float, float]:
    """(axis max, tick step) with 4–6 round ticks."""
    if v <= 0:
        return 1.0, 0.2
    raw = v / 5
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if step >= raw:
            break
    top = math.ceil(v * 1.0001 / step) * step
    if top - v < step * 0.15:
        top += step
    return top, step


def tick_text(v: float, step: float) -> str:
    if step >= 1000 and v >= 1000:
        return f"{v / 1000:g}K"
    if step >= 1:
        return f"{v:,.0f}"
    return f"{v:.{max(0, -math.floor(math.log10(step)))}f}".rstrip("0").rstrip(".") if v else "0"


def bar_label(v: float, fmtv, as_is: bool) -> str:
    return fmtv(v) if as_is else kilo(v) if v >= 10000 else tok(v)


LANE_COLOURS = 8
"""Series colours ``s0``..``s7`` in templates/report.css (light and dark); the lane at position i of the
report's lane order is ``s{i % 8}`` in every chart (the screens do the same with their theme)."""
NEUTRAL = -1
"""``Chart.colors`` value for a series that is not a lane (e.g. "A vs B"): drawn in the neutral ``sn``."""

FADED_LINE = ' stroke-dasharray="6 4" opacity=".6"'
"""Presentation attributes of a faded series' line (:attr:`Chart.faded`): dashed and lighter, same colour."""
FADED_DOT = ' opacity=".6"'

# rough advance per character (px) of the page's sans-serif at each label's font size
_CHAR_W = {"tick": 6.3, "legend": 7.4, "vlabel": 6.4, "note": 7.0}


def lane_colour(name: str, lanes: list[str]) -> int:
    """The colour index of lane ``name``: its position in ``lanes`` (the report's lane order)."""
    return lanes.index(name) % LANE_COLOURS if name in lanes else 0


def series_class(chart: Chart, name: str, lanes: list[str]) -> str:
    """CSS class of a series: explicit ``chart.colors`` first (NEUTRAL = ``sn``), else the lane's colour."""
    if name in chart.colors:
        c = chart.colors[name]
        return "sn" if c == NEUTRAL else f"s{c % LANE_COLOURS}"
    return f"s{lane_colour(name, lanes)}"


def _text_w(text: str, kind: str) -> float:
    return len(text) * _CHAR_W[kind]


class _Placed:
    """Label boxes already drawn, so a new label that would overlap one is moved or left out."""

    def __init__(self) -> None:
        self.boxes: list[tuple[float, float, float, float]] = []

    def free(self, cx: float, baseline: float, w: float, h: float = 12.0) -> bool:
        x0, x1, y0, y1 = cx - w / 2 - 1, cx + w / 2 + 1, baseline - h + 2, baseline + 2
        return all(x1 <= a0 or x0 >= a1 or y1 <= b0 or y0 >= b1 for a0, a1, b0, b1 in self.boxes)

    def take(self, cx: float, baseline: float, w: float, h: float = 12.0) -> None:
        self.boxes.append((cx - w / 2 - 1, cx + w / 2 + 1, baseline - h + 2, baseline + 2))


def _legend(chart: Chart, cls: dict[str, str], width: int, left: int, right: int) -> tuple[list[str], int]:
    """The legend above the plot (never over it), wrapped into rows; returns (svg parts, rows)."""
    items = [(f"{cls[name]}", str(name), "swatch") for name in chart.series]
    if chart.stack and any(chart.stack_label):
        items += [("bar light swatch" if k else "swatch", label, "swatch") for k, label in enumerate(chart.stack_label)]
    if chart.notes and chart.note_legend:
        items.append(("marker", chart.note_legend, "marker"))
    parts, row, lx = [], 0, left + 4
    for css, label, kind in items:
        w = 17 + _text_w(label, "legend") + 18
        if lx > left + 4 and lx + w > width - right:
            row, lx = row + 1, left + 4
        ty = 24 + row * 20
        if kind == "marker":
            parts.append(_diamond(lx + 6, ty - 5, 5.5, "marker"))
        elif label in chart.faded and chart.kind == "line":
            parts.append(f'<line class="line {css}"{FADED_LINE} x1="{lx:.0f}" y1="{ty - 4}" x2="{lx + 12:.0f}" '
                         f'y2="{ty - 4}"/>')
        else:
            light = " light bar" if label in chart.faded else ""
            parts.append(f'<rect class="{css}{light}" x="{lx:.0f}" y="{ty - 10}" width="12" height="12" rx="2"/>')
        parts.append(f'<text class="legend" x="{lx + 17:.0f}" y="{ty}">{esc(label)}</text>')
        lx += w
    return parts, row + 1


def _diamond(cx: float, cy: float, r: float, css: str, title: str = "") -> str:
    t = f"<title>{esc(title)}</title>" if title else ""
    return (f'<path class="{css}" d="M{cx:.1f} {cy - r:.1f}L{cx + r:.1f} {cy:.1f}L{cx:.1f} {cy + r:.1f}'
            f'L{cx - r:.1f} {cy:.1f}Z">{t}</path>')


def svg_chart(chart: Chart, lanes: list[str], width: int = 760, height: int = 330) -> str:
    """One chart as an inline ``<svg>``: legend above the plot, zero-based y axis with units, lanes in
    their colour (:func:`lane_colour`), grouped bars side by side with their x label centred under the
    group, labels that would overlap left out (every value is in the hover title and the table)."""
    vals = [v for s in chart.series.values() for v in s if v is not None] + [hi for _, hi in chart.ranges.values()]
    vals += [(v or 0) + (chart.stack[name][i] or 0) for name, s in chart.series.items() if name in chart.stack
             for i, v in enumerate(s) if i < len(chart.stack[name])]
    if not vals:
        return ""
    cls = {name: series_class(chart, name, lanes) for name in chart.series}
    left, right = 64, 16
    legend, rows = _legend(chart, cls, width, left, right)
    top = 24 + rows * 20
    ph = height - 44 - 58  # the plot keeps its height; the legend and rotated labels add to the chart's
    pw = width - left - right
    n = len(chart.x)
    slot = pw / max(n, 1)
    widths = [_text_w(x, "tick") for x in chart.x]
    widest = max(widths, default=0)
    rotate = widest > slot * 1.6 or any((a + b) / 2 > slot - 6 for a, b in zip(widths, widths[1:]))
    every = max(1, math.ceil(15 / slot)) if rotate else 1  # rotated labels need ~15 px each
    bottom = 58 + (int(min(widest, 140) * 0.57) - 8 if rotate else 0)
    height = top + ph + bottom
    unit_s = chart.y_title.endswith("(s)")
    # headroom: above the tallest bar sit its value label, and for a note a marker and the note's text
    ymax, step = nice_max(max(vals) * (ph / (ph - 44) if chart.notes else 1.0))
    if chart.integer and step < 1:
        step, ymax = 1.0, float(math.ceil(max(vals)) + 1)
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
             f'aria-label="{esc(chart.title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{esc(chart.title)}</title>"]
    placed = _Placed()

    def y(v: float) -> float:
        return top + ph - v / ymax * ph

    def xc(i: int) -> float:
        return left + slot * (i + 0.5)

    # grid + y ticks
    k = 0
    while k * step <= ymax + 1e-9:
        v = k * step
        yy = y(v)
        parts.append(f'<line class="grid" x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end">{esc(tick_text(v, step))}</text>')
        k += 1
    parts.append(f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"/>')
    parts.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}"/>')
    # axis titles
    parts.append(f'<text class="atitle" x="{left + pw / 2:.1f}" y="{height - 12}" text-anchor="middle">'
                 f'{esc(chart.x_title)}</text>')
    parts.append(f'<text class="atitle" transform="translate(16 {top + ph / 2:.1f}) rotate(-90)" '
                 f'text-anchor="middle">{esc(chart.y_title)}</text>')
    for i, label in enumerate(chart.x):
        if rotate:
            if i % every == 0:
                parts.append(f'<text class="tick" text-anchor="end" transform="translate({xc(i) + 4:.1f} '
                             f'{top + ph + 14}) rotate(-35)">{esc(label)}</text>')
        else:
            parts.append(f'<text class="tick" x="{xc(i):.1f}" y="{top + ph + 18}" text-anchor="middle">'
                         f'{esc(label)}</text>')
    fmtv = (lambda v: f"{v:.0f}") if chart.integer else (lambda v: f"{v:.2f}") if unit_s else (lambda v: tok(v))

    if chart.kind == "line":
        if chart.band is not None:
            a, b = chart.band
            x0, x1 = xc(a), xc(b)
            parts.append(f'<rect class="band" x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" height="{ph}"/>')
            parts.append(f'<line class="bandline" x1="{(x0 + x1) / 2:.1f}" y1="{top}" x2="{(x0 + x1) / 2:.1f}" '
                         f'y2="{top + ph}"/>')
            parts.append(f'<text class="bandlabel" x="{(x0 + x1) / 2:.1f}" y="{top + 14}" text-anchor="middle">'
                         f'{esc(chart.band_label)}</text>')
            placed.take((x0 + x1) / 2, top + 14, _text_w(chart.band_label, "tick"))
        for name, series in chart.series.items():
            runs: list[list[tuple[float, float]]] = [[]]
            for i, v in enumerate(series):
                if v is not None:
                    runs[-1].append((xc(i), y(v)))
                elif chart.gaps and runs[-1]:
                    runs.append([])
            fade = FADED_LINE if name in chart.faded else ""
            for pts in runs:
                if len(pts) > 1:
                    d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
                    parts.append(f'<polyline class="line {cls[name]}"{fade} points="{d}"/>')
            for i, v in enumerate(series):
                if v is None:
                    continue
                parts.append(f'<circle class="dot {cls[name]}"{FADED_DOT if fade else ""} cx="{xc(i):.1f}" '
                             f'cy="{y(v):.1f}" r="3.5">'
                             f"<title>{esc(name)} {esc(chart.x[i])}: {fmtv(v)}</title></circle>")
        # label each series' last point: above when it is the top one there, else below; never two on one spot
        for name, series in chart.series.items():
            last = [(i, v) for i, v in enumerate(series) if v is not None]
            if not last:
                continue
            i, v = last[-1]
            others = [s[i] for nm, s in chart.series.items() if nm != name and i < len(s) and s[i] is not None]
            above = not others or v >= max(others)
            text = fmtv(v)
            w = _text_w(text, "vlabel")
            for yy in ((y(v) - 9, y(v) + 17) if above else (y(v) + 17, y(v) - 9)):
                if placed.free(xc(i), yy, w):
                    placed.take(xc(i), yy, w)
                    parts.append(f'<text class="vlabel {cls[name]}t" x="{xc(i):.1f}" y="{yy:.1f}" '
                                 f'text-anchor="middle">{esc(text)}</text>')
                    break
    else:
        m = max(len(chart.series), 1)
        group = slot * 0.72
        bw = group / m
        gap = 1 if bw >= 6 else 0.3
        solid_word = chart.stack_label[0].split(" (")[0] + " "
        tops: list[tuple[str, int, float, float, float]] = []  # (series, x index, bar centre, label y, value)
        for j, (name, series) in enumerate(chart.series.items()):
            for i, v in enumerate(series):
                if v is None:
                    continue
                x0 = xc(i) - group / 2 + j * bw
                light = " light" if name in chart.faded else ""
                parts.append(f'<rect class="bar{light} {cls[name]}" x="{x0 + gap:.1f}" y="{y(v):.1f}" '
                             f'width="{bw - 2 * gap:.1f}" height="{top + ph - y(v):.1f}"><title>{esc(name)} '
                             f'{esc(chart.x[i])}: {esc(solid_word if name in chart.stack else "")}'
                             f"{fmtv(v)}</title></rect>")
                label_y, label_v = y(v), v
                extra = chart.stack.get(name, [])
                if i < len(extra) and extra[i]:
                    hi = v + extra[i]
                    parts.append(f'<rect class="bar light {cls[name]}" x="{x0 + gap:.1f}" y="{y(hi):.1f}" '
                                 f'width="{bw - 2 * gap:.1f}" height="{y(v) - y(hi):.1f}"><title>{esc(name)} '
                                 f'{esc(chart.x[i])}: {esc(chart.stack_label[1].split(" (")[0])} {fmtv(extra[i])} '
                                 f"(total {fmtv(hi)})</title></rect>")
                    label_y, label_v = y(hi), hi
                rng = chart.ranges.get((name, i))
                if rng:
                    cx = x0 + bw / 2
                    parts.append(f'<path class="whisker" d="M{cx:.1f} {y(rng[0]):.1f}V{y(rng[1]):.1f}'
                                 f'M{cx - 5:.1f} {y(rng[0]):.1f}h10M{cx - 5:.1f} {y(rng[1]):.1f}h10">'
                                 f"<title>{esc(name)} {esc(chart.x[i])}: reps {fmtv(rng[0])}–{fmtv(rng[1])}</title></path>")
                    label_y = min(label_y, y(rng[1]))
                tops.append((name, i, x0 + bw / 2, label_y, label_v))
                placed.boxes.append((x0 + gap, x0 + bw - gap, label_y, top + ph))  # labels never cover a bar
        # value labels first (each over its own bar, only where it fits), then the notes above them
        above: dict[tuple[str, int], float] = {}
        for name, i, cx, label_y, label_v in tops:
            text = bar_label(label_v, fmtv, unit_s or chart.integer)
            w = _text_w(text, "vlabel")
            yy = label_y - 5
            above[(name, i)] = yy - 9
            if w <= bw + 6 and placed.free(cx, yy, w):
                placed.take(cx, yy, w)
                above[(name, i)] = yy - 14
                parts.append(f'<text class="vlabel" x="{cx:.1f}" y="{yy:.1f}" text-anchor="middle">{esc(text)}</text>')
        for name, i, cx, _, _ in tops:
            note = chart.notes.get((name, i))
            if not note:
                continue
            my = above[(name, i)]
            parts.append(_diamond(cx, my, 4.5, "marker", f"{name} {chart.x[i]}: {note} {chart.note_legend}".strip()))
            placed.take(cx, my + 5, 10, 10)
            w = _text_w(note, "note")
            for yy in (my - 8, my - 21, my - 34):
                if yy - 10 < top - 6:
                    break
                if placed.free(cx, yy, w):
                    placed.take(cx, yy, w)
                    parts.append(f'<text class="note" x="{cx:.1f}" y="{yy:.1f}" text-anchor="middle">{esc(note)}</text>')
                    break
    parts += legend
    parts.append("</svg>")
    return "".join(parts)
