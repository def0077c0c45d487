"""A time-series chart: every lane on the same axes, time on x, zero at the bottom, units on y.

Points are drawn in braille (2 x 4 dots a cell) in the lane's colour (:mod:`lanemon.ui.colours`).
The y axis always starts at zero and ends at a round number above the largest value shown, so two
lanes compare by eye (a lane 30 % slower sits 30 % lower).  Samples that are not lane speed
(errors, cut streams, client-bound, bursts) are not plotted: they are marked on the strip under
the plot, at their time, in the lane's colour.  The chart keeps what it was given in
:attr:`TimeChart.series` / :attr:`TimeChart.marks` (tests read those, not pixels).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

MARK_GLYPHS = {"error": "✖", "truncated": "✂", "empty": "∅", "client_bound": "◌", "burst": "≋"}
MARK_NAMES = {"error": "error", "truncated": "truncated", "empty": "empty", "client_bound": "client-bound",
              "burst": "burst"}
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row from top][column]


def nice_max(value: float) -> float:
    """The smallest of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k that is >= ``value`` (1 for nothing)."""
    if not value or value <= 0 or not math.isfinite(value):
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        top = m * 10 ** exp
        if top >= value * (1 - 1e-9):
            return float(top)
    return float(10 ** (exp + 1))


class TimeChart(Widget):
    """All lanes over one time window; call :meth:`show` to redraw."""

    DEFAULT_CSS = """
    TimeChart {
        height: 1fr;
        min-height: 5;
        width: 1fr;
        background: $surface;
        padding: 0 1;
    }
    """

    def __init__(self, title: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self.series: dict[str, list[tuple[int, float]]] = {}
        self.marks: dict[str, list[tuple[int, str]]] = {}
        self.colours: dict[str, str] = {}
        self.t0 = 0
        self.t1 = 1
        self.y_max = 1.0
        self.note = ""
        self.connect = False
        self.value_fmt: Callable[[float], str] = lambda v: f"{v:g}"
        self.x_fmt: Callable[[int], str] = lambda t: f"{t / 1e9:.0f}s"

    def show(self, *, series: dict[str, list[tuple[int, float]]], marks: dict[str, list[tuple[int, str]]],
             t0: int, t1: int, colours: dict[str, str], value_fmt: Callable[[float], str],
             x_fmt: Callable[[int], str], title: str | None = None, note: str = "", connect: bool = False) -> None:
        """Draw ``series`` ({lane: [(t_ns, value)]}) and ``marks`` ({lane: [(t_ns, flag)]}) over [t0, t1]."""
        self.series = {k: [(t, v) for t, v in pts if t0 <= t <= t1] for k, pts in series.items()}
        self.marks = {k: [(t, f) for t, f in pts if t0 <= t <= t1] for k, pts in marks.items()}
        self.colours = dict(colours)
        self.t0, self.t1 = t0, max(t1, t0 + 1)
        if title is not None:
            self.title = title
        self.note, self.connect = note, connect
        self.value_fmt, self.x_fmt = value_fmt, x_fmt
        top = max((v for pts in self.series.values() for _, v in pts), default=0.0)
        self.y_max = nice_max(top)
        self.refresh()

    # -- drawing ---------------------------------------------------------------

    def _legend(self) -> Text:
        out = Text()
        for name in self.series:
            out.append("  ")
            out.append("━━", style=self.colours.get(name, ""))
            out.append(f" {name}")
        used = {f for pts in self.marks.values() for _, f in pts}
        for flag, glyph in MARK_GLYPHS.items():
            if flag in used:
                out.append(f"  {glyph} {MARK_NAMES[flag]}", style="dim")
        return out

    def render(self) -> Text:
        width = max(10, self.content_region.width or self.size.width)
        height = max(3, self.content_region.height or self.size.height)
        head = Text(self.title, style="bold")
        head.append_text(self._legend())
        if self.note:
            pad = width - head.cell_len - len(self.note) - 1
            head.append(" " * max(1, pad) + self.note, style="dim")
        head.truncate(width, overflow="ellipsis")
        rows = max(1, height - 3)  # title, mark strip, time labels
        ticks = {0: self.value_fmt(self.y_max), rows - 1: "0"}
        if rows >= 4:  # half the top, on the row nearest to it (within half a row)
            ticks[round((rows - 1) / 2)] = self.value_fmt(self.y_max / 2)
        label_w = max(len(t) for t in ticks.values()) + 1
        plot_w = max(2, width - label_w)
        cells = [[0] * plot_w for _ in range(rows)]
        owner: list[list[dict[str, int]]] = [[{} for _ in range(plot_w)] for _ in range(rows)]
        span = self.t1 - self.t0
        xdots, ydots = 2 * plot_w, 4 * rows

        def put(name: str, x: int, y: int) -> None:
            cx, cy = x // 2, rows - 1 - y // 4
            if 0 <= cx < plot_w and 0 <= cy < rows:
                cells[cy][cx] |= _DOTS[3 - y % 4][x % 2]
                owner[cy][cx][name] = owner[cy][cx].get(name, 0) + 1

        for name, pts in self.series.items():
            prev: tuple[int, int] | None = None
            for t, v in sorted(pts):
                x = min(xdots - 1, int((t - self.t0) / span * (xdots - 1) + 0.5))
                y = min(ydots - 1, max(0, int(v / self.y_max * (ydots - 1) + 0.5)))
                if self.connect and prev is not None and x - prev[0] <= 4:
                    steps = max(abs(x - prev[0]), abs(y - prev[1]), 1)
                    for k in range(1, steps):
                        put(name, prev[0] + (x - prev[0]) * k // steps, prev[1] + (y - prev[1]) * k // steps)
                put(name, x, y)
                if not self.connect:
                    put(name, x, min(ydots - 1, y + 1))  # a point two dots tall reads at a glance
                prev = (x, y)
        out = Text()
        out.append_text(head)
        for r in range(rows):
            out.append("\n")
            out.append(f"{ticks.get(r, ''):>{label_w - 1}}", style="dim")
            out.append("┤" if r in ticks else "│", style="dim")
            for c in range(plot_w):
                bits = cells[r][c]
                if not bits:
                    out.append(" ")
                    continue
                who = max(owner[r][c].items(), key=lambda kv: kv[1])[0]
                out.append(chr(0x2800 + bits), style=self.colours.get(who, ""))
        strip = [("─", "dim")] * plot_w
        for name, pts in self.marks.items():
            for t, flag in pts:
                c = min(plot_w - 1, int((t - self.t0) / span * (plot_w - 1) + 0.5))
                strip[c] = (MARK_GLYPHS.get(flag, "•"), self.colours.get(name, ""))
        out.append("\n" + " " * (label_w - 1) + "└", style="dim")
        for glyph, style in strip:
            out.append(glyph, style=style)
        left, mid, right = self.x_fmt(self.t0), self.x_fmt(self.t0 + span // 2), self.x_fmt(self.t1)
        axis = [" "] * plot_w
        places = [(left, 0), (right, plot_w - len(right))]
        mid_at = plot_w // 2 - len(mid) // 2
        if mid_at >= len(left) + 2 and mid_at + len(mid) + 2 <= plot_w - len(right):
            places.append((mid, mid_at))
        if len(left) + len(right) + 1 > plot_w:
            places = [(right, plot_w - len(right))]
        for text, at in places:
            for i, ch in enumerate(text):
                if 0 <= at + i < plot_w:
                    axis[at + i] = ch
        out.append("\n" + " " * label_w + "".join(axis), style="dim")
        if not any(self.series.values()) and not any(self.marks.values()):
            lines = out.split("\n")
            msg = "no samples in this window"
            row = 1 + rows // 2
            if row < len(lines):
                lines[row] = Text(f"{'':{label_w}}{msg:^{plot_w}}", style="dim")
            out = Text("\n").join(lines)
        return out
