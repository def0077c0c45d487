"""Background watchers of the lanes' servers and of this machine, for any event source.

:class:`Monitors` runs, until :meth:`stop`, one ``/metrics`` scrape loop per lane
(``server_metrics`` events, :class:`~lanemon.client.prom.MetricsScraper`; a lane
without /metrics is tried once and left alone) and one host sampler (``host``
events, :class:`~lanemon.client.host.HostSampler`, psutil off the event loop) and, for a lane that names
its GPU telemetry, one reading loop (``gpu`` events, :class:`~lanemon.client.telemetry.TelemetryScraper`,
read again at every run edge: :meth:`Monitors.edge`).
The next scrape or sample is scheduled when the previous one finished, so polls
never overlap.  Live sessions and every bench and race use it, so a benchmark
records what the engine and the load host were doing beside the client figures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from lanemon import events as schema
from lanemon.client.stop_event import StopEvent
from lanemon.events import Clock, Event
from lanemon.results.readings import event_data

METRICS_INTERVAL = 2.0
HOST_INTERVAL = 2.0
EDGE_FRESH_NS = 50_000_000
"""A mark within this long (50 ms) of an awaited edge reading does not trigger another one."""
TELEMETRY_EDGE_WAIT_S = 3.0
"""How long a run's edge (and the run's end) waits for a GPU telemetry reading while the endpoint answers
(its last reading succeeded): the reading's own deadline (client/telemetry.DEADLINE_S), so a healthy endpoint
on a loaded machine still brackets each cell.  Once its last reading failed, :data:`TELEMETRY_FAILING_WAIT_S`."""
TELEMETRY_FAILING_WAIT_S = 0.25
"""How long an edge waits for a reading of an endpoint whose last reading failed (timed out, refused, ...):
a late reading is missing, not waited for (it goes on in the background and says so when it fails; a race's
energy then says it had no reading on both sides).  Telemetry never holds up a run by more than one reading's
deadline: a dripping endpoint cost a race of 1.4 s 51.9 s (issue 39)."""
TELEMETRY_INTERVAL = 1.0
"""Seconds between GPU telemetry readings of a lane (dcgm-exporter's own default interval is 30 s; it can
be set to 1 s, and nvidia-smi refreshes power about once a second)."""


class Monitors:
    def __init__(self, clients: Iterable, clock: Clock, emit: Callable[[Event], None], *,
                 metrics_interval: float | None = METRICS_INTERVAL, host_interval: float | None = HOST_INTERVAL,
                 paused: Callable[[], bool] = lambda: False,
                 telemetry_interval: float | None = TELEMETRY_INTERVAL, metrics_at_edges: bool = False) -> None:
        self.clients = list(clients)
        self.clock = clock
        self.emit = emit
        self.metrics_interval = metrics_interval
        self.host_interval = host_interval
        self.paused = paused
        self._stop = StopEvent()  # its sleeps end at stop (client/stop_event.py)
        self._tasks: list[asyncio.Task] = []
        self._scrapers: list = []  # every lane's scraper, for one last scrape at stop()
        self.telemetry_interval = telemetry_interval
        self._telemetry: list = []  # every lane's GPU telemetry scraper (client/telemetry.py)
        self._edges: set[asyncio.Task] = set()
        self._queued: dict[int, asyncio.Task] = {}  # scraper -> its latest edge reading
        self._telemetry_http = None  # its own HTTP client: the lane's headers (its API key) never go there
        self.metrics_at_edges = metrics_at_edges
        """Without a /metrics loop (``metrics_interval`` None), still scrape /metrics at every edge (a race:
        its run-scoped counters without polling during it)."""
        self._edge_done: dict[int, int] = {}  # scraper -> when an awaited edge reading of it ended (clock ns)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.metrics_interval:
            self._tasks += [loop.create_task(self.metrics_loop(c)) for c in self.clients]
        elif self.metrics_at_edges:
            from lanemon.client.prom import MetricsScraper

            self._scrapers += [MetricsScraper(c.lane.name, c.lane.url, c.http, clock=self.clock, emit=self.emit,
                                              redactor=getattr(c, "redactor", None)) for c in self.clients]
        if self.host_interval:
            self._tasks.append(loop.create_task(self.host_loop()))
        if self.telemetry_interval:
            self._start_telemetry(loop)

    def _start_telemetry(self, loop: asyncio.AbstractEventLoop) -> None:
        from lanemon.client.telemetry import NVML, TelemetryScraper

        lanes = [c.lane for c in self.clients if getattr(c.lane, "telemetry", None)]
        if not lanes:
            return
        if any(lane.telemetry != NVML for lane in lanes):
            import httpx

            from lanemon.client.guard import guard_transport

            transport = httpx.AsyncHTTPTransport(trust_env=False)
            guard_transport(transport)  # 1xx floods and oversized headers refused, as on the lanes (client/guard.py)
            self._telemetry_http = httpx.AsyncClient(timeout=5.0, follow_redirects=False, trust_env=False,
                                                     transport=transport, headers={"Accept-Encoding": "identity"})
        for lane in lanes:
            scraper = TelemetryScraper(lane.name, lane.telemetry, self._telemetry_http, clock=self.clock,
                                       emit=self.emit)
            self._telemetry.append(scraper)
            self._tasks.append(loop.create_task(self.telemetry_loop(scraper)))

    def edge(self) -> None:
        """A run's boundary (a bench cell, a race started or ended): read every lane's GPU telemetry and
        ``/metrics`` now, so energy and the engine's counters are taken at the edge, not up to an interval away
        (a reading in flight is waited for; the server view compares the engine's counts with lanemon's over
        the intervals between scrapes, measure/server.py)."""
        if self._stop.is_set():
            return
        now = self.clock.now()
        for scraper in self._telemetry + self._scrapers:
            # an awaited edge reading (edge_now) that just ended is this edge's reading already
            if scraper.available and now - self._edge_done.get(id(scraper), -EDGE_FRESH_NS) >= EDGE_FRESH_NS:
                self._edge_task(scraper)

    async def edge_now(self) -> None:
        """Read every lane's ``/metrics`` and GPU telemetry now and wait for the readings (a reading in flight
        is waited for first: polls never overlap); a telemetry reading at most :data:`TELEMETRY_EDGE_WAIT_S`,
        or :data:`TELEMETRY_FAILING_WAIT_S` for an endpoint that is failing: telemetry never holds up a run."""
        if self._stop.is_set() or self.paused():
            return
        # each scraper holds its own lock: an edge reading waits for the loop's reading in flight
        scrapers = [s for s in self._scrapers if s.available]
        readings = {id(s): (s, self._edge_task(s)) for s in self._telemetry if s.available}
        await asyncio.gather(*(s.scrape() for s in scrapers), self._at_most(list(readings.values())),
                             return_exceptions=True)
        now = self.clock.now()
        for s in scrapers:
            self._edge_done[id(s)] = now
        for key, (_, task) in readings.items():
            if task.done():
                self._edge_done[key] = now

    def _edge_task(self, scraper) -> asyncio.Task:
        """A reading of *scraper* for an edge, queued behind the one in flight so that it is taken at the edge;
        for an endpoint whose last reading failed, one not yet finished serves the next edges too (a slow
        endpoint never gathers a queue of readings behind its lock)."""
        task = self._queued.get(id(scraper))
        if task is not None and not task.done() and not getattr(scraper, "healthy", True):
            return task
        task = self._queued[id(scraper)] = asyncio.get_running_loop().create_task(scraper.scrape())
        self._edges.add(task)  # cancelled at stop() if still running
        task.add_done_callback(self._edges.discard)
        return task

    @staticmethod
    async def _at_most(readings: list[tuple[object, asyncio.Task]]) -> None:
        """Wait for GPU telemetry readings, each at most :data:`TELEMETRY_EDGE_WAIT_S`, or
        :data:`TELEMETRY_FAILING_WAIT_S` when its endpoint's last reading failed (they go on without us)."""
        async def one(scraper, task: asyncio.Task) -> None:
            healthy = getattr(scraper, "healthy", True)
            await asyncio.wait([task], timeout=TELEMETRY_EDGE_WAIT_S if healthy else TELEMETRY_FAILING_WAIT_S)

        await asyncio.gather(*(one(s, t) for s, t in readings))

    async def telemetry_loop(self, scraper) -> None:
        while not self._stop.is_set():
            if not self.paused():
                await scraper.scrape()
                if not scraper.available:
                    return
            await self._sleep(self.telemetry_interval or TELEMETRY_INTERVAL)

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
        telemetry, self._telemetry = self._telemetry, []
        paused = self.paused()
        last = [(s, self._edge_task(s)) for s in telemetry if s.available and not paused]
        await asyncio.gather(*(s.scrape() for s in scrapers if s.available and not paused), self._at_most(last),
                             return_exceptions=True)
        await self._finish()  # a telemetry reading still running is given up (and says so)
        if self._telemetry_http is not None:
            await self._telemetry_http.aclose()
            self._telemetry_http = None

    async def _finish(self) -> None:
        tasks, self._tasks = self._tasks + list(self._edges), []
        self._edges.clear()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _sleep(self, seconds: float) -> None:
        await self._stop.sleep(seconds)

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
                sample = await asyncio.to_thread(sampler.sample)
                self.emit(Event(self.clock.now(), schema.HOST, None, None, event_data(sample)))
