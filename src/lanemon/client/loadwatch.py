"""lanemon watches its own event loop: :class:`LoadWatch` publishes ``client_load`` events.

Every ``interval`` (20 ms) a task sleeps and measures how late it woke up:
the *loop lag*.  While nothing of lanemon's is in flight (a live session's
``idle``) it sleeps ``idle_interval`` (100 ms) instead, and a request's start
(:meth:`LoadWatch.wake`) ends that sleep at once: the request is watched at
20 ms from its first moment, and a stall right after the wake is the lag.  A loop blocked by lanemon's own work (drawing the dashboard,
parsing a burst of chunks) or a process the OS does not schedule (CPU hogs on
the machine) wakes late, and so does every socket read: the chunk timestamps
lanemon takes then say when lanemon got round to reading, not when the lane
wrote.  A short stall between two wake-ups would go unseen, so on Linux the
watcher also reads how long the loop's thread sat runnable on the OS run
queue without a CPU (``/proc/self/task/TID/schedstat``): the time CPU hogs
took from lanemon.  Once per ``window`` (0.5 s) the watcher publishes one
``client_load`` event with the window's largest and mean lag, the run-queue
wait and the slices it was spread over, the host's CPU and lanemon's own
(psutil), the share of CPU time the hypervisor stole from this VM in the window (``steal_pct``, from
psutil's ``cpu_times().steal``; Linux guests), and ``bound`` = the largest lag reached the threshold
(:data:`lanemon.measure.load.LAG_BOUND_MS`), or the run-queue wait did with at
least :data:`RUNQ_SLICE_MS` per slice (:func:`runq_starved`).  The fold and the per-request
``client_bound`` flag are in :mod:`lanemon.measure.load`.

A starved window is published as soon as the watcher sees it (it does not
wait for the window to end), so a request finishing right after it is judged
with it.  Never imports Textual.

Idle collections.  Python's full (generation-2) garbage collections stop every thread of the process, the
measuring one included, for 16-240 ms in a live dashboard (Textual's strips are cyclic garbage): each one
that fell inside a probe made it client-bound ("lanemon's own work").  A live session holds automatic full
collections (workloads/collector.py) and gives the watcher ``idle`` (no request of lanemon's in flight):
every ``collect_every`` seconds the watcher runs the full collection itself at a moment when nothing is
measured, between two of its own samples, so its pause is neither a starved window nor inside any request.
If the session is never idle for ``collect_max_wait`` seconds it collects anyway (memory stays bounded;
that window is then judged like any other).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from lanemon import events as schema
from lanemon.events import Clock, Event
from lanemon.measure.load import LAG_BOUND_MS
from lanemon.results.readings import LoopWindow, event_data

INTERVAL_S = 0.02
IDLE_INTERVAL_S = 0.1
"""The watch's period while nothing of lanemon's is in flight (a live session's ``idle``): there is nothing to
judge then, and 50 wake-ups a second cost 1.2 % of a core on a 2-core VM (10 a second: 0.3 %, the windows'
psutil readings included).  A request's start calls :meth:`LoadWatch.wake`, which brings the 20 ms watch back
at once, so every request is watched from its first moment as closely as before."""
WINDOW_S = 0.5
COLLECT_EVERY_S = 10.0
"""Seconds between the idle full collections of a live session (see the module's note)."""
COLLECT_MAX_WAIT_S = 60.0
"""A session never idle this long past its due collection collects anyway."""


def _schedstat_path() -> str | None:
    """This thread's scheduler statistics (Linux): ns on a CPU, ns waiting on the run queue, slices."""
    try:
        path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        with open(path, "rb") as f:
            f.read()
        return path
    except (OSError, AttributeError):
        return None


RUNQ_SLICE_MS = 2.0
"""The run-queue wait counts as starvation only when the loop waited this long per time slice on average.
A busy but unstarved client (a simulator sharing the two cores at C24) wakes hundreds of times a window and
waits a few microseconds each time: 20-50 ms in all, which says nothing about any one timestamp.  CPU hogs
make every wake-up wait for a slice of theirs (milliseconds each)."""


def _runq_ns(path: str | None) -> tuple[int, int] | None:
    """(ns waited on the run queue, time slices run) of the thread, from its schedstat."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            fields = f.read().split()
        return int(fields[1]), int(fields[2])
    except (OSError, ValueError, IndexError):
        return None


def runq_starved(runq_ms: float | None, slices: int, threshold_ms: float) -> bool:
    """Did the run-queue wait of one window starve the loop?  At least ``threshold_ms`` in all, and at least
    :data:`RUNQ_SLICE_MS` per slice run on average (many short waits are a busy machine, not a starved client)."""
    if runq_ms is None or runq_ms < threshold_ms:
        return False
    return runq_ms / max(1, slices) >= RUNQ_SLICE_MS


def _total(times: Any) -> float:
    """All CPU time of a ``cpu_times()`` reading; guest time is already inside user and nice on Linux."""
    return sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)


def steal_pct(before: Any, after: Any) -> float | None:
    """The share (%) of all CPU time between two ``psutil.cpu_times()`` readings that the hypervisor gave
    to other guests (``steal``); None where the platform has no steal figure or no time went by."""
    if before is None or after is None or not hasattr(after, "steal"):
        return None
    total = _total(after) - _total(before)
    if total <= 0:
        return None
    return round(max(0.0, min(100.0, 100.0 * (after.steal - before.steal) / total)), 2)


class LoadWatch:
    """Sample the event loop's lag (and the host CPU) and publish ``client_load`` events."""

    def __init__(self, clock: Clock, emit: Callable[[Event], Any], *, interval: float = INTERVAL_S,
                 window: float = WINDOW_S, threshold_ms: float = LAG_BOUND_MS, host: bool = True,
                 idle: Callable[[], bool] | None = None, collect_every: float = COLLECT_EVERY_S,
                 collect_max_wait: float = COLLECT_MAX_WAIT_S, collect: Callable[[], Any] = gc.collect,
                 idle_interval: float = IDLE_INTERVAL_S, worker: int | None = None) -> None:
        self.clock = clock
        self.worker = worker
        """The bench worker whose loop this is (its windows' ``worker``); None: the main process."""
        self.idle = idle
        self.idle_interval = idle_interval
        """The period while ``idle()`` (none without ``idle``; never shorter than ``interval``)."""
        self.idle_sleeps = 0
        self.woken = 0
        """Idle sleeps taken, and how many a request's start cut short (:meth:`wake`; tests read them)."""
        self.collect_every = collect_every
        self.collect_max_wait = collect_max_wait
        self._collect = collect
        self.idle_collections = 0
        self.forced_collections = 0
        self.emit = emit
        self.interval = interval
        self.window = max(window, interval)
        self.threshold_ms = threshold_ms
        self._task: asyncio.Task | None = None
        self._proc = None
        self._psutil = None
        self._times: Any = None
        if host:
            try:
                import psutil

                self._psutil = psutil
                self._proc = psutil.Process(os.getpid())
                psutil.cpu_percent(interval=None)  # prime: the first reading is meaningless
                self._proc.cpu_percent(interval=None)
                self._times = psutil.cpu_times()
            except Exception:  # psutil missing or /proc unreadable: lag alone still works
                self._psutil = self._proc = None
        self.windows = 0
        self.bound_windows = 0
        self._schedstat: str | None = None
        self._runq_last: int | None = None
        self._open: tuple[int, list[float]] | None = None
        """The window in progress (its start, its lag samples): published by :meth:`stop`."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.Handle | None = None
        """The timer (or, after a wake, the callback) of the next sample."""
        self._sleeping_idle = False
        self._idle_since = 0.0
        self._done: asyncio.Future | None = None
        self._window_ns = int(self.window * 1e9)
        self._last_collect = 0.0

    def _cpu(self) -> dict[str, float]:
        if self._psutil is None:
            return {}
        out: dict[str, float] = {}
        with contextlib.suppress(Exception):
            out["cpu_pct"] = float(self._psutil.cpu_percent(interval=None))
            out["proc_cpu_pct"] = float(self._proc.cpu_percent(interval=None))  # type: ignore[union-attr]
        with contextlib.suppress(Exception):
            now = self._psutil.cpu_times()
            prev, self._times = self._times, now
            steal = steal_pct(prev, now)
            if steal is not None:
                out["steal_pct"] = steal
        return out

    def _runq(self) -> tuple[float, int] | None:
        """(ms waited on the run queue, slices run) since the last call."""
        now = _runq_ns(self._schedstat)
        prev, self._runq_last = self._runq_last, now
        if now is None or prev is None:
            return None
        return max(0, now[0] - prev[0]) / 1e6, max(0, now[1] - prev[1])

    def _publish(self, t0: int, lags: list[float], runq: tuple[float, int] | None,
                 interval: float | None = None) -> None:
        lag = max(lags) if lags else 0.0
        runq_ms, slices = runq if runq is not None else (None, 0)
        starved_runq = runq_starved(runq_ms, slices, self.threshold_ms)
        bound = lag >= self.threshold_ms or starved_runq
        if lag >= self.threshold_ms and not starved_runq:
            # the samples before this one were fine: the starved stretch is this sleep and its lag
            slept = self.interval if interval is None else interval
            t0 = max(t0, self.clock.now() - int((slept * 1000.0 + lag) * 1e6))
        data = LoopWindow(t0=t0, lag_ms=round(lag, 3), lag_mean_ms=round(sum(lags) / len(lags), 3) if lags else 0.0,
                          samples=len(lags), bound=bound, threshold_ms=self.threshold_ms,
                          runq_ms=None if runq_ms is None else round(runq_ms, 3),
                          runq_slices=None if runq_ms is None else slices, worker=self.worker, **self._cpu())
        self.windows += 1
        self.bound_windows += bound
        self.emit(Event(self.clock.now(), schema.CLIENT_LOAD, None, None, event_data(data)))

    async def run(self) -> None:
        """Watch until cancelled (:meth:`stop` publishes the window in progress).

        Each sample is a timer callback on the loop (:meth:`_arm` sets it, :meth:`_tick` takes the sample and sets
        the next one), not a task sleeping: a task's sleep costs the loop two passes per sample (the timer fires
        and resolves the sleep; the task runs on the next pass), a callback one.  On this 2-core VM a pass is
        ~50-110 us of CPU, and the watch runs 50 times a second while a request is in flight (docs/PERFORMANCE.md
        section 9).  What is measured is the same: how late the timer ran after it was due."""
        t0 = self.clock.now()
        lags: list[float] = []
        # an empty window at once: a reader knows from the first moment that this stream is watched, so a request
        # that ends before the first whole window waits to be judged (folds/dashboard.py) instead of passing for
        # one that ran unwatched (a race at --time-scale 0.02 is over in less than a window)
        self._publish(t0, lags, None)
        self._open = (t0, lags)
        self._window_ns = int(self.window * 1e9)
        self._schedstat = _schedstat_path()
        self._runq_last = _runq_ns(self._schedstat)
        self._last_collect = time.perf_counter()
        loop = self._loop = asyncio.get_running_loop()
        done = self._done = loop.create_future()
        try:
            self._arm()
            await done  # until cancelled, or a sample failed (its exception)
        finally:
            self._done = None
            self._sleeping_idle = False
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None

    def _arm(self) -> None:
        """The top of one sample: ask ``idle`` once, run a due idle collection, set the timer of the sample."""
        before = time.perf_counter()
        idle = self.idle is not None and self.idle()  # asked once a sample (nothing else runs meanwhile)
        if self.idle is not None and before - self._last_collect >= self.collect_every:
            if idle:
                # between two samples on this loop: no request can start meanwhile, and nothing measured
                # waited for it, so its pause is not a lag of the next sleep
                self._collect()
                self.idle_collections += 1
                before = self._last_collect = time.perf_counter()
            elif before - self._last_collect >= self.collect_every + self.collect_max_wait:
                self._collect()  # never idle: collect anyway, and judge the pause like any other lag
                self.forced_collections += 1
                self._last_collect = time.perf_counter()
        loop = self._loop
        assert loop is not None
        if idle and self.idle_interval > self.interval:
            # nothing in flight: a slower watch until a request starts (wake)
            due = before + self.idle_interval
            self.idle_sleeps += 1
            self._sleeping_idle = True
            self._idle_since = before
            self._handle = loop.call_later(max(0.0, due - time.perf_counter()), self._tick, due, before)
        else:
            due = before + self.interval
            self._handle = loop.call_later(self.interval, self._tick, due, before)

    def _tick(self, due: float, before: float) -> None:
        """The sample: how late the watcher ran after it was due (its timer, or a request's start); then the next."""
        self._handle = None
        self._sleeping_idle = False
        try:
            lag_ms = max(0.0, (time.perf_counter() - due) * 1000.0)
            t0, lags = self._open if self._open is not None else (self.clock.now(), [])
            lags.append(lag_ms)
            now = self.clock.now()
            if lag_ms >= self.threshold_ms or now - t0 >= self._window_ns:
                # a starved sample is published at once
                self._publish(t0, lags, self._runq(), due - before)
                self._open = (now, [])
            self._arm()
        except BaseException as exc:  # noqa: BLE001 - ends run() with it, as the sample's exception did before
            done = self._done
            if done is not None and not done.done():
                done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def wake(self) -> None:
        """A request of lanemon's starts (call on the watcher's loop): an idle sleep ends now and the
        watch is back at ``interval``, so the request is watched from its start (a stall right after
        the wake delays the watcher and is its lag, as a late timer's would be)."""
        handle = self._handle
        if self._sleeping_idle and handle is not None and self._loop is not None:
            handle.cancel()
            self._sleeping_idle = False
            now = time.perf_counter()
            self._handle = self._loop.call_soon(self._tick, now, self._idle_since)
            self.woken += 1

    def start(self) -> asyncio.Task:
        """Run in the background of the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name="lanemon-loadwatch")
        return self._task

    async def stop(self) -> None:
        """Stop watching, and publish the window in progress: its samples so far and the run-queue wait up to now.
        Without it the last requests of a run (those ending after the last whole window) could never be judged
        by a reader that waits for the watcher to report past a request's end (folds/dashboard.py), and a
        recording's exporter would leave them out."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if task is not None and self._open is not None:
            t0, lags = self._open
            self._open = None
            if self.clock.now() > t0:
                self._publish(t0, lags, self._runq())


__all__ = ["COLLECT_EVERY_S", "COLLECT_MAX_WAIT_S", "IDLE_INTERVAL_S", "INTERVAL_S", "LoadWatch", "RUNQ_SLICE_MS", "WINDOW_S", "runq_starved", "steal_pct"]
