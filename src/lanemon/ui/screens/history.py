"""The history screen: each lane's figures across past sessions (the history catalogue), one trend per lane,
workload and level, the latest session marked when it moved beyond the lane's own spread.

Opened with ``y``.  The catalogue is read once in a worker thread (SQLite, monitor/history.py) and again on
``R``; ``m`` cycles the figure.  Drawn only when the rows or the figure changed.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lanemon.measure.summary import METRIC_FIELDS, format_figure, shift, trend_groups
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.footer import Footer
from lanemon.untrusted import inert

SPARK = "▁▂▃▄▅▆▇█"
TREND_POINTS = 48


def spark(values: list[float | None]) -> str:
    """One glyph per session, scaled from zero to the largest (a gap for a session without the figure)."""
    xs = [v for v in values if v is not None]
    top = max(xs) if xs else 0.0
    return "".join(" " if v is None or top <= 0 else SPARK[min(7, max(0, round(v / top * 7)))] for v in values)


_fmt = format_figure  # every figure with its unit, from the metric catalogue


def render_history(rows: list[Any], metric: str, width: int = 160) -> Text:
    """Rows (LaneSummary, oldest first) as one trend line per comparable series (measure/summary.py
    ``trend_groups``: lane, workload, level as a number, API, place, prompt set, max tokens, simulated or real,
    time scale): a run at another time scale is its own series, never a SHIFT of the others."""
    out = Text()
    if not rows:
        out.append("no sessions in the history catalogue yet: every live or bench session adds its rows "
                   "(lanemon history --rebuild reads the recordings)", style="dim")
        return out
    points = max(8, min(TREND_POINTS, width - 84))
    for key, rs in trend_groups(rows).items():
        lane, workload, level = key[:3]
        values = [getattr(r, metric) for r in rs][-points:]
        sh = shift(values)
        last = rs[-1]
        out.append(f"{inert(lane, 10):<10} ", style="bold")
        out.append(f"{inert(workload, 10):<10} {inert(level, 10):<10} ")
        out.append(f"{spark(values):<{points}}", style="cyan")
        out.append(f"  latest {_fmt(metric, values[-1] if values else None)}")
        if sh is not None:
            out.append(f"  median {_fmt(metric, sh.median)} of {sh.n}")
            if sh.shifted:
                change = f" {sh.change:+.0%}" if sh.change is not None else ""
                out.append(f"  SHIFT{change}", style="bold red")
        sim = f" · sim{f' x{last.time_scale:g}' if last.time_scale not in (None, 1.0) else ''}" if last.simulated else ""
        out.append(f"  · {len(rs)} sessions{sim}\n", style="dim")
    return out


class HistoryScreen(LanemonScreen):
    """Trends across sessions from the catalogue."""

    NAME = "history"
    BINDINGS = [Binding("m", "metric", "Next figure"), Binding("R", "reload", "Reload")]
    DEFAULT_CSS = """
    HistoryScreen #hi-head { height: 1; padding: 0 1; background: $panel; color: $text; width: 1fr; }
    HistoryScreen #hi-scroll { height: 1fr; padding: 0 1; }
    """

    def __init__(self, catalogue: Any = None) -> None:
        super().__init__()
        self.catalogue = catalogue
        self.metric = "ttft_p50"
        self.rows: list[Any] | None = None
        self.error: str | None = None
        self.loads = 0

    def compose(self) -> ComposeResult:
        yield Label("", id="hi-head")
        with VerticalScroll(id="hi-scroll"):
            yield Static("", id="hi-list")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def load(self) -> None:
        from lanemon.monitor import history

        try:
            rows, error = history.query(self.catalogue), None
        except history.CatalogueError as exc:
            rows, error = [], str(exc)
        self.app.call_from_thread(self._loaded, rows, error)

    def _loaded(self, rows: list[Any], error: str | None) -> None:
        self.rows, self.error = rows, error
        self.loads += 1
        self.drawn = None
        self.lanemon.redraw(force=True)

    def fingerprint(self, app) -> tuple:
        return (self.loads, self.metric, self.size.width)

    def draw(self, app) -> None:
        if self.rows is None:
            self.query_one("#hi-head", Label).update(Text("HISTORY · reading the catalogue…"))
            return
        sessions = len({r.session for r in self.rows})
        self.query_one("#hi-head", Label).update(Text(
            f"HISTORY · {self.metric} per lane across {sessions} session{'s' * (sessions != 1)} · "
            "SHIFT = the latest beyond the lane's own spread (comparable sessions only)"))
        body = Text(inert(self.error, 300), style="red") if self.error else render_history(self.rows, self.metric, self.size.width - 2)
        self.query_one("#hi-list", Static).update(body)

    def action_metric(self) -> None:
        i = METRIC_FIELDS.index(self.metric)
        self.metric = METRIC_FIELDS[(i + 1) % len(METRIC_FIELDS)]
        self.lanemon.redraw(force=True)

    def action_reload(self) -> None:
        self.load()
