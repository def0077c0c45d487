"""The gauntlet TUI: both lanes' hops side by side, live.

``make_gauntlet_app(source)`` builds it (CLI and tests); ``run_gauntlet_app(source)``
runs it and returns an exit code.  ``source`` follows the dashboard
:class:`~lanemon.ui.app.Source` protocol (``mode``, ``bus``, ``lanes``,
``recording_path``, ``paused``, ``speed``, ``finished``, ``run()``, ``stop()``
...) -- :class:`lanemon.sessions.gauntlet.GauntletSource` runs the gauntlet on
its bus; a replayed recording or a scripted list of events works the same.
Optional extras: ``now_ns()`` (the session clock, so elapsed time ticks
between events) and ``result`` (the final results dict).

Every event is folded into a :class:`~lanemon.folds.gauntlet.GauntletState`
(cheap); the screen is repainted on a timer from that state, never per token.
``q`` cancels the run (finished reps stay in the recording) and quits.
"""

from __future__ import annotations

import sys
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from lanemon.ui.screens.gauntlet import GauntletScreen
from lanemon.ui.themes import ThemeError, load_themes, resolve_theme
from lanemon.folds.gauntlet import GauntletState
from lanemon.workloads.gauntlet import summary_sentence

__all__ = ["GauntletApp", "ThemeError", "make_gauntlet_app", "run_gauntlet_app"]


class GauntletApp(App):
    """The gauntlet screen over one source."""

    TITLE = "lanemon gauntlet"
    CSS_PATH = "lanemon.tcss"
    BINDINGS = [Binding("q", "quit", "Stop and quit")]

    def __init__(self, source: Any, *, theme: str, themes: dict[str, Any], theme_warnings: list[str] | None = None,
                 refresh_hz: float = 8.0) -> None:
        super().__init__()
        self.source = source
        self.refresh_hz = refresh_hz
        self.theme_warnings = list(theme_warnings or [])
        for t in themes.values():
            self.register_theme(t)
        self.theme = theme
        self.state = GauntletState([d["name"] for d in source.lanes if isinstance(d, dict) and "name" in d])
        for d in source.lanes:
            if isinstance(d, dict) and d.get("name"):
                self.state.lane(d["name"]).model = d.get("model")
        self.source_error: BaseException | None = None
        self.redraws = 0
        """How many times the screen was repainted (tests check it stays low)."""
        self._drawn: tuple | None = None
        self._unsubscribe: list = []
        self._summary: str | None = None

    def get_default_screen(self) -> GauntletScreen:
        return GauntletScreen(list(self.state.lanes))

    def on_mount(self) -> None:
        self._unsubscribe = [self.source.bus.subscribe(self.state.apply)]
        self.run_worker(self._run_source(), exclusive=True, group="source", exit_on_error=False)
        self.set_interval(1 / self.refresh_hz, self.redraw)
        self.redraw(force=True)
        for msg in self.theme_warnings:
            self.notify(msg, title="theme", severity="warning", timeout=8, markup=False)

    async def _run_source(self) -> None:
        await self.source.run()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "source":
            return
        if event.state == WorkerState.ERROR:
            self.source_error = event.worker.error
            self.notify(str(event.worker.error), title="gauntlet failed", severity="error", timeout=30, markup=False)
        self.redraw(force=True)

    def on_unmount(self) -> None:
        self.source.stop()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    def now_ns(self) -> int:
        clock = getattr(self.source, "now_ns", None)
        running = self.state.started and not self.state.ended and not getattr(self.source, "finished", False)
        if callable(clock) and running:
            return int(clock())
        return self.state.last_t

    def redraw(self, force: bool = False) -> bool:
        """Repaint if the state changed (or, while running, every tick so elapsed time moves)."""
        now = self.now_ns()
        running = self.state.started and not self.state.ended
        fp = (self.state.version, getattr(self.source, "finished", False), now // 100_000_000 if running else 0)
        if not force and fp == self._drawn:
            return False
        screen = self.screen
        if not isinstance(screen, GauntletScreen) or not screen.is_mounted:
            return False
        self._drawn = fp
        if self.state.ended and self._summary is None:
            result = getattr(self.source, "result", None)
            if isinstance(result, dict) and result.get("summary"):
                self._summary = result["summary"]
            else:
                self._summary = summary_sentence(self._results_from_state())
        screen.refresh_from(self.state, self.source, now, self._summary)
        self.redraws += 1
        return True

    def _results_from_state(self) -> dict[str, Any]:
        """A summary-sized result from the fold (when the source offers no ``result``)."""
        lanes = {}
        for name, lv in self.state.lanes.items():
            walls = sorted(float(r.get("wall_s", 0)) for r in lv.results)
            if not walls:
                continue
            mid = len(walls) // 2
            median = walls[mid] if len(walls) % 2 else (walls[mid - 1] + walls[mid]) / 2
            lanes[name] = {"reps": len(walls), "median_wall_s": median,
                           "correct": sum(1 for r in lv.results if r.get("correct")),
                           "tool_calls": [int(r.get("tool_calls", 0)) for r in lv.results]}
        return {"lanes": lanes, "config": self.state.config}

    async def action_quit(self) -> None:
        self.source.stop()
        self.workers.cancel_group(self, "source")
        self.exit()


def make_gauntlet_app(source: Any, *, theme: str | None = None, refresh_hz: float = 8.0) -> GauntletApp:
    """Build the gauntlet app (ThemeError for an unknown theme name)."""
    if refresh_hz <= 0:
        raise ValueError("refresh_hz must be positive")
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    name = resolve_theme(theme, themes)
    return GauntletApp(source, theme=name, themes=themes, theme_warnings=warnings, refresh_hz=refresh_hz)


def run_gauntlet_app(source: Any, theme: str | None = None) -> int:
    """Run the gauntlet screen until the user quits; the exit code (0 unless the app set one)."""
    app = make_gauntlet_app(source, theme=theme)
    app.run()
    for warning in app.theme_warnings:
        print(f"lanemon: warning: {warning}", file=sys.stderr)
    return app.return_code or 0
