"""The SVG chart engine of the HTML reports (and the compare page): :class:`Chart` -> inline ``<svg>``.

A chart is a spec (line or grouped bars, x labels, one series per lane, optional whiskers,
stacked segments, notes and a shaded band); :func:`svg_chart` draws it with colours from the
CSS classes ``s0``..``s5`` (light and dark in the page's stylesheet, templates/report.css).
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
    """series -> colour index, for series that are not lane names."""


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


def svg_chart(chart: Chart, lanes: list[str], width: int = 760, height: int = 330) -> str:
    """One chart as an inline ``<svg>`` (colours from CSS classes ``s0``..``s5``)."""
    left, right, top, bottom = 64, 16, 44, 58
    pw, ph = width - left - right, height - top - bottom
    vals = [v for s in chart.series.values() for v in s if v is not None] + [hi for _, hi in chart.ranges.values()]
    vals += [(v or 0) + (chart.stack[name][i] or 0) for name, s in chart.series.items() if name in chart.stack
             for i, v in enumerate(s) if i < len(chart.stack[name])]
    if not vals:
        return ""
    unit_s = chart.y_title.endswith("(s)")
    ymax, step = nice_max(max(vals) * (1.12 if chart.notes else 1.0))  # headroom for the notes
    if chart.integer and step < 1:
        step, ymax = 1.0, float(math.ceil(max(vals)) + 1)
    n = len(chart.x)
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
             f'aria-label="{esc(chart.title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{esc(chart.title)}</title>"]

    def y(v: float) -> float:
        return top + ph - v / ymax * ph

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
    slot = pw / max(n, 1)

    def xc(i: int) -> float:
        return left + slot * (i + 0.5)

    for i, label in enumerate(chart.x):
        parts.append(f'<text class="tick" x="{xc(i):.1f}" y="{top + ph + 18}" text-anchor="middle">{esc(label)}</text>')
    color = {name: f"s{chart.colors[name] % 6 if name in chart.colors else lanes.index(name) % 6 if name in lanes else 0}"
             for name in chart.series}
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
        for name, series in chart.series.items():
            pts = [(xc(i), y(v)) for i, v in enumerate(series) if v is not None]
            if len(pts) > 1:
                d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
                parts.append(f'<polyline class="line {color[name]}" points="{d}"/>')
            for i, v in enumerate(series):
                if v is None:
                    continue
                parts.append(f'<circle class="dot {color[name]}" cx="{xc(i):.1f}" cy="{y(v):.1f}" r="3.5">'
                             f"<title>{esc(name)} {esc(chart.x[i])}: {fmtv(v)}</title></circle>")
            # label the last point
            last = [(i, v) for i, v in enumerate(series) if v is not None]
            if last:
                i, v = last[-1]
                others = [s[i] for nm, s in chart.series.items() if nm != name and i < len(s) and s[i] is not None]
                above = not others or v >= max(others)
                yy = y(v) - 9 if above else y(v) + 17
                parts.append(f'<text class="vlabel {color[name]}t" x="{xc(i):.1f}" y="{yy:.1f}" '
                             f'text-anchor="middle">{esc(fmtv(v))}</text>')
    else:
        m = max(len(chart.series), 1)
        group = slot * 0.72
        bw = group / m
        for j, (name, series) in enumerate(chart.series.items()):
            for i, v in enumerate(series):
                if v is None:
                    continue
                x0 = xc(i) - group / 2 + j * bw
                gap = 1 if bw >= 6 else 0.3
                solid_word = chart.stack_label[0].split(" (")[0] + " "
                parts.append(f'<rect class="bar {color[name]}" x="{x0 + gap:.1f}" y="{y(v):.1f}" '
                             f'width="{bw - 2 * gap:.1f}" height="{top + ph - y(v):.1f}"><title>{esc(name)} '
                             f'{esc(chart.x[i])}: {esc(solid_word if name in chart.stack else "")}'
                             f"{fmtv(v)}</title></rect>")
                label_y, label_v = y(v), v
                extra = chart.stack.get(name, [])
                if i < len(extra) and extra[i]:
                    hi = v + extra[i]
                    parts.append(f'<rect class="bar light {color[name]}" x="{x0 + gap:.1f}" y="{y(hi):.1f}" '
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
                if bw >= 26:
                    parts.append(f'<text class="vlabel" x="{x0 + bw / 2:.1f}" y="{label_y - 5:.1f}" '
                                 f'text-anchor="middle">{esc(bar_label(label_v, fmtv, unit_s or chart.integer))}'
                                 f"</text>")
                note = chart.notes.get((name, i))
                if note:
                    parts.append(f'<text class="note" x="{x0 + bw / 2:.1f}" y="{label_y - 19:.1f}" '
                                 f'text-anchor="middle">{esc(note)}</text>')
    # legend
    lx = left + 4
    for name in chart.series:
        parts.append(f'<rect class="{color[name]}" x="{lx}" y="14" width="12" height="12" rx="2"/>')
        parts.append(f'<text class="legend" x="{lx + 17}" y="24">{esc(name)}</text>')
        lx += 30 + 8 * len(str(name))
    if chart.stack and any(chart.stack_label):
        lx += 10
        for k, label in enumerate(chart.stack_label):
            parts.append(f'<rect class="{"bar light " if k else ""}swatch" x="{lx}" y="14" width="12" height="12" '
                         f'rx="2"/>')
            parts.append(f'<text class="legend" x="{lx + 17}" y="24">{esc(label)}</text>')
            lx += 30 + 7 * len(label)
    parts.append("</svg>")
    return "".join(parts)
