"""The measuring side's own event loop: a source's ``run()`` in a thread of its own.

The UI (Textual) repaints on its asyncio loop.  A source that measures (live probes, the demo, a bench, a
gauntlet) must not share that loop: a repaint would sit between a socket becoming readable and the
client's arrival stamp (client/netstamp.py), delay the stall and deadline timers, and the loop-lag watcher
(client/loadwatch.py) would see every repaint as lanemon starving itself.  :class:`SourceThread` runs
the source on a new asyncio loop in a daemon thread ("lanemon-measure").  Everything the source publishes
is delivered on that thread: the recorder (lossless, in order) and whatever else subscribed to
``source.bus``.  The UI subscribes a :class:`Inbox` there and folds its batches on its own loop.

Calls into the source from another thread go through :meth:`SourceThread.call` (pause, stop: they run on
the measuring loop, so the source never sees two threads) and :meth:`SourceThread.submit` (coroutines such
as a race).  Never imports Textual.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from lanemon.events import Event

__all__ = ["Inbox", "SourceThread", "SWITCH_INTERVAL_S", "measures"]

T = TypeVar("T")

SWITCH_INTERVAL_S = 0.0005
"""The interpreter's thread switch interval while a measuring thread runs (Python's default: 5 ms).  When a
socket becomes readable, the measuring thread waits at most this long for the UI thread to hand over the
interpreter lock, so a repaint in progress delays an arrival stamp by about this much, not by 5 ms."""


def measures(source: Any) -> bool:
    """Does ``source`` measure lanes (run it on its own loop)?  Replays and attached viewers only re-emit
    events (a static screen has none), and a replay's seeks restore the UI's folds from its loop: they
    stay on the UI's loop."""
    mode = getattr(source, "mode", None)
    return mode not in (None, "replay", "attach", "static") and callable(getattr(source, "run", None))


END_ROUNDS = 20
"""How many times :func:`end_tasks` lets tasks that never ran take their first step before it cancels them."""


def _unstarted(task: asyncio.Task) -> bool:
    coro = task.get_coro()
    return inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED


