"""The bench TUI: live progress, charts and results of a decode / prefill / needles bench.

``make_bench_app(bench_run)`` is the one way to build it (CLI and tests);
``run_bench_app(bench_run)`` runs it and returns an exit code.  ``bench_run``
follows the dashboard :class:`~lanemon.ui.app.Source` protocol plus ``kind``,
``plan``, ``cells_done``, ``interrupted``, ``results()`` and ``events``.

Every event is folded into a :class:`BenchTracker` (cheap counters); the
screen is repainted on a timer, and ``bench_run.results()`` -- the expensive
part -- is called only when a cell has ended (a ``mark`` with phase ``end``),
never per token.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.requests import RequestTimeline
from lanemon.ui.screens.bench import BenchScreen, cell_label
from lanemon.ui.themes import ThemeError, load_themes, resolve_theme

__all__ = ["BenchApp", "BenchTracker", "make_bench_app", "run_bench_app"]

START_PHASES = frozenset({"start", "cell_start", "cell-start", "begin"})
END_PHASES = frozenset({"end", "cell_end", "cell-end", "done"})
CELL_KEYS = ("level", "length")


class BenchTracker:
    """A pure fold of the bench's events: cell in progress, cells ended per lane, errors."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.version = 0
        self.cells_version = 0
        """Bumped when a cell ends: the signal to recompute results."""
        self.current: dict[str, str] = {}
        self.done_by_lane: Counter[str] = Counter()
        self.errors: list[tuple[int, str, str, str]] = []
        self.t_start: int | None = None
        self.last_t = 0
        self.bench_ended = False
        self._req_cell: dict[str, str] = {}

    def apply(self, ev: Event) -> None:
        self.version += 1
        self.last_t = max(self.last_t, ev.t)
        if self.t_start is None and ev.kind in (schema.MARK, schema.REQUEST):
            self.t_start = ev.t
        d = ev.data
        if ev.kind == schema.MARK:
            if d.get("bench") not in (None, self.kind):
                return
            phase = d.get("phase")
            lane = ev.lane or d.get("lane")
            is_cell = d.get("label") != "bench" and ("cell" in d or any(d.get(k) is not None for k in CELL_KEYS))
            if phase in START_PHASES:
                if is_cell and lane:
                    self.current[lane] = cell_label(self.kind, d)
                elif not is_cell:
                    self.t_start = ev.t if self.t_start is None or "config" in d else self.t_start
            elif phase in END_PHASES:
                if is_cell:
                    if lane:
                        self.done_by_lane[lane] += 1
                        self.current.pop(lane, None)
                    self.cells_version += 1
                else:
                    self.bench_ended = True
                    self.current.clear()
                    self.cells_version += 1
        elif ev.kind == schema.ERROR:
            cell = self.current.get(ev.lane or "", "")
            msg = str(d.get("message", ""))
            self.errors.append((ev.t, f"{ev.lane or '?'}{' ' + cell if cell else ''}", str(d.get("cls", "error")),
                                msg))

    @property
    def elapsed_ns(self) -> int:
        return max(0, self.last_t - (self.t_start or 0))


def _count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    try:
        return len(value)
    except TypeError:
        return 0


