"""Python's garbage collector kept out of a benchmark's timed windows.

A bench keeps every event it publishes (its figures are computed from them): by the C16 level of a sweep
that is over a million objects.  CPython's cyclic collector walks all of them on every full (generation 2)
collection, and those stopped lanemon's event loop for 96-290 ms each, eight times in one sweep
(``gc.callbacks`` during ``lanemon bench sweep --demo --time-scale 0.1 --max-level 24``); lanemon's own
loop-lag watch then rightly marked those levels unreliable.

While a bench runs (:class:`CollectorHold`, held by ``BenchRun``) automatic full collections are off. The
young generations are still collected as usual (a few milliseconds at most), and reference counting
frees everything it always did; only cyclic garbage that outlived two young collections waits for the end
of the run.  The same sweep: no full collection while it ran, peak RSS 168 MB against 165 MB without the
hold.  A collection at each cell start was tried and dropped: its pause (up to 92 ms) fell in the loop-lag
window of the cell's first requests.  Holds nest; the outermost one restores the thresholds.
"""

from __future__ import annotations

import gc

NO_FULL_COLLECTION = 1 << 30
"""Generation-2 threshold while held (young collections before an automatic full one: never, in practice)."""

_depth = 0
_saved: tuple[int, ...] | None = None


class CollectorHold:
    """No automatic full collection between :meth:`__enter__` and :meth:`__exit__` (nesting-safe)."""

    held = False

    def __enter__(self) -> "CollectorHold":
        global _depth, _saved
        if self.held:
            return self
        self.held = True
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], NO_FULL_COLLECTION)
        _depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        global _depth, _saved
        if not self.held:
            return
        self.held = False
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None


__all__ = ["CollectorHold", "NO_FULL_COLLECTION"]
