"""The simulator as a child process for the tests and the bench scripts (bench/*.py put tests/ on their
path): :class:`lanemon.sim.process.SimProcess`, and both simulated lanes at once.  It imports neither pytest
nor anything of the test suite."""

from __future__ import annotations

import contextlib

from lanemon.sim.process import ANNOUNCE, SimProcess  # noqa: F401  (imported from here by tests and bench/)


@contextlib.contextmanager
def sim_pair(time_scale: float, seed: int = 0):
    """Both simulated lanes (A: tensorfold-exl3, B: sglang-native) as child processes."""
    a = SimProcess("tensorfold-exl3", time_scale, seed)
    try:
        b = SimProcess("sglang-native", time_scale, seed)
    except Exception:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()
