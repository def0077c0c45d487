"""A bench chart that keeps the data it was given: lines over concurrency, or grouped bars.

Lines (tok/s vs concurrency) are drawn by plotext.  Grouped bars are drawn here, as text: one
group per category (or prompt length), one bar per lane side by side under its label, each bar in
the lane's colour (:mod:`lanemon.ui.colours`) with its value at its end, the legend in the title
line (outside the plot), and notes such as cache hits on the bar they belong to.  Every bar of
every group shares one scale that starts at zero.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from lanemon.ui.colours import SERIES_VARS, lane_colour, rgb
from lanemon.ui.format import markup_escape as escape

__all__ = ["BenchChart", "SERIES_VARS", "faded", "fit_bars", "render_bars"]


def faded(app: Any, colour: str, amount: float = 0.55) -> str:
    """``colour`` blended ``amount`` of the way to ``app``'s theme background (hex): the same hue, quieter."""
    from textual.color import Color

    background = "#1E1E1E"
    variables = getattr(app, "theme_variables", None) or {}
    try:
        base = Color.parse(variables.get("background", background))
    except Exception:
        base = Color.parse(background)
    try:
        return Color.parse(colour).blend(base, amount).hex
    except Exception:
        return colour

_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(fraction: float, width: int) -> str:
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")


def _value(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}"


def _hatched(fraction: float, width: int) -> str:
    return "▒" * round(max(0.0, min(1.0, fraction)) * width)


def render_bars(labels: list[str], series: dict[str, list[float]], colours: dict[str, str], width: int,
                unit: str, marks: list[tuple[str, Any, float]] | None = None,
                hatched: set[str] | frozenset[str] = frozenset(),
                flagged: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset()) -> Text:
    """Grouped horizontal bars as text ``width`` cells wide (see the module docstring); the series in
    ``hatched`` are drawn ``▒▒▒`` (the OLD side of a compare, in its lane's faded colour); a (series,
    label) in ``flagged`` ran while lanemon itself was starved: drawn ``░░░`` with ``?``, not as speed."""
    return fit_bars(labels, series, colours, width, unit, marks, hatched, flagged)[0]


