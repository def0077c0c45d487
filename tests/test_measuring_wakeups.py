"""The measuring thread's loop passes (docs/PERFORMANCE.md section 9): on the 2-core VM a pass of the event loop
costs ~50-110 us of CPU whatever it runs, so the work that wakes it many times a second -- the load watcher's
samples, a probe stream's tokens -- is counted here in passes, not in seconds (which a shared machine moves)."""

from __future__ import annotations

import asyncio

from lanemon.client.loadwatch import LoadWatch
from lanemon.events import Clock


class _PassCounter:
    """Counts the passes of the running loop (each pass asks its selector once)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.passes = 0
        sel = loop._selector  # type: ignore[attr-defined]
        original = sel.select

        def select(timeout=None):
            self.passes += 1
            return original(timeout)

        sel.select = select


def test_a_load_watcher_sample_costs_the_loop_one_pass_not_two():
    """Alone on a loop, the watcher at 20 ms takes ~50 samples a second; each is a timer callback (one pass),
    not a task sleeping (the timer's pass, then the task's: two)."""

    async def main():
        got = []
        watch = LoadWatch(Clock(), got.append, host=False, idle=lambda: False, collect_every=1e9)
        watch.start()
        await asyncio.sleep(0.1)
        counter = _PassCounter(asyncio.get_running_loop())
        n0 = sum(ev.data["samples"] for ev in got)
        await asyncio.sleep(1.0)
        passes = counter.passes
        await watch.stop()
        return passes, sum(ev.data["samples"] for ev in got) - n0

    passes, samples = asyncio.run(main())
    assert samples >= 20, samples  # it did watch (50 a second when the machine lets it)
    assert passes <= 1.3 * samples + 3, (passes, samples)  # 2 per sample with a task's sleep


def test_a_failing_sample_ends_the_watch_with_its_error():
    """A sample that raises (its emit) ends ``run()`` with that error, as the task's loop did."""

    class Boom(Exception):
        pass

    calls = {"n": 0}

    def emit(ev) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise Boom()

    async def main():
        watch = LoadWatch(Clock(), emit, host=False, window=0.02, interval=0.01)
        task = watch.start()
        try:
            await asyncio.wait_for(task, 5.0)
        except Boom:
            return "boom"
        return "no error"

    assert asyncio.run(main()) == "boom"


def _sleep_passes(make_sleeper) -> list[int]:
    """Loop passes of five 20 ms sleeps of a session's (or monitor's) ``_sleep``, each counted alone."""

    async def main():
        owner = make_sleeper()
        counter = _PassCounter(asyncio.get_running_loop())
        out = []
        for _ in range(5):
            p0 = counter.passes
            await owner._sleep(0.02)
            out.append(counter.passes - p0)
        return out

    return asyncio.run(main())


def test_a_probe_loop_sleep_costs_two_loop_passes():
    """Between probes a lane's loop sleeps until the interval ends or the session stops: a timer and the sleeper
    (2 passes), not a task for ``stop.wait()`` cancelled at the timeout (5 passes with ``asyncio.wait_for``)."""
    from lanemon.config import LaneConfig
    from lanemon.sessions.sources import LiveSession

    passes = _sleep_passes(lambda: LiveSession([LaneConfig("A", "http://127.0.0.1:9/v1")]))
    assert max(passes) <= 3, passes


def test_a_monitor_loop_sleep_costs_two_loop_passes():
    from lanemon.client.monitors import Monitors

    passes = _sleep_passes(lambda: Monitors([], Clock(), lambda ev: None))
    assert max(passes) <= 3, passes


def test_a_stop_ends_every_sleep_at_once():
    from lanemon.client.stop_event import StopEvent

    async def main():
        stop = StopEvent()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        sleeps = [asyncio.ensure_future(stop.sleep(30)) for _ in range(3)]
        await asyncio.sleep(0.05)
        assert not any(s.done() for s in sleeps)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*sleeps), 5)
        waited = loop.time() - t0
        await stop.sleep(30)  # set already: returns at once
        await stop.wait()
        return waited, len(stop._sleeps)

    waited, left = asyncio.run(main())
    assert waited < 5 and left == 0


def test_a_sleep_cancelled_leaves_nothing_behind():
    from lanemon.client.stop_event import StopEvent

    async def main():
        stop = StopEvent()
        task = asyncio.ensure_future(stop.sleep(30))
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return len(stop._sleeps)

    assert asyncio.run(main()) == 0


def test_the_measuring_thread_is_named_in_the_os():
    """bench/demo_cpu_ab.py reads each thread's CPU from /proc by its name: the measuring thread says its own
    (Python's thread names are Python's only: every thread was "python" there)."""
    import os
    import threading

    import pytest

    from lanemon.sessions.runner import SourceThread

    if not os.path.isdir("/proc/self/task"):
        pytest.skip("no /proc")

    class Source:
        mode = "live"

        def __init__(self) -> None:
            self.comm = None

        async def run(self) -> None:
            with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
                self.comm = f.read().strip()

    source = Source()
    runner = SourceThread(source).start()
    runner.done.result(10)
    assert source.comm == "lanemon-measure"
