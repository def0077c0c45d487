"""The measuring side runs on its own loop (sessions/runner.py): a repaint on the UI's loop never holds up
the source's timers, stamps or loop-lag watcher, and the UI's controls still reach it."""

from __future__ import annotations

import asyncio
import threading
import time

from lanemon.public_lane import PublicLane
from lanemon import events as schema
from lanemon.bus import EventBus
from lanemon.events import Event
from lanemon.sessions.runner import Inbox, SourceThread, measures
from lanemon.ui.app import make_app


class TickingSource:
    """A live source whose loop ticks every 5 ms, publishing a mark per tick, until stopped."""

    mode = "live"
    speed = None
    recording_path = None

    def __init__(self) -> None:
        self.bus = EventBus()
        self.lanes = [PublicLane("A", "http://127.0.0.1:1/v1", "m")]
        self.paused = False
        self.finished = False
        self.ticks = 0
        self.run_thread: threading.Thread | None = None
        self.calls: list[tuple[str, threading.Thread]] = []
        self._stop: asyncio.Event | None = None

    async def run(self) -> None:
        self.run_thread = threading.current_thread()
        self._stop = asyncio.Event()
        while not self._stop.is_set():
            self.ticks += 1
            self.bus.publish(Event(self.ticks, schema.NOTE, None, None, {"level": "info", "message": "tick"}))
            try:
                await asyncio.wait_for(self._stop.wait(), 0.005)
            except asyncio.TimeoutError:
                pass
        self.finished = True

    def toggle_pause(self) -> bool:
        self.calls.append(("pause", threading.current_thread()))
        self.paused = not self.paused
        return self.paused

    def faster(self) -> None:
        return None

    def slower(self) -> None:
        return None

    def stop(self) -> None:
        self.calls.append(("stop", threading.current_thread()))
        assert self._stop is not None
        self._stop.set()  # an asyncio.Event: only safe on the loop that runs the source

    async def race(self, prompt: str) -> str:
        return f"{prompt} on {threading.current_thread().name}"


def test_which_sources_measure() -> None:
    assert measures(TickingSource())
    replay = TickingSource()
    replay.mode = "replay"
    assert not measures(replay)


async def until(cond, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def test_the_source_keeps_time_while_the_ui_loop_is_blocked() -> None:
    source = TickingSource()
    app = make_app(source, refresh_hz=10)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: source.ticks > 3)
        assert source.run_thread is not None and source.run_thread is not threading.main_thread()
        before = source.ticks
        spin_until = time.perf_counter() + 0.3  # a 300 ms repaint: pure Python on the UI's loop
        while time.perf_counter() < spin_until:
            pass
        during = source.ticks - before
        # on the UI's loop the source could not tick at all while it was blocked; on its own it went on
        assert during >= 1, during
        await pilot.pause(0.2)
        assert app.state.events >= source.ticks - 50  # its events reach the UI's folds (in batches)
        app.action_toggle_pause()
        assert source.paused and source.calls[-1] == ("pause", source.run_thread)
        assert await app.in_source(lambda: source.race("p")) == "p on lanemon-measure"
    assert source.finished and ("stop", source.run_thread) in source.calls
    assert app.state.events == source.ticks  # every event folded, nothing lost


def test_inbox_keeps_order_across_threads() -> None:
    inbox = Inbox()
    bus = EventBus()
    bus.subscribe(inbox)

    def produce() -> None:
        for i in range(20_000):
            bus.publish(Event(i, schema.NOTE, None, None, {}))

    t = threading.Thread(target=produce)
    seen: list[int] = []
    t.start()
    while t.is_alive() or len(inbox):
        inbox.drain(lambda ev: seen.append(ev.t))
    assert seen == list(range(20_000))


def test_a_failing_source_is_reported_through_done() -> None:
    class Broken(TickingSource):
        async def run(self) -> None:
            raise RuntimeError("lane exploded")

    runner = SourceThread(Broken()).start()
    assert runner.join(10)
    exc = runner.done.exception(1)
    assert isinstance(exc, RuntimeError) and "exploded" in str(exc)


def test_a_probe_left_mid_connect_at_the_end_leaves_no_coroutine_never_awaited() -> None:
    """Issue 40 item 13: quitting while a probe connects printed `RuntimeWarning: coroutine
    'connect_tcp.<locals>.try_connect' was never awaited`.  anyio's happy-eyeballs attempt is a task whose
    wrapper awaits the attempt only once it starts; cancelled before its first step (the runner cancelled every
    task it found at the end, the attempt among them), the attempt was never awaited.  The runner now lets a
    task that has not started take its first step before it cancels it (its own cancel scope then ends it)."""
    import gc
    import socket
    import warnings

    import anyio

    with socket.socket() as s:  # a port nothing listens on: the attempt is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class LeftMidConnect(TickingSource):
        steps = 0

        async def run(self) -> None:
            async def probe() -> None:
                try:
                    await anyio.connect_tcp("127.0.0.1", port)
                except OSError:
                    pass

            self.probe = asyncio.get_running_loop().create_task(probe())
            for _ in range(self.steps):  # the probe starts its attempt (a task not yet stepped) and waits on it
                await asyncio.sleep(0)
            self.finished = True  # ... and the session ends about here, the attempt's task perhaps never run

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(8):
            source = LeftMidConnect()
            source.steps = k % 4
            runner = SourceThread(source).start()
            assert runner.join(10)
            runner.done.result(1)
        del runner, source
        gc.collect()
    never = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert not never, never
