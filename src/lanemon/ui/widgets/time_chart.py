"""A time-series chart: every lane on the same axes, time on x, zero at the bottom, units on y.

Points are drawn in braille (2 x 4 dots a cell) in the lane's colour (:mod:`lanemon.ui.colours`).
The y axis always starts at zero and ends at a round number above the largest value shown (or at a
fixed top, such as 100 % for a share), so two lanes compare by eye (a lane 30 % slower sits 30 %
lower).  Samples that are not lane speed (errors, cut streams, client-bound, bursts) are not
plotted: they are marked on the strip under the plot, at their time, in the lane's colour.

A character cell holds one colour, so a cell where the points of two or more lanes fall is drawn in
the *shared* colour (the theme's foreground: white on a dark theme) and the legend names the lanes that
share: ``⣿ A+B``, or with three or more lanes every combination present, those sharing the most cells
first (``⣿ A+B, B+C, A+B+C``), as many as fit the title row, then ``…``; a lane drawn under another
never vanishes into it.  Two lanes' marks in one strip cell are shown the same way.

A lane may have several series (the server queue: running and waiting): ``lane_of`` maps each
series to its lane (its colour, and who shares a cell), ``dashed`` series are drawn in a broken line
in a faded variant of the lane's colour, and ``kinds`` names the line styles in the legend
(``━ running  ┄ waiting``) after the lanes.  One lane's series in one cell are that lane's cell
(drawn solid), not a shared one.

The x axis is session time; given a :class:`WallAxis` it is labelled in local wall-clock time at
round instants (every 5 s ... 30 min, the finest step whose labels fit the width), ``HH:MM:SS`` or
``HH:MM`` when the step is whole minutes, with a ``┬`` on the strip at each labelled instant.

The chart keeps what it was given in :attr:`TimeChart.series` / :attr:`TimeChart.marks`, and what it
drew last in :attr:`TimeChart.shared` (shared cells) and :attr:`TimeChart.x_labels` (tests read
those, not pixels); :meth:`TimeChart.cells` answers the plot for any size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from rich.control import strip_control_codes
from rich.text import Span, Text
from textual.widget import Widget

from lanemon.ui.widgets.repaint import CachedLines

MARK_GLYPHS = {"error": "✖", "truncated": "✂", "empty": "∅", "client_bound": "◌", "burst": "≋", "slo": "▴"}
MARK_NAMES = {"error": "error", "truncated": "truncated", "empty": "empty", "client_bound": "client-bound",
              "burst": "burst", "slo": "missed SLO"}
SHARED_GLYPH = "⣿"
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row from top][column]
NS = 1_000_000_000
X_STEPS_S = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
"""Wall-clock tick steps (seconds), finest first: the finest whose labels fit is used."""
Y_LABEL_ALLOWANCE = 12
"""Columns set aside for the y labels when the x step is chosen (``1,500 tok/s┤`` is 12)."""


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


def _append_runs(out: Text, cells: Sequence[tuple[str, str]]) -> None:
    """Append (text, style) pieces to ``out``, one span per run of pieces of the same style: the same text as
    an append per piece, with a span per run instead of per cell (a chart row is 100+ cells; a repaint splits
    and renders its spans), appended at once (``Text.append_tokens``)."""
    runs: list[tuple[str, str | None]] = []
    run: list[str] = []
    run_style = ""
    for text, style in cells:
        if style != run_style and run:
            runs.append(("".join(run), run_style or None))
            run = []
        run_style = style
        run.append(text)
    if run:
        runs.append(("".join(run), run_style or None))
    out.append_tokens(run for run in runs if run[0])  # (as append: an empty piece adds no span)


@dataclass(frozen=True)
class WallAxis:
    """Session time (ns) -> wall-clock time: ``t0_s`` is the epoch second of session time 0.

    ``tz`` None is the machine's local zone (what a user reads off the clock on the wall); tests pass
    an explicit zone.
    """

    t0_s: float
    tz: tzinfo | None = None

    def at(self, t_ns: int) -> datetime:
        when = datetime.fromtimestamp(self.t0_s + t_ns / NS, tz=self.tz)
        return when if self.tz is not None else when.astimezone()

    def label(self, t_ns: int, step_s: int) -> str:
        """``HH:MM:SS``, or ``HH:MM`` when ticks are whole minutes apart."""
        return self.at(t_ns).strftime("%H:%M" if step_s % 60 == 0 else "%H:%M:%S")

    def ticks(self, t0: int, t1: int, step_s: int) -> list[int]:
        """Session times in [t0, t1] that fall on a round ``step_s`` of local wall-clock time."""
        offset = self.at(t0).utcoffset()
        local0 = int(round(self.t0_s * NS)) + int(offset.total_seconds() * NS if offset else 0)
        step = step_s * NS
        first = -(-(local0 + t0) // step) * step - local0
        return list(range(first, t1 + 1, step))


class TimeChart(CachedLines, Widget):
    """All lanes over one time window; call :meth:`show` to redraw (a repaint follows only when what it
    shows changed, through the Line API: :class:`~lanemon.ui.widgets.repaint.CachedLines`)."""

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
        self.titles: tuple[str, ...] = (title,)
        """The title's forms, fullest first: the chart draws the fullest one beside which every lane's name fits
        (80x24 read ``decode per stream +A B``: the lanes only as names, not in their colours)."""
        self._lanes_cut = False
        self.series: dict[str, list[tuple[int, float]]] = {}
        self.marks: dict[str, list[tuple[int, str]]] = {}
        self.colours: dict[str, str] = {}
        self.t0 = 0
        self.t1 = 1
        self.y_max = 1.0
        self.note = ""
        self.connect = False
        self.connect_ns: int | None = None
        self.value_fmt: Callable[[float], str] = lambda v: f"{v:g}"
        self.x_fmt: Callable[[int], str] = lambda t: f"{t / 1e9:.0f}s"
        self.wall: WallAxis | None = None
        self.y_divisions = 2
        self.shared_colour = ""
        self.shared: dict[tuple[int, int], frozenset[str]] = {}
        """(plot row from the top, column) -> the lanes whose points share that cell, as last drawn."""
        self.lane_of: dict[str, str] = {}
        """Series -> its lane, where a lane has several series (else each series is a lane)."""
        self.dashed: frozenset[str] = frozenset()
        """Series drawn in a broken line, in a faded variant of their lane's colour."""
        self.kinds: tuple[tuple[str, str], ...] = ()
        """(glyph, name) of each line style, named in the legend after the lanes."""
        self.x_labels: list[tuple[int, str]] = []
        """(start column in the plot, label) of the x axis as last drawn."""
        self._strip_shared: list[set[str]] = []
        self._ticked = False

    def show(self, *, series: dict[str, list[tuple[int, float]]], marks: dict[str, list[tuple[int, str]]],
             t0: int, t1: int, colours: dict[str, str], value_fmt: Callable[[float], str],
             x_fmt: Callable[[int], str], title: str | tuple[str, ...] | None = None, note: str = "",
             connect: bool = False,
             wall: WallAxis | None = None, y_max: float | None = None, y_divisions: int = 2,
             shared_colour: str = "", connect_ns: int | None = None, lane_of: dict[str, str] | None = None,
             dashed: Collection[str] = (), kinds: Sequence[tuple[str, str]] = (),
             window_ns: int | None = None, settle: bool = False) -> None:
        """Draw ``series`` ({lane: [(t_ns, value)]}) and ``marks`` ({lane: [(t_ns, flag)]}) over [t0, t1].

        ``wall`` labels x in wall-clock time (else ``x_fmt`` of session time at both ends and the middle);
        ``y_max`` fixes the top of the y axis (else the next round number above the data);
        ``y_divisions`` ticks y at that many equal steps when there are rows for them (else halves);
        ``shared_colour`` draws cells that several lanes share (else the theme's foreground);
        ``connect`` joins successive points by a line when they are at most 4 dots apart, or at most
        ``connect_ns`` apart in time when that is given (a gauge scraped every few seconds);
        ``lane_of`` maps series to lanes where a lane has several (``colours`` then by lane), ``dashed``
        series are drawn broken and faded, ``kinds`` names the line styles in the legend.

        ``window_ns``: the time the chart's full width stands for (a scrolling chart).  The chart then
        repaints when its data changed or a whole column's worth of that time went by (``t1`` moving at
        every event moves no column), not at every call.

        ``settle`` (with ``window_ns``; a live session): the window ends at the last whole column, and what
        came after it (a probe, a /metrics scrape, a GPU reading) is drawn when that column is complete, with
        the axis's next step -- so the chart repaints once per column-period at most, not at every new
        point (docs/UI.md "Drawing cheaply").
        """
        column = self.column_ns(window_ns) if window_ns else 0
        if column:
            if settle and t1 // column * column > t0:
                end = t1 // column * column
                t0, t1 = max(0, t0 - (t1 - end)), end
        self.series = {k: [(t, v) for t, v in pts if t0 <= t <= t1] for k, pts in series.items()}
        self.marks = {k: [(t, f) for t, f in pts if t0 <= t <= t1] for k, pts in marks.items()}
        self.colours = dict(colours)
        self.t0, self.t1 = t0, max(t1, t0 + 1)
        if title is not None:
            self.titles = (title,) if isinstance(title, str) else tuple(title)
            self.title = self.titles[0]
        self.note, self.connect, self.connect_ns = note, connect, connect_ns
        self.value_fmt, self.x_fmt, self.wall = value_fmt, x_fmt, wall
        self.y_divisions, self.shared_colour = max(1, y_divisions), shared_colour
        self.lane_of, self.dashed, self.kinds = dict(lane_of or {}), frozenset(dashed), tuple(kinds)
        top = max((v for pts in self.series.values() for _, v in pts), default=0.0)
        self.y_max = y_max if y_max is not None else nice_max(top)
        if column:  # the axis as drawn moves by whole columns: (t0, t1) in columns of the window
            axis: tuple = (self.t0 // column, self.t1 // column)
        else:
            axis = (self.t0, self.t1)
        self.repaint_if((self.series, self.marks, self.colours, axis, self.titles, note, connect,
                         connect_ns, value_fmt, x_fmt, wall, self.y_max, self.y_divisions, shared_colour,
                         self.lane_of, self.dashed, self.kinds))

    def column_ns(self, window_ns: int) -> int:
        """The time one column of the plot stands for when the chart's width shows ``window_ns``."""
        return max(1, window_ns // max(1, (self.content_size.width or 100) - Y_LABEL_ALLOWANCE))

    def cells(self, rows: int, cols: int) -> dict[tuple[int, int], tuple[int, dict[str, int]]]:
        """The plot on a ``rows`` x ``cols`` grid of cells: (row from the top, column) -> (braille dot
        bits, {lane: dots of that lane in the cell}); empty cells left out."""
        return {divmod(k, cols): (cell[0], cell[1]) for k, cell in self._grid(rows, cols).items()}

    def _grid(self, rows: int, cols: int) -> dict[int, list]:
        """:meth:`cells` keyed ``row * cols + column``, each cell ``[bits, owners]``."""
        grid: dict[int, list] = {}  # [bits, owners] while it fills: a list, updated in place
        get = grid.get
        span = self.t1 - self.t0
        xdots, ydots = 2 * cols, 4 * rows
        connect, connect_ns, t_0, y_max = self.connect, self.connect_ns, self.t0, self.y_max
        bit = tuple(_DOTS[3 - i // 2][i % 2] for i in range(8))  # [y % 4 * 2 + x % 2]
        top = rows - 1

        for name, pts in self.series.items():
            dots: list[tuple[int, int]] = []  # every dot of the series, in order (a cell counts each one)
            add = dots.append
            prev: tuple[int, int] | None = None
            prev_t = 0
            broken = name in self.dashed and connect  # a broken line: every other cell column left out
            for t, v in sorted(pts):
                x = min(xdots - 1, int((t - t_0) / span * (xdots - 1) + 0.5))
                y = min(ydots - 1, max(0, int(v / y_max * (ydots - 1) + 0.5)))
                if prev is None:
                    near = False
                else:
                    near = x - prev[0] <= 4 if connect_ns is None else t - prev_t <= connect_ns
                if connect and near:
                    px, py = prev
                    steps = max(abs(x - px), abs(y - py), 1)
                    for k in range(1, steps):
                        dx = px + (x - px) * k // steps
                        if not broken or (dx // 2) % 2 == 0:
                            add((dx, py + (y - py) * k // steps))
                if not broken or (x // 2) % 2 == 0:
                    add((x, y))
                if not connect:
                    add((x, min(ydots - 1, y + 1)))  # a point two dots tall reads at a glance
                prev, prev_t = (x, y), t
            # the series' cells first (bits and dots per cell, keyed row * cols + column), then into the grid: a
            # dot costs two lookups of an int, not a tuple built and a cell's list and owners updated
            bits: dict[int, int] = {}
            count: dict[int, int] = {}
            bits_get, count_get = bits.get, count.get
            for x, y in dots:
                if x >= 0:  # (a point before t0: only where a caller passed one; x <= xdots - 1, 0 <= y < ydots)
                    k = (top - (y >> 2)) * cols + (x >> 1)
                    bits[k] = bits_get(k, 0) | bit[(y & 3) << 1 | (x & 1)]
                    count[k] = count_get(k, 0) + 1
            for k, b in bits.items():
                cell = get(k)
                if cell is None:
                    grid[k] = [b, {name: count[k]}]
                else:
                    cell[0] |= b
                    owners = cell[1]
                    owners[name] = owners.get(name, 0) + count[k]
        return grid

    def _shared_style(self) -> str:
        if self.shared_colour:
            return f"bold {self.shared_colour}"
        try:
            fg = self.app.theme_variables.get("foreground", "")
        except Exception:  # not mounted in an app (a bare render)
            fg = ""
        return f"bold {fg}" if fg else "bold"

    def lane(self, series: str) -> str:
        """The lane a series belongs to."""
        return self.lane_of.get(series, series)

    def lanes(self) -> list[str]:
        """The lanes drawn (those with points or marks in the window), in the order of their series."""
        marked = {self.lane(n) for n, pts in self.marks.items() if pts}
        return list(dict.fromkeys(self.lane(n) for n, pts in self.series.items()
                                  if pts or self.lane(n) in marked))

    def _colour(self, series: str) -> str:
        colour = self.colours.get(series) or self.colours.get(self.lane(series), "")
        if series in self.dashed and colour:
            try:
                from lanemon.ui.widgets.bench_chart import faded

                return faded(self.app, colour, 0.4)
            except Exception:  # not mounted in an app (a bare render)
                return colour
        return colour

    def shared_sets(self) -> list[frozenset[str]]:
        """The combinations of lanes that share cells (plot and strip), those sharing the most cells first."""
        counts: dict[frozenset[str], int] = {}
        for lanes in [*self.shared.values(), *(frozenset(s) for s in self._strip_shared)]:
            counts[lanes] = counts.get(lanes, 0) + 1
        order = {n: i for i, n in enumerate(self.lanes())}
        key = lambda lanes: sorted(order.get(n, len(order)) for n in lanes)  # noqa: E731
        return sorted(counts, key=lambda lanes: (-counts[lanes], len(lanes), key(lanes)))

    def shared_name(self, room: int = 1_000) -> str:
        """``A+B`` / ``A+B, B+C, …``: the lanes that share cells, most shared first, in ``room`` columns
        (the first combination always; ``…`` when some were left out)."""
        order = {n: i for i, n in enumerate(self.lanes())}
        names = ["+".join(sorted(lanes, key=lambda n: (order.get(n, len(order)), n))) for lanes in self.shared_sets()]
        out = names[:1]
        for i, name in enumerate(names[1:], start=1):
            more = len(", ".join(out + [name])) + (len(", …") if i < len(names) - 1 else 0)
            if more > room:
                break
            out.append(name)
        return ", ".join(out) + (", …" if len(out) < len(names) else "")

    def _wall_labels(self, plot_w: int, step_s: int) -> list[tuple[int, str]] | None:
        """Labels centred on the round instants ``step_s`` apart (those cut by an edge left out), or
        None when two of them would touch."""
        assert self.wall is not None
        span = self.t1 - self.t0
        out: list[tuple[int, str]] = []
        end = -1
        for t in self.wall.ticks(self.t0, self.t1, step_s):
            text = self.wall.label(t, step_s)
            at = int((t - self.t0) / span * (plot_w - 1) + 0.5) - len(text) // 2
            if at < 0 or at + len(text) > plot_w:
                continue
            if at <= end + 1:
                return None
            out.append((at, text))
            end = at + len(text)
        return out

    def _x_axis(self, plot_w: int, width: int) -> list[tuple[int, str]]:
        """(start column, text) of each x label; the tick column of a wall-clock label is its middle.

        The step is chosen from the chart's whole width less a fixed allowance for the y labels (not
        from the plot's own width, which differs with the y labels), so charts of one width side by
        side tick at the same instants."""
        span = self.t1 - self.t0
        self._ticked = False
        if self.wall is not None:
            for step_s in X_STEPS_S:
                if span / (step_s * NS) * (len(self.wall.label(self.t0, step_s)) + 2) > width - Y_LABEL_ALLOWANCE:
                    continue
                placed = self._wall_labels(plot_w, step_s)
                if placed is not None and len(placed) >= 2:
                    self._ticked = True
                    return placed
            # too narrow for two round instants: the window's two ends
            precision = 60 if span >= 600 * NS else 1
            left, right = self.wall.label(self.t0, precision), self.wall.label(self.t1, precision)
            if len(left) + len(right) + 1 <= plot_w:
                return [(0, left), (plot_w - len(right), right)]
            return [(max(0, plot_w - len(right)), right[-plot_w:])]
        left, mid, right = self.x_fmt(self.t0), self.x_fmt(self.t0 + span // 2), self.x_fmt(self.t1)
        places = [(0, left), (plot_w - len(right), right)]
        mid_at = plot_w // 2 - len(mid) // 2
        if mid_at >= len(left) + 2 and mid_at + len(mid) + 2 <= plot_w - len(right):
            places.append((mid_at, mid))
        if len(left) + len(right) + 1 > plot_w:
            places = [(plot_w - len(right), right)]
        return sorted(places)

    # -- drawing ---------------------------------------------------------------

    def _legend(self, room: int, lanes_room: int | None = None) -> Text:
        """Lanes in their colours (in ``lanes_room`` columns), then the line styles, the marks used, shared
        cells (the lanes named in what room is left), each item whole in ``room`` columns or left out: never a
        name or a glyph cut (``━ B …``).  Lanes that do not fit are named after the last one drawn (``━ F +G H``),
        or counted (``+2``) where their names do not fit either."""
        out = Text()
        lanes = self.lanes()
        tight = sum(len(n) + 5 for n in lanes) + 8 > max(room, lanes_room or 0)  # short: one dash, one space a lane

        def add(item: Text, within: int = room) -> bool:
            if out.cell_len + item.cell_len > within:
                return False
            out.append_text(item)
            return True

        within = max(room, lanes_room or 0)
        items = []
        for name in lanes:
            item = Text(" " if tight else "  ")
            item.append("━" if tight else "━━", style=self.colours.get(name, ""))
            item.append(f" {name}")
            items.append(item)
        shown = len(items)
        while sum(x.cell_len for x in items[:shown]) > within:
            shown -= 1
        self._lanes_cut = shown < len(items)
        if shown < len(items):  # lanes left out: say which (``+G H``) or how many (``+2``), a lane less if need be
            for k in range(shown, -1, -1):
                left = lanes[k:]
                used_w = sum(x.cell_len for x in items[:k])
                tail = next((t for t in (f" +{' '.join(left)}", f" +{len(left)}") if used_w + len(t) <= within),
                            None)
                if tail is not None:
                    items = items[:k] + [Text(tail, style="dim")]
                    break
            else:
                items = []
        for item in items:
            add(item, within)
        for glyph, kind in self.kinds:
            add(Text(f"  {glyph} {kind}", style="dim"))
        used = {f for pts in self.marks.values() for _, f in pts}
        for flag, glyph in MARK_GLYPHS.items():
            if flag in used:
                add(Text(f"  {glyph} {MARK_NAMES[flag]}", style="dim"))
        if self.shared or self._strip_shared:
            item = Text("  ")
            item.append(SHARED_GLYPH, style=self._shared_style())
            item.append(f" {self.shared_name(room - out.cell_len - 4)}")  # ', …': more combinations than fit
            add(item)
        return out

    def render(self) -> Text:
        return Text("\n").join(self.content_lines())

    def content_lines(self) -> list[Text]:
        """The chart a ``Text`` per line (title, plot rows, mark strip, time labels): :meth:`render` cut at its
        newlines, built as lines (a repaint compares and cuts them into strips one by one,
        widgets/repaint.CachedLines; cutting the whole text at its newlines cost a fifth of a chart's repaint)."""
        width = max(10, self.content_region.width or self.size.width)
        height = max(3, self.content_region.height or self.size.height)
        rows = max(1, height - 3)  # title, mark strip, time labels
        ticks = {0: self.value_fmt(self.y_max), rows - 1: "0"}
        divisions = self.y_divisions if rows - 1 >= 2 * self.y_divisions else 2
        if rows >= 4:  # each division's value on the row nearest to it (within half a row)
            for k in range(1, divisions):
                ticks[round((rows - 1) * k / divisions)] = self.value_fmt(self.y_max * (divisions - k) / divisions)
        label_w = max(len(t) for t in ticks.values()) + 1
        plot_w = max(2, width - label_w)
        grid = self._grid(rows, plot_w)
        shared_at: dict[int, frozenset[str]] = {}  # (one series: one lane, not shared)
        lanes_of: dict[tuple[str, ...], frozenset[str]] = {}  # the lanes of the series a cell holds, by those series
        for k, (_, owners) in grid.items():
            if len(owners) > 1:
                held = tuple(owners)
                lanes = lanes_of.get(held)
                if lanes is None:
                    lanes = lanes_of[held] = frozenset(self.lane(n) for n in owners)
                if len(lanes) > 1:
                    shared_at[k] = lanes
        self.shared = {divmod(k, plot_w): lanes for k, lanes in shared_at.items()}
        span = self.t1 - self.t0
        strip: list[tuple[str, str]] = [("─", "dim")] * plot_w
        strip_lanes: list[set[str]] = [set() for _ in range(plot_w)]
        for name, pts in self.marks.items():
            for t, flag in pts:
                c = min(plot_w - 1, int((t - self.t0) / span * (plot_w - 1) + 0.5))
                strip[c] = (MARK_GLYPHS.get(flag, "•"), self.colours.get(name, ""))
                strip_lanes[c].add(self.lane(name))
        self._strip_shared = [lanes for lanes in strip_lanes if len(lanes) > 1]
        shared_style = self._shared_style()
        for c, lanes in enumerate(strip_lanes):
            if len(lanes) > 1:
                strip[c] = (strip[c][0], shared_style)
        titles = self.titles if self.titles[0] == self.title else (self.title,)  # .title set alone: that one
        for title in titles:  # the fullest title beside which every lane is named in its colour
            head = Text(title, style="bold")
            legend = self._legend(width - head.cell_len)  # the legend first, each item whole
            if not self._lanes_cut:
                break
        head.append_text(legend)
        pad = width - head.cell_len - len(self.note) - 1
        if self.note and pad >= 1:  # the note only whole: the legend comes first
            head.append(" " * pad + self.note, style="dim")
        head.truncate(width, overflow="ellipsis")
        first = Text()
        first.append_text(head)
        lines = [first]
        keys = sorted(grid)  # row by row, each row's dotted columns left to right
        styles: dict[tuple[str, ...], str] = {}  # the style of a cell one lane's series hold, by those series
        dashed = self.dashed
        i = 0
        for r in range(rows):
            # a row is built as its text and spans at once: the same Text as appending the label, the axis and
            # each run of one style (_append_runs), without a Text.append (and its control-code pass) per piece
            label = strip_control_codes(f"{ticks.get(r, ''):>{label_w - 1}}")
            base = len(label) + 1
            spans = [Span(0, base - 1, "dim"), Span(base - 1, base, "dim")] if base > 1 else [Span(0, 1, "dim")]
            parts = [label, "┤" if r in ticks else "│"]
            at = 0  # the next plot column
            run_style, run_start = "", 0  # the run of one style being built: gaps are style ""
            end = (r + 1) * plot_w
            while i < len(keys) and keys[i] < end:
                k = keys[i]
                i += 1
                c = k - r * plot_w
                if c > at:
                    parts.append(" " * (c - at))
                    if run_style:
                        spans.append(Span(base + run_start, base + at, run_style))
                    run_style, run_start = "", at
                bits, owners = grid[k]
                if k in shared_at:
                    style = shared_style
                else:  # one lane: its solid series where it has one here
                    held = tuple(owners)
                    style = styles.get(held)  # type: ignore[assignment]
                    if style is None:
                        style = styles[held] = self._colour(min(owners, key=lambda n: (n in dashed, n)))
                if style != run_style:
                    if run_style:
                        spans.append(Span(base + run_start, base + c, run_style))
                    run_style, run_start = style, c
                parts.append(chr(0x2800 + bits))
                at = c + 1
            if at < plot_w:
                parts.append(" " * (plot_w - at))
                if run_style:
                    spans.append(Span(base + run_start, base + at, run_style))
                run_style = ""
            if run_style:
                spans.append(Span(base + run_start, base + at, run_style))
            lines.append(Text("".join(parts), spans=spans))
        self.x_labels = self._x_axis(plot_w, width)
        if self.wall is not None and self._ticked:
            for at, text in self.x_labels:
                c = at + len(text) // 2
                if strip[c][0] == "─":
                    strip[c] = ("┬", "dim")
        out = Text()
        out.append(" " * (label_w - 1) + "└", style="dim")
        _append_runs(out, strip)
        lines.append(out)
        axis = [" "] * plot_w
        for at, text in self.x_labels:
            for i, ch in enumerate(text):
                if 0 <= at + i < plot_w:
                    axis[at + i] = ch
        out = Text()
        out.append(" " * label_w + "".join(axis), style="dim")
        lines.append(out)
        if not any(self.series.values()) and not any(self.marks.values()):
            msg = next((m for m in ("no samples in this window", "no samples", "none") if len(m) <= plot_w), "")
            row = 1 + rows // 2
            if row < len(lines):  # the y axis (its label and ┤) stays; the note is centred in the plot
                lines[row] = lines[row][:label_w] + Text(f"{msg:^{plot_w}}", style="dim")
        return lines
