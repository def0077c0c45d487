"""A pids cgroup around one sandbox run: the process limit that ``RLIMIT_NPROC`` cannot give root.

The kernel counts ``RLIMIT_NPROC`` per real user and never enforces it for root, and a user namespace does
not change the real user, so when lanemon runs as root a fork loop inside the sandbox is bounded only by the
timeout.  Where lanemon may create cgroups (root with the cgroup v1 ``pids`` hierarchy, or a cgroup v2 root
whose ``subtree_control`` enables ``pids``), each run gets its own cgroup with ``pids.max``: the sandbox's
pid 1 is moved into it while bubblewrap holds it before ``exec`` (``--block-fd``), so every process it
starts counts.  Elsewhere :func:`available` is False and nothing changes.  Best effort by design: any
failure means "no cgroup", never a failed task.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

__all__ = ["PidsCgroup", "available"]

_V1 = "/sys/fs/cgroup/pids"
_V2 = "/sys/fs/cgroup"
_base: list[str | None] = []
_lock = threading.Lock()
_counter = itertools.count()


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _find_base() -> str | None:
    candidates = []
    if os.path.isfile(os.path.join(_V1, "cgroup.procs")):
        candidates.append(_V1)
    try:
        with open(os.path.join(_V2, "cgroup.subtree_control")) as fh:
            if "pids" in fh.read().split():
                candidates.append(_V2)
    except OSError:
        pass
    for base in candidates:
        probe = os.path.join(base, f"lanemon-qeval-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            _write(os.path.join(probe, "pids.max"), "8")
            return base
        except OSError:
            continue
        finally:
            try:
                os.rmdir(probe)
            except OSError:
                pass
    return None


def available() -> bool:
    """Whether lanemon can make pids cgroups here (probed once)."""
    with _lock:
        if not _base:
            _base.append(_find_base())
        return _base[0] is not None


class PidsCgroup:
    """One run's cgroup: :meth:`create`, :meth:`add` the sandbox's pid 1, :meth:`remove` when it is gone."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.path: str | None = None

    def create(self) -> bool:
        if not available():
            return False
        path = os.path.join(_base[0], f"lanemon-qeval-{os.getpid()}-{next(_counter)}")
        try:
            os.mkdir(path)
            _write(os.path.join(path, "pids.max"), str(self.limit))
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
            return False
        self.path = path
        return True

    def add(self, pid: int) -> bool:
        if self.path is None:
            return False
        try:
            _write(os.path.join(self.path, "cgroup.procs"), str(pid))
            return True
        except OSError:
            return False

    def remove(self, wait_s: float = 1.0) -> None:
        """Remove the cgroup once its processes are gone (a moment after the kill); give up after ``wait_s``."""
        if self.path is None:
            return
        end = time.monotonic() + wait_s
        while True:
            try:
                os.rmdir(self.path)
                self.path = None
                return
            except FileNotFoundError:
                self.path = None
                return
            except OSError:
                if time.monotonic() >= end:
                    return
                time.sleep(0.01)