def end_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task still pending on ``loop`` and wait for them -- but first let each task that has not
    taken its first step take it.  A task cancelled before it ever ran never runs its coroutine, so what that
    coroutine wraps is never awaited: anyio's ``connect_tcp`` starts each connection attempt as such a task
    (``TaskHandle._run_coro`` awaiting ``try_connect``), and a probe caught connecting when a session ended
    printed ``RuntimeWarning: coroutine 'connect_tcp.<locals>.try_connect' was never awaited`` at exit (issue
    40 item 13).  Once started, the attempt ends through its own cancel scope when its probe is cancelled."""
    for _ in range(END_ROUNDS):
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        if not pending:
            return
        if any(_unstarted(t) for t in pending):
            loop.run_until_complete(asyncio.sleep(0))  # one pass of the loop: each of them takes its first step
            continue
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:  # still starting new tasks after END_ROUNDS passes: cancel what is there
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


class Inbox:
    """Events handed from the measuring thread to the UI: a bus subscriber that only appends.

    ``deque.append`` and ``popleft`` are atomic, so the producer never waits for the consumer and nothing
    is lost or reordered.  The consumer calls :meth:`drain` on its own loop (each redraw tick).
    """

    def __init__(self) -> None:
        self._events: deque[Event] = deque()
        self.received = 0

    def __call__(self, ev: Event) -> None:
        self._events.append(ev)

    def __len__(self) -> int:
        return len(self._events)

    def drain(self, fold: Callable[[Event], None]) -> int:
        """Fold every event waiting (in order); how many were folded."""
        n = 0
        events = self._events
        while events:
            fold(events.popleft())
            n += 1
        self.received += n
        return n

    def take(self) -> list[Event]:
        """Every event waiting now, in order, as one batch (those appended meanwhile wait for the next
        call): the consumer folds a batch in one loop (ui/app.py ``fold_batch``)."""
        events = self._events
        popleft = events.popleft
        batch = [popleft() for _ in range(len(events))]
        self.received += len(batch)
        return batch


def _name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` in the OS too (Linux: its ``comm``, 15 bytes), so ``top -H`` and
    bench/demo_cpu_ab.py tell the measuring thread from the worker threads (Python names its threads only for
    itself: every one of them is "python" in /proc).  Best effort: elsewhere, or refused, nothing changes."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
            f.write(name[:15])
    except (OSError, AttributeError):
        pass


class SourceThread:
    """Run ``source.run()`` on an asyncio loop of its own in a daemon thread.

    ``done`` is a :class:`concurrent.futures.Future` with the outcome of ``run()`` (its exception, or
    :class:`asyncio.CancelledError` when cancelled).  :meth:`stop_and_join` asks the source to stop and
    waits for its thread, so a recorder is flushed before the caller closes it.
    """

    def __init__(self, source: Any, *, name: str = "lanemon-measure") -> None:
        self.source = source
        self.loop: asyncio.AbstractEventLoop | None = None
        self.done: concurrent.futures.Future = concurrent.futures.Future()
        self._task: asyncio.Task | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._switch_before: float | None = None

    # -- the measuring thread ------------------------------------------------------

    def start(self) -> "SourceThread":
        if self._switch_before is None:
            self._switch_before = sys.getswitchinterval()
            sys.setswitchinterval(min(self._switch_before, SWITCH_INTERVAL_S))
        self._thread.start()
        self._started.wait()
        return self

    def _main(self) -> None:
        _name_os_thread(self._thread.name)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self.loop = loop
        try:
            self._task = loop.create_task(self._run())
            self._started.set()
            loop.run_until_complete(self._task)
            end_tasks(loop)  # anything the source left behind (a monitor, a stray probe)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            self._started.set()
            asyncio.set_event_loop(None)
            loop.close()
            if self._switch_before is not None:
                sys.setswitchinterval(self._switch_before)

    async def _run(self) -> None:
        try:
            await self.source.run()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on ``done``
            if not self.done.done():
                self.done.set_exception(exc)
            if not isinstance(exc, (Exception, asyncio.CancelledError)):
                raise
        else:
            if not self.done.done():
                self.done.set_result(None)

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self.done.done()

    # -- calls from other threads ------------------------------------------------------

    def call(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future:
        """Run ``fn(*args)`` on the measuring loop; a future with its result.  When the loop has ended,
        ``fn`` runs here and now (the source is idle then)."""
        fut: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001
                fut.set_exception(exc)

        loop = self.loop
        if loop is None or loop.is_closed() or threading.current_thread() is self._thread:
            run()
            return fut
        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:  # closed meanwhile
            run()
        return fut

    def call_wait(self, fn: Callable[..., T], *args: Any, timeout: float = 5.0) -> T:
        """:meth:`call` and wait for the result (the measuring loop answers within milliseconds)."""
        return self.call(fn, *args).result(timeout)

    def submit(self, make: Callable[[], Awaitable[T]]) -> concurrent.futures.Future:
        """Run the coroutine ``make()`` on the measuring loop (a race); a future with its result."""
        if self.loop is None or self.loop.is_closed():
            raise RuntimeError("the measuring loop is not running")

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self.loop)

    def cancel(self) -> None:
        """Cancel ``run()`` (as cancelling the UI worker that ran it did)."""
        task, loop = self._task, self.loop
        if task is not None and loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:
                pass

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True if it did."""
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop_and_join(self, timeout: float = 5.0) -> bool:
        """``source.stop()`` on the measuring loop; cancel ``run()`` if it has not ended within ``timeout``;
        wait for the thread.  True if it ended."""
        if not self._thread.is_alive():
            return True
        try:
            self.call_wait(self.source.stop, timeout=timeout)
        except (concurrent.futures.TimeoutError, Exception):  # noqa: BLE001 - still end the thread
            pass
        if self.join(timeout):
            return True
        self.cancel()
        return self.join(timeout)
