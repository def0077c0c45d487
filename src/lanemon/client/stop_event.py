"""A stop flag whose sleeps end when it is set, at two loop passes a sleep (docs/PERFORMANCE.md section 9).

The measuring loop's periodic work -- each lane's probe loop, each /metrics, GPU and host loop -- sleeps between
rounds "until the interval is over or the session stops".  Written as ``asyncio.wait_for(stop.wait(), seconds)``
each sleep made a task for ``stop.wait()`` and, at its timeout, cancelled that task and waited for the
cancellation: about five passes of the event loop and a task per sleep, where a plain sleep takes two (the timer's
pass, the sleeper's).  On the 2-core VM a pass costs ~50-110 us of CPU whatever it runs.
:meth:`StopEvent.sleep` is a future resolved by a timer or by :meth:`StopEvent.set`, whichever comes first."""

from __future__ import annotations

import asyncio

__all__ = ["StopEvent"]


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class StopEvent(asyncio.Event):
    """An :class:`asyncio.Event` (``set``, ``is_set``, ``wait`` as usual) with :meth:`sleep`."""

    def __init__(self) -> None:
        super().__init__()
        self._sleeps: set[asyncio.Future] = set()

    def set(self) -> None:
        super().set()
        for fut in list(self._sleeps):
            _resolve(fut)

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or until :meth:`set` if that comes first (at once when already set)."""
        if self.is_set():
            return
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        timer = loop.call_later(max(0.0, seconds), _resolve, fut)
        self._sleeps.add(fut)
        try:
            await fut
        finally:
            timer.cancel()
            self._sleeps.discard(fut)
