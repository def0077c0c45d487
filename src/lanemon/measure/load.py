"""Was lanemon itself starved? The ``client_load`` events folded into intervals (pure, no IO).

:class:`lanemon.client.loadwatch.LoadWatch` samples lanemon's own event loop
(how late a 100 ms sleep wakes up) with the host's CPU and publishes one
``client_load`` event per window (docs/METRICS.md, "Client-bound samples")::

    t0          ns, session clock: start of the window (the event's ``t`` is its end)
    lag_ms      the largest loop lag seen in the window
    lag_mean_ms mean loop lag of the window's samples
    samples     sleeps measured in the window
    runq_ms     how long lanemon's loop thread sat runnable without a CPU in the window (Linux; absent elsewhere)
    cpu_pct     host CPU busy %, all cores (psutil)
    proc_cpu_pct lanemon's own process, % of one core
    steal_pct   share of all CPU time the hypervisor gave to other guests in the window (psutil
                ``cpu_times().steal``; Linux VMs; absent elsewhere and in recordings made before it)
    bound       True when lanemon was starved in the window (lag_ms >= the threshold, or runq_ms >= it at
                ≥ 2 ms a time slice: client/loadwatch.runq_starved)
    threshold_ms the lag that counts as starved

A request whose span (sent -> end) overlaps a bound window is *client-bound*:
its timestamps say how late lanemon read the chunks, not how fast the lane
wrote them.  :func:`mark_client_bound` adds ``"client_bound"`` to such a
record's ``flags``; figures from it are counted, never shown as lane speed.
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from lanemon import events as schema
from lanemon.events import Event

CLIENT_BOUND = "client_bound"
"""The per-request flag (``RequestRecord.flags``) and the JSON key of the per-cell count."""

LAG_BOUND_MS = 20.0
"""Loop lag that counts as starved: a chunk read this late moves an inter-token gap of a 50 tok/s stream
by a whole token."""

STARVED_SHARE = 0.02
"""A bench cell is *unreliable* when lanemon was held up for this share of its span or more (the stalls of
its starved windows, summed).  A stall moves a throughput figure by at most its length over the span: 2 %
is well inside the 5 % noise band, while a client that cannot keep up (CPU hogs, a saturated loop) is held
up in window after window, far more than 2 %.  An isolated hiccup (a 25 ms lag in a 4 s level, seen a few
times a minute on the development VM) still flags the requests it touched, and the cell counts them."""

KIND = getattr(schema, "CLIENT_LOAD", "client_load")


class ClientLoad:
    """Fold of ``client_load`` events: the windows in which lanemon was starved.

    ``keep_ns``: how far back (session time, from the latest window) the starved windows are kept -- a
    live dashboard's fold, which gains two windows a second for as long as it runs, keeps what its oldest
    sample can still ask about; None (a bench, a report) keeps every window.  ``stalls_ns``: the same for
    :attr:`stalls` and :attr:`bound_stalls` (default ``keep_ns``): the live folds never read them and keep
    a minute.
    """

    def __init__(self, keep_ns: int | None = None, stalls_ns: int | None = None) -> None:
        self.keep_ns = keep_ns
        self.stalls_ns = keep_ns if stalls_ns is None else stalls_ns
        self._starts = array("q")
        self._ends = array("q")
        """Merged (start, end) ns intervals in which lanemon was starved, in time order: two typed columns
        (16 bytes an interval, no object each: a live fold keeps 16 minutes of them; :attr:`bound`)."""
        self.seen_until: int | None = None
        """End of the latest window reported (None: no watcher in this stream)."""
        self.windows = 0
        self.bound_windows = 0
        self.last = Window()
        """The latest window's figures."""
        self.last_bound = Window()
        """The latest starved window's figures (what :func:`starvation_cause` explains)."""
        self.last_bound_t: int | None = None
        self.max_lag_ms = 0.0
        self.stalls: deque[tuple[int, int, float]] = deque()
        """(t0, t, ms) of every window (of the last ``keep_ns``): the longest lanemon may have been held up in it
        (lag or run-queue wait)."""
        self.bound_stalls: deque[tuple[int, int, float]] = deque()
        """The same, for the starved windows only."""

    @property
    def watching(self) -> bool:
        return self.seen_until is not None

    def apply(self, ev: Event) -> bool:
        """Fold one event; True when it was a ``client_load`` event."""
        if ev.kind != KIND:
            return False
        d = ev.data or {}
        self.windows += 1
        self.last = window_of(d)
        if self.last.lag_ms is not None:
            self.max_lag_ms = max(self.max_lag_ms, self.last.lag_ms)
        self.seen_until = ev.t if self.seen_until is None else max(self.seen_until, ev.t)
        t0 = d.get("t0")
        start0 = t0 if isinstance(t0, int) and not isinstance(t0, bool) and t0 <= ev.t else ev.t
        stall = max(self.last.lag_ms or 0.0, self.last.runq_ms or 0.0)
        self.stalls.append((start0, ev.t, stall))
        if self.last.bound:
            self.bound_windows += 1
            self.last_bound, self.last_bound_t = self.last, ev.t
            self.bound_stalls.append((start0, ev.t, stall))
            t0 = d.get("t0")
            start = t0 if isinstance(t0, int) and not isinstance(t0, bool) and t0 <= ev.t else ev.t
            self._add(start, ev.t)
        if self.stalls_ns is not None:
            cutoff = self.seen_until - self.stalls_ns
            for dq in (self.stalls, self.bound_stalls):
                while dq and dq[0][1] < cutoff:
                    dq.popleft()
        if self.keep_ns is not None:
            self._trim(self.seen_until - self.keep_ns)
        return True

    @property
    def bound(self) -> list[tuple[int, int]]:
        """The merged (start, end) ns intervals in which lanemon was starved, in time order (a copy)."""
        return list(zip(self._starts, self._ends))

    def _trim(self, cutoff: int) -> None:
        """Forget the starved windows that ended before ``cutoff`` (a bounded fold: ``keep_ns``)."""
        ends = self._ends
        if ends and ends[0] < cutoff:
            i = bisect.bisect_left(ends, cutoff)
            del self._starts[:i]
            del ends[:i]

    def _add(self, start: int, end: int) -> None:
        starts, ends = self._starts, self._ends
        if ends and start <= ends[-1]:
            starts[-1] = min(starts[-1], start)
            ends[-1] = max(ends[-1], end)
            return
        i = bisect.bisect_left(starts, start)  # as bisect_left on (start, end) pairs
        while i < len(starts) and starts[i] == start and ends[i] < end:
            i += 1
        starts.insert(i, start)
        ends.insert(i, end)

    def overlaps(self, start: int | None, end: int | None) -> bool:
        """True when [start, end] touches a window in which lanemon was starved."""
        starts = self._starts
        if start is None or end is None or not starts:
            return False
        i = bisect.bisect_right(starts, end)  # the windows before i start at or before end (as on pairs)
        # (the last two, as the windows are merged where they touch; no generator: it is called per sample)
        ends = self._ends
        return (i > 0 and ends[i - 1] >= start) or (i > 1 and ends[i - 2] >= start)

    def worst_stall_s(self, start: int | None, end: int | None) -> float:
        """The longest lanemon may have been held up (loop lag or run-queue wait) in the windows touching
        [start, end], in seconds: how late it may have taken any timestamp of a request in that span."""
        if start is None or end is None:
            return 0.0
        return max((ms for t0, t, ms in self.stalls if t0 <= end and t >= start), default=0.0) / 1000.0

    def starved_s(self, start: int | None, end: int | None) -> float:
        """How long lanemon was held up in the starved windows touching [start, end], summed, in seconds: each
        window's longest lag or its run-queue wait, whichever is more, but never more than the part of the window
        inside [start, end] (a stall cannot hold up more of the span than the span holds: the sum is at most
        ``end - start``, so a share of it is at most 1 -- also where the windows of several processes overlap,
        a bench's ``--workers`` and its main process)."""
        if start is None or end is None:
            return 0.0
        total_ms = 0.0
        for t0, t, ms in self.bound_stalls:
            if t0 <= end and t >= start:
                inside_ms = (min(t, end) - max(t0, start)) / 1e6
                total_ms += min(ms, inside_ms) if t > t0 else min(ms, (end - start) / 1e6)
        return min(total_ms / 1000.0, (end - start) / 1e9)

    def covers(self, t: int | None) -> bool:
        """True when the watcher has reported past ``t`` (so a request ending at ``t`` can be judged)."""
        return t is not None and self.seen_until is not None and self.seen_until >= t

    @property
    def is_bound(self) -> bool:
        """The latest window was starved."""
        return self.last.bound


