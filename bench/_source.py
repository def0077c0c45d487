"""What the bench scripts' load sources share: a Harness on the lanes, the source protocol's fixed pace (no
pause, no speed: lanemon.bus.FixedPace) and a run that drives closed-loop workers until stopped."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable

from lanemon.bus import FixedPace


class HarnessSource(FixedPace):
    """Source protocol over a :class:`~lanemon.workloads.harness.Harness`: ``run`` connects, runs
    :meth:`workers` to the end (or :meth:`stop`) and closes the harness."""

    mode = "live"
    recording_path = None

    def __init__(self, lanes) -> None:
        from lanemon.workloads.harness import Harness

        self.harness = Harness(lanes, keep_events=False)
        self.bus = self.harness.bus
        self.lanes = [lane.public() for lane in lanes]
        self.finished = False
        self._stop = False

    async def warm(self) -> None:
        """Before the workers start (default: nothing)."""

    def workers(self) -> Iterable[Awaitable[None]]:
        raise NotImplementedError

    async def run(self) -> None:
        await self.harness.connect()
        await self.warm()
        try:
            await asyncio.gather(*self.workers())
        finally:
            await self.harness.aclose()
            self.finished = True

    def stop(self) -> None:
        self._stop = True