class BenchApp(App):
    """Bench progress over one bench run."""

    TITLE = "lanemon bench"
    CSS_PATH = "lanemon.tcss"
    BINDINGS = [Binding("q", "quit", "Stop and quit"), Binding("t", "timeline", "Timeline")]

    def __init__(self, bench_run: Any, *, theme: str, themes: dict[str, Any],
                 theme_warnings: list[str] | None = None, refresh_hz: float = 4.0) -> None:
        super().__init__()
        self.bench_run = bench_run
        self.kind = str(getattr(bench_run, "kind", "decode"))
        self.refresh_hz = refresh_hz
        self.theme_warnings = list(theme_warnings or [])
        for t in themes.values():
            self.register_theme(t)
        self.theme = theme
        self.tracker = BenchTracker(self.kind)
        self.timeline = RequestTimeline()
        """Every request of the run as a bar over time (``t``: the timeline screen)."""
        self.results: dict[str, Any] = {}
        self.results_computed = 0
        """How many times ``bench_run.results()`` was called (tests check it stays low)."""
        self.source_error: BaseException | None = None
        self.stopped_by_user = False
        self._drawn: tuple | None = None
        self._results_at = -1
        self._unsubscribe: list = []
        self._worker: Worker | None = None

    # -- lifecycle --------------------------------------------------------------------
    def lanes(self) -> list[str]:
        names = [d["name"] for d in getattr(self.bench_run, "lanes", []) or [] if isinstance(d, dict) and "name" in d]
        for cell in getattr(self.bench_run, "plan", []) or []:
            if cell.get("lane") and cell["lane"] not in names:
                names.append(cell["lane"])
        return names

    def get_default_screen(self) -> BenchScreen:
        return BenchScreen(self.kind, self.lanes())

    def on_mount(self) -> None:
        self._unsubscribe = [self.bench_run.bus.subscribe(self.tracker.apply),
                             self.bench_run.bus.subscribe(self.timeline.apply)]
        self._worker = self.run_worker(self._run_source(), exclusive=True, group="source", exit_on_error=False)
        self.set_interval(1 / self.refresh_hz, self.redraw)
        self.redraw(force=True)
        for msg in self.theme_warnings:
            self.notify(msg, title="theme", severity="warning", timeout=8, markup=False)

    async def _run_source(self) -> None:
        await self.bench_run.run()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "source":
            return
        if event.state == WorkerState.ERROR:
            self.source_error = event.worker.error
            self.notify(str(event.worker.error), title="bench failed", severity="error", timeout=30, markup=False)
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self.tracker.cells_version += 1  # final results once the run is over
        self.redraw(force=True)

    def on_unmount(self) -> None:
        self.bench_run.stop()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    # -- drawing --------------------------------------------------------------------------
    def state(self) -> str:
        run = self.bench_run
        if getattr(run, "interrupted", False) or self.stopped_by_user:
            return "stopped"
        if getattr(run, "finished", False) or self.tracker.bench_ended:
            return "finished"
        return "running"

    def progress_rows(self) -> list[tuple[str, int, int, str | None]]:
        plan = list(getattr(self.bench_run, "plan", []) or [])
        totals: Counter[str] = Counter(str(c.get("lane")) for c in plan if c.get("lane"))
        done = self.tracker.done_by_lane
        cells_done = getattr(self.bench_run, "cells_done", None)
        if isinstance(cells_done, (list, tuple, set)) and all(isinstance(c, dict) for c in cells_done):
            done = Counter(str(c.get("lane")) for c in cells_done)
        return [(lane, min(done.get(lane, 0), totals.get(lane, 0)) if totals.get(lane) else done.get(lane, 0),
                 totals.get(lane, 0), self.tracker.current.get(lane)) for lane in self.lanes()]

    def _fingerprint(self) -> tuple:
        run = self.bench_run
        return (self.tracker.version, self.tracker.cells_version, getattr(run, "finished", False),
                getattr(run, "interrupted", False), self.stopped_by_user)

    def redraw(self, force: bool = False) -> bool:
        """Repaint progress if anything changed; recompute results only if a cell ended since last time."""
        fp = self._fingerprint()
        if not force and fp == self._drawn:
            return False
        screen = self.screen
        if not isinstance(screen, BenchScreen) or not screen.is_mounted:
            return False
        self._drawn = fp
        run = self.bench_run
        current = next(iter(self.tracker.current.items()), None)
        plan = getattr(run, "plan", []) or []
        done = _count(getattr(run, "cells_done", None)) or sum(self.tracker.done_by_lane.values())
        screen.refresh_progress(
            state=self.state(),
            current=f"{current[1]} on {current[0]}" if current else None,
            done=done, total=len(plan), elapsed_ns=self.tracker.elapsed_ns,
            lane_rows=self.progress_rows(), errors=self.tracker.errors,
            recording_path=getattr(run, "recording_path", None),
        )
        if self.tracker.cells_version != self._results_at:
            self._results_at = self.tracker.cells_version
            try:
                self.results = run.results() or {}
            except Exception as exc:  # a results bug must not take the progress screen down
                self.notify(f"results: {exc}", severity="error", timeout=10, markup=False)
                self.results = {}
            self.results_computed += 1
            screen.refresh_results(self.results)
        return True

    # -- actions ----------------------------------------------------------------------------
    def action_timeline(self) -> None:
        """The per-request timeline, opened on the cell running now (``a`` shows the whole run)."""
        from lanemon.ui.screens.timeline import TimelineScreen

        if isinstance(self.screen, TimelineScreen):
            return
        cell = self.timeline.cells[-1] if self.timeline.cells else None
        self.push_screen(TimelineScreen(self.timeline, cell=cell))

    async def action_quit(self) -> None:
        """Stop the bench (finished cells are kept), let it clean up, then exit."""
        if not getattr(self.bench_run, "finished", False):
            self.stopped_by_user = True
        self.bench_run.stop()
        worker = self._worker
        if worker is not None and worker.is_running:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=10)
        self.exit(return_code=1 if self.source_error is not None else 0)


def make_bench_app(bench_run: Any, theme: str | None = None, *, refresh_hz: float = 4.0) -> BenchApp:
    """Build the bench app for ``bench_run`` (raises :class:`ThemeError` for an unknown theme)."""
    if refresh_hz <= 0:
        raise ValueError("refresh_hz must be positive")
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    name = resolve_theme(theme, themes)
    return BenchApp(bench_run, theme=name, themes=themes, theme_warnings=warnings, refresh_hz=refresh_hz)


def run_bench_app(bench_run: Any, theme: str | None = None) -> int:
    """Run the bench TUI until the bench ends and the user quits (q stops it early).

    Returns 0, or 1 when the bench failed; an unknown theme raises ``UsageError`` (exit 2).
    """
    from lanemon.cli.common import UsageError, err

    try:
        app = make_bench_app(bench_run, theme)
    except ThemeError as exc:
        raise UsageError(str(exc)) from None
    app.run()
    for warning in app.theme_warnings:
        err(f"warning: {warning}")
    if app.source_error is not None:
        err(f"bench failed: {app.source_error}")
        return 1
    return app.return_code or 0
