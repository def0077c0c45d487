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


def test_a_wake_ends_the_idle_watch_and_the_next_samples_are_at_the_busy_period():
    """The callback watcher keeps the idle watch's contract: 10 samples a second idle, a wake brings 50 back,
    and the wake's sample is taken on the next pass."""
    state = {"idle": True}

    async def main():
        got = []
        watch = LoadWatch(Clock(), got.append, host=False, idle=lambda: state["idle"], collect_every=1e9)
        watch.start()
        await asyncio.sleep(1.0)
        idle = sum(ev.data["samples"] for ev in got)
        n = len(got)
        state["idle"] = False
        watch.wake()
        watch.wake()  # a second wake before the first is taken: one wake
        await asyncio.sleep(1.0)
        busy = sum(ev.data["samples"] for ev in got[n:])
        await watch.stop()
        return watch, idle, busy

    watch, idle, busy = asyncio.run(main())
    assert idle <= 12, idle
    assert busy >= 3 * idle, (idle, busy)
    assert watch.woken == 1 and watch.idle_sleeps >= 5


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
