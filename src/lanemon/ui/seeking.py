"""Replay seeking on the app (``←``/``→`` 10 s, ``[``/``]`` markers, ``Home``/``End``, the timeline bar's clicks)
and the fold snapshots a backward seek rewinds: a mixin of :class:`lanemon.ui.app.LanemonApp`, apart so the
app's module holds its lifecycle and plumbing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from textual.worker import WorkerState

from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.support import copy_fold

MARKER_GAP_NS = 500_000_000
"""Markers closer than this are one stop for ``[`` / ``]``."""


class ReplaySeeking:
    """The seek actions and fold snapshots of :class:`~lanemon.ui.app.LanemonApp` (its attributes: ``source``,
    the folds, ``redraw``, ``run_worker``, ``notify``, ``check_action``, ``_run_source``)."""

    def seekable_states(self) -> list[Any]:
        """Everything folded from the bus that a backward seek must rewind (plain objects)."""
        folds = [self.state, self.series, self.race_state, self.timeline, self.gauntlet]
        return folds + ([self.bench, self.bench_results] if self.bench is not None else [])

    def _snapshot_states(self) -> list[Any]:
        return [obj.snapshot() if hasattr(obj, "snapshot") else copy_fold(obj.__dict__)
                for obj in self.seekable_states()]

    def _restore_states(self, snapshot: list[Any]) -> None:
        # in place: the screens keep pointing at the same objects
        for obj, saved in zip(self.seekable_states(), snapshot):
            if hasattr(obj, "restore"):
                obj.restore(saved)
            else:
                obj.__dict__.clear()
                obj.__dict__.update(copy_fold(saved))

    def _seek(self, seek: Callable[[], Awaitable[Any]], what: str) -> None:
        async def run() -> None:
            speed = self.source.speed
            if (speed is None or speed == float("inf")) and not self.source.paused:
                self.source.toggle_pause()  # at max speed a seek would play straight on to the end: hold it
            result = await seek()
            if result is False:
                self.notify(f"no {what}", timeout=2)
            if isinstance(self.screen, LanemonScreen):
                self.screen.drawn = None
            self.redraw(force=True)
            running = any(w.group == "source" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                          for w in self.workers)
            if not self.source.finished and not running:  # seeked back after the end: play on
                self.run_worker(self._run_source(), exclusive=True, group="source", exit_on_error=False)

        self.run_worker(run(), group="seek", exclusive=True, exit_on_error=False)

    def seek_to(self, target_ns: int) -> None:
        """Move a replay's playhead to session time ``target_ns`` (the timeline bar's clicks)."""
        if self.check_action("seek_by", ()):
            self._seek(lambda: self.source.seek(target_ns), "position")

    def action_seek_by(self, seconds: float) -> None:
        self._seek(lambda: self.source.seek_relative(float(seconds)), "position")

    def marker_target(self, direction: int) -> int | None:
        """Where ``]`` (``direction > 0``) or ``[`` goes: the start of the next (previous) group of
        markers, markers less than half a second apart counting as one (a cell's end and the next
        cell's start), so one press moves to the next distinct point."""
        times = sorted(m.t for m in getattr(self.source, "markers", None) or [])
        starts = [t for i, t in enumerate(times) if i == 0 or t - times[i - 1] > MARKER_GAP_NS]
        head = int(getattr(self.source, "playhead_ns", 0) or 0)
        if direction > 0:
            return next((t for t in starts if t > head), None)
        return next((t for t in reversed(starts) if t < head - MARKER_GAP_NS), None)

    def action_seek_marker(self, direction: int) -> None:
        target = self.marker_target(int(direction))
        if target is None:
            self.notify("no next marker" if int(direction) > 0 else "no earlier marker", timeout=2)
            return
        self._seek(lambda: self.source.seek(target), "marker")

    def action_seek_start(self) -> None:
        self._seek(lambda: self.source.seek(0), "position")

    def action_seek_end(self) -> None:
        self._seek(lambda: self.source.seek(self.source.duration_ns), "position")