class Window(NamedTuple):
    """One ``client_load`` window's figures (its event data, read as untrusted: a value that is not a number is
    None; see the module docstring for each)."""

    lag_ms: float | None = None
    runq_ms: float | None = None
    cpu_pct: float | None = None
    proc_cpu_pct: float | None = None
    steal_pct: float | None = None
    bound: bool = False


def window_of(d: Mapping[str, object]) -> Window:
    """A ``client_load`` event's data as a :class:`Window`."""
    return Window(*(_num(d.get(k)) for k in ("lag_ms", "runq_ms", "cpu_pct", "proc_cpu_pct", "steal_pct")),
                  bound=bool(d.get("bound")))


STEAL_PCT = 5.0
"""CPU steal (% of all CPU time in a starved window) that names the hypervisor as the cause: on a VM whose
host is oversubscribed, every vCPU waits for the others' guests, lanemon and its lanes alike."""
OWN_CPU_PCT = 80.0
"""lanemon's own process at this share of one core or more in a starved window: lanemon is its own
bottleneck (one Python thread measures, folds and draws)."""
QUIET_HOST_PCT = 50.0
"""Under this host CPU (and a run-queue wait under half the lag) the machine had CPUs to spare: the delay was
inside lanemon (its drawing thread or a garbage collection holding the interpreter), not the machine's load."""