def fit_bars(labels: list[str], series: dict[str, list[float]], colours: dict[str, str], width: int,
             unit: str, marks: list[tuple[str, Any, float]] | None = None,
             hatched: set[str] | frozenset[str] = frozenset(),
             flagged: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
             height: int | None = None) -> tuple[Text, int]:
    """:func:`render_bars` in ``height`` lines (None: as many as it takes), and how many groups it left out.

    Where the groups, one line per bar, do not fit: the same groups one line each, the lanes' bars side by
    side (the unit said once, in the legend), when each bar still gets 4 cells and no note is to be drawn;
    then whole groups only, as many as fit -- never a group cut between its lanes -- and the count of the
    rest, for the caller to say (``↓ 3 more``)."""
    names = list(series)
    label_w = min(max((len(lb) for lb in labels), default=0), max(6, width // 3))  # 'summarization' whole at 41
    name_w = max((len(n) for n in names), default=1)
    values = [v for vs in series.values() for v in vs if v is not None]
    top = max(values, default=0.0) or 1.0
    notes: dict[tuple[str, str], list[str]] = {}
    for text, label, _value_at in marks or []:
        lane = next((n for n in names if text.startswith(n + " ")), None)
        notes.setdefault((str(label), lane or ""), []).append(text[len(lane) + 1:] if lane else text)
    value_w = max((len(_value(v)) for v in values), default=1) + 1 + len(unit) + (2 if flagged else 0)
    bar_w = max(4, width - label_w - name_w - value_w - 4)
    # too narrow for label, name, a 4-cell bar and the value with its unit on one line (80x24's 21-cell panel
    # wrapped `tok/s ?` onto a line of its own and cut `reasoning` to `reason…`): each group's label on a line
    # of its own, the lanes' bars under it, the unit said once in the key
    stacked = label_w + name_w + value_w + 4 + 4 > width
    tail_unit = "" if stacked else f" {unit}"
    if stacked:
        label_w = 0
        value_w -= 1 + len(unit)
        bar_w = max(1, width - name_w - value_w - 2)
    legend = Text("  ")
    for n in names:
        legend.append("▒▒" if n in hatched else "██", style=colours.get(n, ""))
        legend.append(f" {n}  ")
    # the key whole where it fits, else its short form ('(tok/s from 0; ░? lanemon …' at 100 columns)
    keys = ([f"({unit} from 0; ░? lanemon starved)", f"({unit} from 0; ░? starved)"] if flagged
            else [f"({unit}, one scale from 0)", f"({unit} from 0)"]) + [f"({unit})"]
    legend.append(next((k for k in keys if legend.cell_len + len(k) <= width), keys[-1]), style="dim")
    legend.truncate(width, overflow="ellipsis")

    def shown_label(label: str) -> str:
        return label if len(label) <= label_w else label[: max(1, label_w - 1)] + "…"

    def bar_of(n: str, label: str, v: float, w: int) -> tuple[str, bool]:
        starved = (n, label) in flagged
        return (_hatched(v / top, w).replace("▒", "░") if starved else
                _hatched(v / top, w) if n in hatched else _bar(v / top, w)), starved

    groups: list[list[Text]] = []
    for i, label in enumerate(labels):
        group: list[Text] = [Text(label if len(label) <= width else label[: max(1, width - 1)] + "…",
                                  style="bold")] if stacked else []
        for j, n in enumerate(names):
            vs = series[n]
            v = vs[i] if i < len(vs) else None
            line = Text()
            if not stacked:
                line.append(f"{shown_label(label) if j == 0 else '':<{label_w}} ", style="bold" if j == 0 else "")
            line.append(f"{n:<{name_w}} ", style=colours.get(n, ""))
            group.append(line)
            if v is None:
                line.append("—", style="dim")
                continue
            bar, starved = bar_of(n, label, v, bar_w)
            line.append(bar, style=colours.get(n, ""))
            tail = f" {_value(v)}{tail_unit}" + (" ?" if starved else "")
            note = notes.get((label, n))
            used = label_w + 1 + name_w + 1 + len(bar) + len(tail)
            line.append(tail)
            if note:
                if stacked:  # the unit is the key's, as on the bars (80x24 put `tok/s` on a line of its own)
                    note = [x.removesuffix(f" {unit}") for x in note]
                text = "  ◀ " + "; ".join(note)
                room = width - used
                if len(text) <= room:
                    line.append(text, style="bold yellow")
                else:  # no room beside the bar for the whole note ('cache hit 12,…' was cut): a line of its own,
                    # indented less where that keeps it whole (80x24's 21-cell panel split a six-digit
                    # `cache hit` / `160,607`); else broken between words, never between a number and its unit
                    text = text.strip()
                    indent = max(0, min(label_w + name_w + 2, width - len(text)))
                    glued = re.sub(r"(\d) (?=[^\W\d]|/)", "\\1\xa0", text)  # `160,607 tok/s` stays one
                    for part in textwrap.wrap(glued, max(8, width - indent), break_long_words=False):
                        group.append(Text(" " * indent + part.replace("\xa0", " "), style="bold yellow"))
        groups.append(group)
    if height is not None and 1 + sum(len(g) for g in groups) > height and not notes and names and not stacked:
        # side by side: 'summarization A ██████▏ 148  B █████▍ 134' (the 8 categories at 100x30)
        val_w = max((len(_value(v)) for v in values), default=1) + (2 if flagged else 0)
        seg = name_w + 1 + 1 + val_w  # name, space, (bar), space, value
        side_w = (width - label_w - 1 - len(names) * seg - 2 * (len(names) - 1)) // len(names)
        if side_w >= 4:
            groups = []
            for i, label in enumerate(labels):
                line = Text(f"{shown_label(label):<{label_w}} ", style="bold")
                for j, n in enumerate(names):
                    vs = series[n]
                    v = vs[i] if i < len(vs) else None
                    line.append(("  " if j else "") + f"{n:<{name_w}} ", style=colours.get(n, ""))
                    if v is None:
                        line.append(f"{'—':<{side_w}} {'':>{val_w}}", style="dim")
                        continue
                    bar, starved = bar_of(n, label, v, side_w)
                    line.append(f"{bar:<{side_w}}", style=colours.get(n, ""))
                    line.append(f" {_value(v) + (' ?' if starved else ''):>{val_w}}")
                groups.append([line])
    shown = len(groups)
    if height is not None:
        room, shown = height - 1, 0
        for g in groups:
            if len(g) > room:
                break
            room -= len(g)
            shown += 1
    out = Text()
    out.append_text(legend)
    for g in groups[:shown]:
        for line in g:
            out.append("\n")
            out.append_text(line)
    return out, len(labels) - shown


class BenchChart(Vertical):
    """Lines (x numeric, plotext) or grouped bars (x labels, text), one series per lane.

    :attr:`series` keeps what was last plotted (``{name: [(x, y), ...]}``),
    so tests and the screen can see what the chart holds without rendering.
    """

    DEFAULT_CSS = """
    BenchChart {
        height: 1fr;
        min-height: 8;
        border: round $primary 40%;
        border-title-color: $text-muted;
        background: $surface;
    }
    BenchChart > PlotextPlot { height: 1fr; }
    BenchChart > #key { height: auto; padding: 0 1; display: none; }
    BenchChart > #bars { height: 1fr; padding: 0 1; overflow-y: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: dict[str, list[tuple[Any, float]]] = {}
        self.ghost: dict[str, list[tuple[Any, float]]] = {}
        """Lines: the second figure per lane, drawn faded (the decode ladder's span)."""
        self.flagged: dict[str, list[tuple[Any, float]]] = {}
        """Lines: points that are not lane speed (lanemon was starved), drawn as ``?``."""
        self.vline: tuple[float, str] | None = None
        self.flagged_bars: set[tuple[str, str]] = set()
        """Bars: (series, label) cells that ran while lanemon was starved (drawn ░ with ?)."""
        self.lane_of: dict[str, str] = {}
        """Series -> the lane whose colour it is drawn in, for series that are not lanes (``"A old"`` -> A)."""
        self.faded_series: set[str] = set()
        """Series drawn as a quieter variant of their lane's colour (faded line and ``○``, ``▒`` bars): the
        OLD side of a compare."""
        self.kind = "empty"
        self.marks: list[tuple[str, Any, float]] = []
        self.lane_order: list[str] = []
        """Lane names in the app's order (colour index); defaults to the series order."""
        self._last: tuple[Any, tuple] | None = None  # the last show_* call, replayed on a theme change
        self._bars: tuple[list[str], dict[str, list[float]], str] | None = None
        self.hidden_groups = 0
        """Bars: groups left out for want of height (said in the border: ``↓ 3 more``)."""
        self.titles: list[tuple[str, str]] = []
        """The title's (markup, plain) forms, fullest first: the border takes the first that fits whole."""
        self.legend: list[tuple[str, str]] = []
        """Lines: the legend's items as (markup, plain), each kept whole; where the border cannot hold them all
        they go to the key line over the plot (wrapped between items, never inside one)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="key")
        yield PlotextPlot(id="plot")
        yield Static("", id="bars")

    @property
    def plt(self) -> Any:
        return self.query_one(PlotextPlot).plt

    def on_mount(self) -> None:
        # series colours are baked into the plot: draw it again in the new theme's colours
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.call_after_refresh(self._replot))
        self._show("empty")

    def on_resize(self) -> None:
        self._fit_labels()
        if self.kind == "bars":
            self._draw_bars()

    def _set_title(self, title: str | tuple[str, ...] | list[str], suffix: tuple[str, str] | None = None) -> None:
        """``title``: one text or its forms, fullest first (``("aggregate decode vs concurrency", "aggregate
        decode", ...)``); ``suffix`` (markup, plain) follows the fullest forms where it fits too."""
        forms = [title] if isinstance(title, str) else list(title)
        # each form with the suffix, then without it: the title's words before the axis name (100x30 read
        # `prefill tok/s  (prompt tokens)` where `needles: prefill tok/s by context` fitted whole)
        self.titles = [t for f in forms for t in ([(escape(f) + suffix[0], f + suffix[1])] if suffix else [])
                       + [(escape(f), f)]]
        self._fit_labels()

    def _fit_labels(self) -> None:
        """The border's title and legend, each whole: the fullest title form that fits the border (80x24's
        25-column chart read ``aggregate decode v…``); the legend's items in the bottom border as far as they
        fit whole, the rest on key lines over the plot (it read ``━A ━B steady •• sp…``)."""
        room = (self.size.width or 80) - 6  # the border's corners and a blank either side of the label
        if self.titles:
            title = next((m for m, p in self.titles if len(p) <= room), self.titles[-1][0])
            if self.border_title != title:
                self.border_title = title
        if self.kind != "lines":
            return
        key = self.query_one("#key", Static)
        # the border holds the leading items that fit it whole (the lanes); the rest go to the key line, so the
        # plot keeps its rows (80x24 gave a 25-column chart's key two lines and the plot one)
        n = 0
        while n < len(self.legend) and len(" ".join(p for _, p in self.legend[: n + 1])) <= room:
            n += 1
        subtitle = " ".join(m for m, _ in self.legend[:n])
        rest = self.legend[n:]
        fits = not rest
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle
        lines: list[list[tuple[str, str]]] = []
        inner = max(1, (self.size.width or 80) - 4)  # the border and the key's padding
        for item in rest:
            if lines and len(" ".join(p for _, p in lines[-1] + [item])) <= inner:
                lines[-1].append(item)
            else:
                lines.append([item])
        key.update("\n".join(" ".join(m for m, _ in line) for line in lines))
        if key.display != (not fits):
            key.display = not fits

    def _replot(self) -> None:
        if self._last is not None:
            method, args, *kw = self._last
            method(*args, **(kw[0] if kw else {}))

    def _show(self, which: str) -> None:
        self.query_one(PlotextPlot).display = which == "lines"
        if which != "lines":
            self.query_one("#key", Static).display = False
        self.query_one("#bars", Static).display = which != "lines"

    def lane_colours(self, names: list[str]) -> dict[str, str]:
        """Each series' colour: its lane's (:attr:`lane_of` names the lane of a series that is not a lane,
        e.g. ``"A old"``), faded for the series in :attr:`faded_series`."""
        order = self.lane_order or []
        lanes = list(dict.fromkeys(self.lane_of.get(n, n) for n in names))
        out = {}
        for n in names:
            lane = self.lane_of.get(n, n)
            idx = order.index(lane) if lane in order else (len(order) + lanes.index(lane) if order
                                                            else lanes.index(lane))
            colour = lane_colour(self.app, idx) if self.is_attached else "#4FB3D9"
            out[n] = self.faded(colour) if n in self.faded_series else colour
        return out

    def colors(self, n: int) -> list[tuple[int, int, int]]:
        """Series colours from the app theme (plotext takes RGB tuples)."""
        return [rgb(lane_colour(self.app, i)) if self.is_attached else (79, 179, 217) for i in range(n)]

    def faded(self, colour: str, amount: float = 0.45) -> str:
        """``colour`` blended ``amount`` of the way to the theme's background: the same lane, drawn quieter
        (a figure shown beside the headline one, e.g. the decode ladder's span beside its steady state)."""
        return faded(self.app if self.is_attached else None, colour, amount)

    def show_lines(self, title: str | tuple[str, ...], xlabel: str, ylabel: str, series: dict[str, list[tuple[float, float]]],
                   *, ghost: dict[str, list[tuple[float, float]]] | None = None,
                   flagged: dict[str, list[tuple[float, float]]] | None = None,
                   vline: tuple[float, str] | None = None, ghost_label: str = "span",
                   series_label: str = "steady") -> None:
        """One line per series over numeric x (e.g. tok/s vs concurrency), in the lane's colour.

        ``ghost``: a second figure per lane drawn as points (``•``, not joined) in a faded shade of the same colour
        (named ``ghost_label`` in the legend); ``flagged``: points that are not the lane's speed (lanemon
        was starved), drawn as ``?`` and never joined to the line; ``vline``: (x, label) of a crossover.
        The legend is the bottom border (outside the plot), each lane in its colour; where the border cannot
        hold it whole, a key line over the plot (:meth:`_fit_labels`).  ``title``: one text or its forms,
        fullest first."""
        ghost = {k: list(v) for k, v in (ghost or {}).items() if v}
        flagged = {k: list(v) for k, v in (flagged or {}).items() if v}
        self.kind, self.series, self.marks = "lines", {k: list(v) for k, v in series.items()}, []
        self.hidden_groups = 0
        self.ghost, self.flagged, self.vline = ghost, flagged, vline
        self._last = (self.show_lines, (title, xlabel, ylabel, series),
                      {"ghost": ghost, "flagged": flagged, "vline": vline, "ghost_label": ghost_label,
                       "series_label": series_label})
        self._show("lines")
        plt = self.plt
        plt.clear_figure()
        plt.xlabel(xlabel)
        plt.ylabel(ylabel)
        names = list(dict.fromkeys([*series, *ghost, *flagged]))
        xs = sorted({x for group in (series, ghost, flagged) for pts in group.values() for x in (p[0] for p in pts)})
        colours = self.lane_colours(names)
        for name in names:  # the faded span first, so the steady line is drawn over it
            pts = ghost.get(name)
            if pts:
                plt.scatter([x for x, _ in pts], [y for _, y in pts], color=rgb(self.faded(colours[name])),
                            marker="•")
        for name in names:
            color = rgb(colours[name])
            pts = series.get(name) or []
            if pts:
                plt.plot([x for x, _ in pts], [y for _, y in pts], color=color, marker="braille")
                plt.scatter([x for x, _ in pts], [y for _, y in pts], color=color,
                            marker="○" if name in self.faded_series else "●")
            bad = flagged.get(name)
            if bad:
                plt.scatter([x for x, _ in bad], [y for _, y in bad], color=color, marker="?")
        if vline is not None:
            plt.vline(vline[0], color=rgb(self.faded("#FFD75F" if not self.is_attached else
                                                     self.app.theme_variables.get("warning", "#FFD75F"), 0.3)))
        if xs:
            plt.xticks(xs, [f"C{x:g}" for x in xs])
        plt.ylim(0, None)
        # the legend's items, each whole: the lanes with what their line is, the span's points, the marks
        legend = [(f"[{colours[n]}]{'○' if n in self.faded_series else '━'}[/]{escape(n)}",
                   f"{'○' if n in self.faded_series else '━'}{n}") for n in names]
        if legend and series_label:  # what the lines are, with the last lane: `━A ━B steady`
            legend[-1] = (legend[-1][0] + f" {series_label}", legend[-1][1] + f" {series_label}")
        if ghost:
            dots = [n for n in names if n in ghost]
            legend.append(("".join(f"[{self.faded(colours[n])}]•[/]" for n in dots) + f" {ghost_label}",
                           "•" * len(dots) + f" {ghost_label}"))
        if flagged:
            legend.append(("? starved", "? starved"))
        if vline is not None:
            legend.append(("│ crossover", "│ crossover"))
        self.legend = legend
        self._set_title(title)
        self.query_one(PlotextPlot).refresh()

    def show_bars(self, title: str | tuple[str, ...], xlabel: str, ylabel: str, labels: list[str],
                  series: dict[str, list[float]], marks: list[tuple[str, Any, float]] | None = None,
                  flagged: set[tuple[str, str]] | None = None) -> None:
        """Grouped bars: one group per label (``xlabel`` names them), one bar per series, values in
        ``ylabel``; ``marks`` are (``"<lane> <note>"``, label, value) notes drawn beside that lane's bar."""
        self.kind = "bars"
        self.border_subtitle = ""
        self._last = (self.show_bars, (title, xlabel, ylabel, labels, series, marks, flagged))
        self.flagged_bars = set(flagged or ())
        self.series = {k: list(zip(labels, v)) for k, v in series.items()}
        self.marks = list(marks or [])
        # the groups' name once: 'by category' already says it (the repeat was cut to '(…' at 100 columns)
        full = title if isinstance(title, str) else title[0]
        self._set_title(title, None if xlabel in full else (f"  [dim]({escape(xlabel)})[/]", f"  ({xlabel})"))
        self._bars = (list(labels), {k: list(v) for k, v in series.items()}, ylabel)
        self._show("bars")
        self._draw_bars()

    def _draw_bars(self) -> None:
        if self._bars is None:
            return
        labels, series, unit = self._bars
        width = max(8, (self.content_region.width or self.size.width or 60) - 2)  # #bars' padding: no wrap
        bars = self.query_one("#bars", Static)
        height = bars.size.height or self.content_region.height or None  # None before the first layout
        text, hidden = fit_bars(labels, series, self.lane_colours(list(series)), width, unit, self.marks,
                                hatched=self.faded_series, flagged=self.flagged_bars, height=height)
        bars.update(text)
        self.hidden_groups = hidden
        # the groups that do not fit are said, never dropped silently (5 of decode.jsonl's 8 categories showed)
        more = f"↓ {hidden} more" if hidden else ""
        if self.border_subtitle != more:
            self.border_subtitle = more

    def show_empty(self, title: str | tuple[str, ...], message: str = "waiting for the first cell…") -> None:
        self.kind, self.series, self.marks = "empty", {}, []
        self.hidden_groups = 0
        self.ghost, self.flagged, self.vline = {}, {}, None
        self._last = (self.show_empty, (title, message))
        self.border_subtitle = ""
        self._bars = None
        self.legend = []
        self._set_title(title)
        if self.is_mounted:
            self._show("empty")
            self.query_one("#bars", Static).update(Text(message, style="dim"))
