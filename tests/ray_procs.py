"""The niceness of lanemon's Ray actors under this test process (tests' helper; Linux ``/proc``).

Ray starts its worker processes 15 nicer than their raylet unless told otherwise; lanemon's actors time its sends
and must run at their raylet's priority (workers/ray_pool.py, ``WORKER_ENV``).  A test that started a Ray runtime
(a cluster's raylets, or a ``bench load`` whose local runtime it started) finds them among its descendants: never
another test's Ray elsewhere on the machine.
"""

from __future__ import annotations

import os


def worker_nice() -> dict[int, int]:
    """pid -> niceness of each live process Ray titled ``ray::_RayWorker`` (lanemon's actors) under this process."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                parent[int(d)] = int(f.read().rsplit(b")", 1)[1].split()[1])  # after the name: state, ppid
        except (OSError, ValueError, IndexError):
            pass
    ours, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, pp in parent.items() if pp in ours} - ours
        ours |= more
        grew = bool(more)
    out = {}
    for pid in ours - {os.getpid()}:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"ray::_RayWorker"):
                    out[pid] = os.getpriority(os.PRIO_PROCESS, pid)
        except OSError:  # gone meanwhile
            pass
    return out
