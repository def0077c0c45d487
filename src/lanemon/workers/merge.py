"""Merge the event streams of several workers into one, in timestamp order (pure).

Every worker stamps its events with the one session clock (``perf_counter_ns``
is the machine's monotonic clock, the same in every process of one machine;
see docs/WORKERS.md for hosts with clocks of their own) and sends, besides its
events, a heartbeat with its current time when it has nothing to say.  A
worker's own events come in time order, so once every live worker has been
heard from up to time *W* (the *watermark*: the smallest last-seen time over
the live workers), nothing earlier can still arrive: every buffered event up to
*W* is released, oldest first.  A finished worker no longer holds the watermark
back.  Events of equal time keep their arrival order.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterable
from typing import Any


class Merger:
    """Buffer events from several sources; :meth:`ready` yields them in time order up to the watermark."""

    def __init__(self, sources: Iterable[Hashable]) -> None:
        self._seen: dict[Hashable, int] = {s: -1 for s in sources}
        self._heap: list[tuple[int, int, Any]] = []
        self._seq = itertools.count()
        self.released = 0

    @property
    def pending(self) -> int:
        return len(self._heap)

    @property
    def watermark(self) -> float:
        return min(self._seen.values()) if self._seen else float("inf")

    def push(self, source: Hashable, t: int, item: Any) -> None:
        """An event of ``source`` at time ``t`` (a source's own events come in time order)."""
        heapq.heappush(self._heap, (t, next(self._seq), item))
        if source in self._seen and t > self._seen[source]:
            self._seen[source] = t

    def heartbeat(self, source: Hashable, t: int) -> None:
        """``source`` has nothing before ``t`` left to send."""
        if source in self._seen and t > self._seen[source]:
            self._seen[source] = t

    def finish(self, source: Hashable) -> None:
        """``source`` will send nothing more."""
        self._seen.pop(source, None)

    def ready(self) -> list[Any]:
        """Every buffered item at or before the watermark, oldest first."""
        w = self.watermark
        out = []
        heap = self._heap
        while heap and heap[0][0] <= w:
            out.append(heapq.heappop(heap)[2])
        self.released += len(out)
        return out

    def drain(self) -> list[Any]:
        """Everything still buffered, oldest first (when every source finished or failed)."""
        out = [heapq.heappop(self._heap)[2] for _ in range(len(self._heap))]
        self.released += len(out)
        return out
