"""Giving the C allocator's free pages back to the system (glibc's ``malloc_trim``), for long live sessions.

A live session allocates and frees a steady stream of buffers bigger than Python's small-object allocator
takes (socket reads, encoded recording lines, Textual's strips' segment lists), on two threads: the UI's and
the measuring loop's, each with its own glibc arena.  glibc returns a freed page to the system only from the
top of an arena; pages freed in the middle stay resident.  At 64 streams (bench/soak.py samples glibc's
figures beside RSS) 1.3-3 MB of glibc's ~20 MB heap is free at any time, swinging with the full garbage
collections; ``malloc_trim(0)`` gives those pages back (``madvise(MADV_DONTNEED)``: they stay mapped, so
taking one again costs a page fault, not a system call), about a megabyte of RSS.

It does not flatten everything: Python's own arenas (1 MiB each, held while any object in them lives) are
not glibc's to trim.  :func:`trim` is a no-op where the C library is not glibc (musl, macOS, Windows).  The
caller picks when: a live UI every :data:`TRIM_EVERY_S` seconds on its own thread (the call releases the
interpreter lock, so the measuring thread runs on meanwhile).
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

TRIM_EVERY_S = 10.0
"""How often a live UI trims: one call costs well under a millisecond at a live session's heap (~20 MB of
glibc's, 2-3 MB of it free), and the pages it gives back are taken again within a minute under load, so a
trim a minute left RSS swinging by a megabyte between trims."""

_trim: Callable[[int], Any] | None | bool = False
"""``malloc_trim`` once looked up; None where there is none; False before the first call."""


def _lookup() -> Callable[[int], Any] | None:
    try:
        fn = ctypes.CDLL(None).malloc_trim  # glibc only (musl and the BSDs have no such symbol)
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Return the allocator's free pages to the system; True when there was a trim to call."""
    global _trim
    if _trim is False:
        _trim = _lookup()
    if _trim is None:
        return False
    _trim(0)  # type: ignore[operator]
    return True


__all__ = ["TRIM_EVERY_S", "trim"]
