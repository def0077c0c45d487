"""Background watchers of the lanes' servers and of this machine, for any event source.

:class:`Monitors` runs, until :meth:`stop`, one ``/metrics`` scrape loop per lane
(``server_metrics`` events, :class:`~lanemon.client.prom.MetricsScraper`; a lane
without /metrics is tried once and left alone) and one host sampler (``host``
events, :class:`~lanemon.client.host.HostSampler`, psutil off the event loop).
The next scrape or sample is scheduled when the previous one finished, so polls
never overlap.  Live sessions and every bench and race use it, so a benchmark
records what the engine and the load host were doing beside the client figures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from lanemon import events as schema
from lanemon.events import Clock, Event

METRICS_INTERVAL = 2.0
HOST_INTERVAL = 2.0


class Monitors:
    def __init__(self, clients: Iterable, clock: Clock, emit: Callable[[Event], None], *,
                 metrics_interval: float | None = METRICS_INTERVAL, host_interval: float | None = HOST_INTERVAL,
                 paused: Callable[[], bool] = lambda: False) -> None:
        self.clients = list(clients)
        self.clock = clock
        self.emit = emit
        self.metrics_interval = metrics_interval
        self.host_interval = host_interval
        self.paused = paused
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._scrapers: list = []  # every lane's scraper, for one last scrape at stop()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.metrics_interval:
            self._tasks += [loop.create_task(self.metrics_loop(c)) for c in self.clients]
        if self.host_interval:
            self._tasks.append(loop.create_task(self.host_loop()))

    async def run(self) -> None:
        """Start and wait until :meth:`stop` (for callers that gather their loops)."""
        self.start()
        await self._stop.wait()
        await self._finish()

    async def stop(self) -> None:
        self._stop.set()
        await self._finish()
        # one last scrape per lane once the loops are gone, so server-side deltas cover the whole run
        scrapers, self._scrapers = self._scrapers, []
        await asyncio.gather(*(s.scrape() for s in scrapers if s.available and not self.paused()),
                             return_exceptions=True)

    async def _finish(self) -> None:
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def metrics_loop(self, client) -> None:
        from lanemon.client.prom import MetricsScraper

        scraper = MetricsScraper(client.lane.name, client.lane.url, client.http, clock=self.clock, emit=self.emit,
                                 redactor=getattr(client, "redactor", None))
        self._scrapers.append(scraper)
        while not self._stop.is_set():
            if not self.paused():
                await scraper.scrape()
                if not scraper.available:
                    return
            await self._sleep(self.metrics_interval or METRICS_INTERVAL)

    async def host_loop(self) -> None:
        from lanemon.client.host import HostSampler

        sampler = await asyncio.to_thread(HostSampler)
        while not self._stop.is_set():
            await self._sleep(self.host_interval or HOST_INTERVAL)
            if self._stop.is_set():
                return
            if not self.paused():
                data = await asyncio.to_thread(sampler.sample)
                self.emit(Event(self.clock.now(), schema.HOST, None, None, data))
