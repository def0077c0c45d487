"""A plotext chart for the bench screen that keeps the data it was given."""

from __future__ import annotations

from typing import Any

from textual.color import Color
from textual_plotext import PlotextPlot

SERIES_VARS = ("primary", "accent", "success", "secondary", "warning", "error")


class BenchChart(PlotextPlot):
    """Lines (x numeric) or grouped bars (x labels), one series per lane, in theme colours.

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
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: dict[str, list[tuple[Any, float]]] = {}
        self.kind = "empty"
        self.marks: list[tuple[str, Any, float]] = []
        self._last: tuple[Any, tuple] | None = None  # the last show_* call, replayed on a theme change

    def on_mount(self) -> None:
        super().on_mount()
        # series colours are baked into the plot: draw it again in the new theme's colours
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.call_after_refresh(self._replot))

    def _replot(self) -> None:
        if self._last is not None:
            method, args = self._last
            method(*args)

    def colors(self, n: int) -> list[tuple[int, int, int]]:
        """Series colours from the app theme (plotext takes RGB tuples)."""
        variables = self.app.theme_variables if self.is_attached else {}
        out = []
        for i in range(n):
            name = SERIES_VARS[i % len(SERIES_VARS)]
            try:
                out.append(Color.parse(variables.get(name, "#4FB3D9")).rgb)
            except Exception:  # a theme without this variable
                out.append((79, 179, 217))
        return out

    def _frame(self, title: str, xlabel: str, ylabel: str) -> Any:
        self.border_title = title
        plt = self.plt
        plt.clear_figure()
        plt.xlabel(xlabel)
        plt.ylabel(ylabel)
        return plt

    def show_lines(self, title: str, xlabel: str, ylabel: str, series: dict[str, list[tuple[float, float]]]) -> None:
        """One line per series over numeric x (e.g. tok/s vs concurrency)."""
        self.kind, self.series, self.marks = "lines", {k: list(v) for k, v in series.items()}, []
        self._last = (self.show_lines, (title, xlabel, ylabel, series))
        plt = self._frame(title, xlabel, ylabel)
        xs = sorted({x for pts in series.values() for x, _ in pts})
        for (name, pts), color in zip(series.items(), self.colors(len(series))):
            if pts:
                plt.plot([x for x, _ in pts], [y for _, y in pts], label=name, color=color, marker="braille")
                plt.scatter([x for x, _ in pts], [y for _, y in pts], color=color, marker="●")
        if xs:
            plt.xticks(xs, [f"C{x:g}" for x in xs])
        plt.ylim(0, None)
        self.refresh()

    def show_bars(self, title: str, xlabel: str, ylabel: str, labels: list[str],
                  series: dict[str, list[float]], marks: list[tuple[str, Any, float]] | None = None) -> None:
        """Grouped horizontal bars (finer resolution than vertical ones in a terminal): one group per
        label, one bar per series; ``marks`` are (text, label, value) notes drawn at the bar's end."""
        self.kind = "bars"
        self._last = (self.show_bars, (title, xlabel, ylabel, labels, series, marks))
        self.series = {k: list(zip(labels, v)) for k, v in series.items()}
        self.marks = list(marks or [])
        plt = self._frame(title, ylabel, xlabel)  # horizontal: the value axis is x
        if labels and series:
            names = list(series)
            plt.multiple_bar(labels, [series[n] for n in names], labels=names, color=self.colors(len(names)),
                             width=0.8, orientation="horizontal")
            note = self.colors(len(SERIES_VARS))[SERIES_VARS.index("warning")]
            for text, label, value in self.marks:
                if label in labels:
                    plt.text(f"◀ {text}", value, labels.index(label) + 1, color=note, alignment="left")
        self.refresh()

    def show_empty(self, title: str, message: str = "waiting for the first cell…") -> None:
        self.kind, self.series, self.marks = "empty", {}, []
        self._last = (self.show_empty, (title, message))
        self.border_title = title
        plt = self.plt
        plt.clear_figure()
        plt.title(message)
        self.refresh()
