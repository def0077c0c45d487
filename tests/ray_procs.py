"""The niceness of lanemon's Ray actors under this test process (tests' helper; Linux ``/proc``).

Ray starts its worker processes 15 nicer than their raylet unless told otherwise; lanemon's actors time its sends
and must run at their raylet's priority (workers/ray_pool.py, ``WORKER_ENV``).  A test that started a Ray runtime
(a cluster's raylets, or a ``bench load`` whose local runtime it started) finds them among its descendants: never
another test's Ray elsewhere on the machine.
"""

from __future__ import annotations

import os
import subprocess
import threading
from typing import NamedTuple

JOINED = "Ray cluster joined in"
"""What `bench load` prints on stderr once its Ray workers are placed (workers/ray_pool.py)."""


class Stderr(NamedTuple):
    lines: list[str]
    """Every stderr line so far (the reader thread appends)."""
    joined: threading.Event
    """Set once the run said it joined its Ray cluster."""
    reader: threading.Thread

    def text(self, tail: int = 3000) -> str:
        return "".join(self.lines)[-tail:]


def follow_stderr(p: subprocess.Popen) -> Stderr:
    """Read a `bench load` process's stderr on a thread, noting when its Ray cluster was joined."""
    lines: list[str] = []
    joined = threading.Event()

    def read() -> None:
        for line in p.stderr:
            lines.append(line)
            if JOINED in line:
                joined.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return Stderr(lines, joined, reader)


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
