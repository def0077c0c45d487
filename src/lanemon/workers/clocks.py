"""Clocks and liveness of workers on other hosts (pure): the NTP-style offset, the version check, lost hosts.

Each host has its own monotonic clock.  The main process runs an exchange of
``ROUNDS`` round trips with each worker, ``(t_main_send, t_worker, t_main_recv)``
(raw ``perf_counter_ns`` readings of each side); the worker's offset is
``t_worker - (t_main_send + t_main_recv) / 2`` of the round trip with the
smallest delay, and its uncertainty half that delay: the worker read its clock
somewhere inside the round trip, so the true offset lies within
``[t_worker - t_main_recv, t_worker - t_main_send]``.  The worker subtracts
the offset from every stamp (its clock's ``t0`` becomes the main ``t0`` plus
the offset), so the merge and the recording stay on the main clock
(docs/WORKERS.md, "Clocks").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lanemon.workers.messages import WorkerHost

ROUNDS = 8
"""Round trips per exchange."""
RESYNC_S = 60.0
"""The exchange is repeated this often to follow drift (1 ppm is 60 µs a minute)."""
HEARTBEAT_LOST_S = 5.0
"""A busy worker not heard from for this long is asked whether it is still there (a ping, answered within
``PING_S``); one that does not answer is lost (its host is down or cut off)."""
PING_S = 2.5
"""How long a silent worker has to answer the ping before its host is taken for lost."""
KEPT_MAX = 3
"""A worker that answers this many pings in a row without sending a batch between them is lost all the same
(its process is there, its job is not: nothing it sends will come)."""
WATCH_S = 0.25
"""The heartbeat watch looks this often."""
MAIN_STALL_S = 0.5
"""A watch that woke this much later than it asked was held up itself (lanemon's own process starved): the
silence it could not hear is not counted against the workers (:func:`credit_own_stall`)."""


def clock_offset(samples: Iterable[tuple[int, int, int]]) -> tuple[int, int]:
    """(offset ns, uncertainty ns) from ``(t_main_send, t_worker, t_main_recv)`` round trips: the one with the
    smallest delay decides.  Raises ValueError without a usable sample."""
    best: tuple[int, int, int] | None = None
    for s, w, r in samples:
        if r < s:
            continue
        if best is None or r - s < best[2] - best[0]:
            best = (s, w, r)
    if best is None:
        raise ValueError("no round trip to measure a clock offset from")
    s, w, r = best
    return w - (s + r) // 2, (r - s + 1) // 2


def version_mismatch(hosts: Sequence[WorkerHost], mine: str) -> str | None:
    """One line naming every worker host that runs another lanemon version than ``mine``, or None."""
    bad = [h for h in hosts if h.version != mine]
    if not bad:
        return None
    named = ", ".join(f"{h.host or '?'} ({(h.node or '?')[:12]}) runs lanemon {h.version}" for h in bad)
    return f"load host version mismatch: {named}; this is lanemon {mine}: install the same version on every load host"


def silent_workers(last_heard: Mapping[int, float], busy: Iterable[int], now: float,
                   limit_s: float = HEARTBEAT_LOST_S) -> list[int]:
    """The busy workers not heard from for ``limit_s`` or more (``last_heard``: monotonic s of their last
    message), oldest silence first."""
    late = [(last_heard[w], w) for w in busy if w in last_heard and now - last_heard[w] >= limit_s]
    return [w for _, w in sorted(late)]


def credit_own_stall(last_heard: dict[int, float], elapsed_s: float, asked_s: float = WATCH_S) -> float:
    """The watch asked to wake after ``asked_s`` and woke ``elapsed_s`` later: beyond ``MAIN_STALL_S`` of grace,
    the main process itself was held up and could not read the workers' heartbeats (they wait in its queue).  That
    stall is added to every worker's last-heard time, so it never counts as a worker's silence; returns it (0.0
    when the watch was on time)."""
    stall = elapsed_s - asked_s - MAIN_STALL_S
    if stall <= 0:
        return 0.0
    for w in last_heard:
        last_heard[w] += stall
    return stall


def host_label(host: WorkerHost | None) -> str:
    """``vm (7d6383363879)``: a worker host's name and the start of its Ray node id."""
    if host is None:
        return "? (?)"
    return f"{host.host or host.address or '?'} ({(host.node or '?')[:12]})"