@dataclass(frozen=True)
class Starvation:
    """Why lanemon was starved in a window, in words a user can act on."""

    cause: str
    """``steal`` (the hypervisor), ``own`` (lanemon's own CPU) or ``machine`` (other processes)."""
    why: str
    """What the window's figures say, e.g. ``this machine's load: CPU 97 %, waited 34 ms for a CPU``."""
    advice: str
    """What to do about it."""
    short: str = ""
    """A few words for a status bar: ``CPU steal 22 %``, ``lanemon's CPU 97 %``, ``machine load``."""


def starvation_cause(w: Window) -> Starvation:
    """Explain one starved ``client_load`` window (its data): CPU steal first (nothing on this machine can
    fix it), then lanemon's own CPU, then lanemon's own work on a machine with CPUs to spare (a quiet host
    and little run-queue wait: :data:`QUIET_HOST_PCT`), else the machine's other processes (the run-queue
    wait, the host CPU)."""
    steal, own, host, runq, lag = w.steal_pct, w.proc_cpu_pct, w.cpu_pct, w.runq_ms, w.lag_ms
    if steal is not None and steal >= STEAL_PCT:
        return Starvation("steal", f"CPU steal: the hypervisor took {steal:.0f} % of this VM's CPU time",
                          "use a VM with dedicated vCPUs, or run lanemon on another machine", f"CPU steal {steal:.0f} %")
    if own is not None and own >= OWN_CPU_PCT:
        return Starvation("own", f"lanemon's own CPU: {own:.0f} % of a core",
                          "fewer streams per lanemon, a longer --interval, or --headless (no screen to draw)",
                          f"lanemon's CPU {own:.0f} %")
    if host is not None and host < QUIET_HOST_PCT and lag and (runq or 0.0) < lag / 2:
        return Starvation("internal", f"lanemon's own work: its measuring loop woke {lag:.0f} ms late while this "
                          f"machine was {host:.0f} % busy (drawing or a garbage collection held the interpreter)",
                          "a smaller terminal, pause the screen (p) while a measurement matters, or run it with "
                          "--headless", "lanemon's own work")
    parts = [f"CPU {host:.0f} %" if host is not None else "",
             f"waited {runq:.0f} ms for a CPU" if runq else (f"woke {lag:.0f} ms late" if lag else "")]
    detail = ", ".join(p for p in parts if p)
    return Starvation("machine", "this machine's load" + (f": {detail}" if detail else ""),
                      "stop other CPU-heavy work here, or run lanemon with a higher priority (nice -n -5) "
                      "or on another machine", "machine load")


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def client_load(events: Iterable[Event]) -> ClientLoad:
    fold = ClientLoad()
    for ev in events:
        fold.apply(ev)
    return fold


def flag(rec: Any, name: str = CLIENT_BOUND) -> None:
    """Add ``name`` to ``rec.flags`` (a set; created when the record has none)."""
    flags = getattr(rec, "flags", None)
    if flags is None:
        try:
            rec.flags = {name}
        except AttributeError:  # a slotted record without ``flags``: nothing to mark
            return
    elif isinstance(flags, set):
        flags.add(name)
    elif isinstance(flags, list):
        if name not in flags:
            flags.append(name)


def is_client_bound(rec: Any, load: ClientLoad) -> bool:
    return load.overlaps(getattr(rec, "sent_ns", None), getattr(rec, "end_ns", None))


def has_flag(rec: Any, name: str = CLIENT_BOUND) -> bool:
    return name in (getattr(rec, "flags", None) or ())


def mark_client_bound(records: Iterable[Any], load: ClientLoad | Iterable[Event]) -> int:
    """Flag every record whose span overlaps a starved window; returns how many were flagged."""
    if not isinstance(load, ClientLoad):
        load = client_load(load)
    n = 0
    for rec in records:
        if is_client_bound(rec, load):
            flag(rec)
            n += 1
    return n


__all__ = ["CLIENT_BOUND", "ClientLoad", "KIND", "LAG_BOUND_MS", "OWN_CPU_PCT", "STEAL_PCT", "Starvation", "Window",
           "client_load", "flag", "has_flag", "is_client_bound", "mark_client_bound", "starvation_cause", "window_of"]
