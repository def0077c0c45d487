"""Idle full collections (client/loadwatch.py "Idle collections"): a live session holds Python's automatic full
garbage collections, which stop every thread (16-240 ms in a live dashboard) and made probes client-bound, and
its load watcher collects only while nothing of lanemon's is in flight, between two of its own samples."""

from __future__ import annotations

import asyncio
import gc
import time

from lanemon.client.loadwatch import LoadWatch
from lanemon.config import LaneConfig, ProbeConfig
from lanemon.events import Clock
from lanemon.sessions.sources import LiveSession
from lanemon.workloads.collector import NO_FULL_COLLECTION

PAUSE_S = 0.06  # a full collection's pause, three times the starvation threshold (20 ms)


def _run(idle, seconds: float, **kw):
    clock = Clock()
    pauses: list[tuple[int, int]] = []

    def collect() -> None:  # a full collection: the whole process stops for PAUSE_S
        t0 = clock.now()
        time.sleep(PAUSE_S)
        pauses.append((t0, clock.now()))

    async def main():
        got = []
        watch = LoadWatch(clock, got.append, host=False, idle=idle, collect=collect, **kw)
        watch.start()
        await asyncio.sleep(seconds)
        await watch.stop()
        return watch, got

    watch, got = asyncio.run(main())
    return watch, got, pauses


def test_collects_only_while_idle_and_its_pause_is_no_starved_window():
    state = {"idle": False}
    flips: list[bool] = []

    def idle() -> bool:
        flips.append(state["idle"])
        state["idle"] = not state["idle"]  # in flight, idle, in flight, ...
        return not state["idle"]

    watch, got, pauses = _run(idle, 1.0, collect_every=0.1, collect_max_wait=60)
    assert watch.idle_collections >= 3 and watch.forced_collections == 0 and len(pauses) == watch.idle_collections
    assert False in flips and True in flips  # it was asked while busy too, and waited
    for t0, t1 in pauses:  # no published starved window covers a collection made while idle
        for ev in got:
            if ev.data["bound"]:
                assert not (ev.data["t0"] <= t1 and ev.t >= t0), (ev.data, (t0, t1))


def test_never_idle_collects_when_overdue_and_says_so():
    watch, got, pauses = _run(lambda: False, 0.6, collect_every=0.1, collect_max_wait=0.2)
    assert watch.idle_collections == 0 and watch.forced_collections >= 1 and len(pauses) == watch.forced_collections
    # the forced one is judged like any other pause: its lag is a starved window
    assert any(ev.data["bound"] for ev in got)


def test_without_idle_it_never_collects():
    watch, got, pauses = _run(None, 0.3, collect_every=0.01)
    assert pauses == [] and watch.idle_collections == watch.forced_collections == 0


def test_a_live_session_holds_full_collections_and_knows_when_it_is_idle(fast_sims):
    before = gc.get_threshold()
    seen: dict[str, object] = {}

    async def main():
        lanes = [LaneConfig("A", fast_sims[0].url)]
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=8), mode="live")
        session.bus.subscribe(lambda ev: seen.setdefault("busy", not session.idle()) if ev.kind == "token" else None)
        runner = asyncio.get_running_loop().create_task(session.run())
        deadline = time.monotonic() + 30
        while "busy" not in seen and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        seen["threshold"] = gc.get_threshold()
        session.stop()
        await runner
        seen["idle_after"] = session.idle()

    asyncio.run(main())
    assert seen["busy"] is True  # a token arrived while its request was in flight: not idle
    assert seen["threshold"][2] == NO_FULL_COLLECTION  # no automatic full collection while it ran
    assert seen["idle_after"] is True and gc.get_threshold() == before  # restored after


def test_an_idle_session_is_watched_at_ten_hertz_and_a_request_brings_fifty_back():
    """Nothing in flight: the watcher wakes 10 times a second, not 50 (1.2 % of a core on a 2-core VM for
    nothing to judge).  A request's start (``wake``) ends the idle sleep at once."""
    state = {"idle": True}

    async def main():
        got = []
        watch = LoadWatch(Clock(), got.append, host=False, idle=lambda: state["idle"])
        watch.start()
        await asyncio.sleep(1.0)
        idle_samples = sum(ev.data["samples"] for ev in got)
        n = len(got)
        state["idle"] = False
        watch.wake()
        watch.wake()  # a second wake before the first is taken: one wake
        await asyncio.sleep(1.0)
        busy_samples = sum(ev.data["samples"] for ev in got[n:])
        await watch.stop()
        return watch, idle_samples, busy_samples

    watch, idle_samples, busy_samples = asyncio.run(main())
    assert idle_samples <= 12, idle_samples  # ~10 in the idle second (50 before)
    assert busy_samples >= 3 * idle_samples, (idle_samples, busy_samples)  # ~45-50 once a request runs
    assert watch.woken == 1 and watch.idle_sleeps >= 5


def test_a_stall_just_after_a_request_starts_inside_an_idle_sleep_is_seen():
    """The slower idle watch must not open a blind spot: a request starts 0 ms into a 100 ms idle sleep and
    the loop stalls 40 ms at once -- long over before that sleep would have ended.  The wake makes the stall
    the watcher's lag (a starved window covering the request's start); without it, nothing is seen."""
    state = {"idle": True}
    clock = Clock()

    async def main():
        got = []
        watch = LoadWatch(clock, got.append, host=False, idle=lambda: state["idle"], collect_every=1e9)
        watch.start()
        await asyncio.sleep(0.3)
        sleeps = watch.idle_sleeps
        while watch.idle_sleeps == sleeps:  # the watcher is in an idle sleep now, just begun
            await asyncio.sleep(0)
        started = clock.now()
        state["idle"] = False
        watch.wake()  # the request's start (LiveSession._busy)
        time.sleep(0.04)  # and lanemon's loop stalls
        await asyncio.sleep(0.6)
        await watch.stop()
        return got, started

    got, started = asyncio.run(main())
    starved = [ev for ev in got if ev.data["bound"]]
    assert starved, [ev.data for ev in got]
    assert any(ev.data["t0"] <= started + 40 * 1_000_000 <= ev.t for ev in starved), [ev.data for ev in starved]
    assert max(ev.data["lag_ms"] for ev in starved) >= 35.0


def test_a_live_session_wakes_its_watcher_when_a_probe_starts(fast_sims):
    async def main():
        lanes = [LaneConfig("A", fast_sims[0].url)]
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.3, max_tokens=4), mode="live")
        runner = asyncio.get_running_loop().create_task(session.run())
        deadline = time.monotonic() + 30
        while (session._watch is None or session._watch.woken < 2) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        watch = session._watch
        session.stop()
        await runner
        return watch

    watch = asyncio.run(main())
    assert watch is not None and watch.woken >= 2 and watch.idle_sleeps > watch.woken
