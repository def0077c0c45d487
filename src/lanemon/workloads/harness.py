"""The harness every workload runs in: lanes, clients, one bus, one clock.

A workload (race, decode ladder, prefill ladder, needles, ...) opens a
:class:`Harness`, calls :meth:`Harness.connect` to probe every lane (and learn
its model), then sends requests with :meth:`Harness.request`.  Every event goes
to ``harness.bus`` -- the recorder and any live screen subscribe there -- and
``harness.events`` keeps them all, so results are computed from exactly what
was recorded (see :mod:`lanemon.reports.analyse`).  Markers for bench cells and races
are ``mark`` events (:meth:`Harness.mark`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from lanemon.bus import EventBus
from lanemon.config import LaneConfig
from lanemon.client.http import LaneClient
from lanemon import events as schema
from lanemon.recording.writer import Recorder
from lanemon.events import Clock, Event
from lanemon.results.requests import lane_data, note_data
from lanemon.measure.records import RequestRecord
from lanemon.results.readings import ProbeResult


class LaneDown(RuntimeError):
    """A lane did not answer its /models probe; the message says why."""


class Harness:
    def __init__(
        self,
        lanes: Sequence[LaneConfig],
        *,
        bus: EventBus | None = None,
        clock: Clock | None = None,
        recorder: Recorder | None = None,
        stall_timeout: float | None = None,
        keep_events: bool = True,
        thinking: bool | None = None,
        watch_load: bool = True,
        monitor: bool | str = False,
    ) -> None:
        if not lanes:
            raise ValueError("a harness needs at least one lane")
        self.lanes = list(lanes)
        self.bus = bus or EventBus()
        self.clock = clock or Clock()
        self.recorder = recorder
        self.events: list[Event] = []
        if keep_events:
            self.bus.subscribe(self.events.append)
        if recorder is not None:
            self.bus.subscribe(recorder)
        self.clients: dict[str, LaneClient] = {
            lane.name: LaneClient(lane, clock=self.clock, emit=self.bus.publish, stall_timeout=stall_timeout)
            for lane in self.lanes
        }
        for client in self.clients.values():
            client.thinking = thinking
        for lane in self.lanes:
            self.bus.publish(Event(self.clock.now(), schema.LANE, lane.name, None, lane_data(lane)))
        self.pool = None
        """Worker processes sending requests for this harness (``--workers N``; lanemon.workers.pool)."""
        self.monitors = None
        """The lanes' /metrics and this machine's samples during the run (client/monitors.py; ``monitor=True``)."""
        if monitor:
            from lanemon.client.monitors import Monitors

            # monitor="edges": GPU telemetry, and /metrics only at the run's edges (a race: no polling during it)
            quiet = ({"metrics_interval": None, "host_interval": None, "metrics_at_edges": True}
                     if monitor == "edges" else {})
            self.monitors = Monitors(self.clients.values(), self.clock, self.bus.publish, **quiet)
        self.loadwatch = None
        """lanemon's own loop lag as ``client_load`` events (client/loadwatch.py), from connect() to aclose()."""
        if watch_load:
            from lanemon.client.loadwatch import LoadWatch

            self.loadwatch = LoadWatch(self.clock, self.bus.publish)

    @property
    def names(self) -> list[str]:
        return [lane.name for lane in self.lanes]

    def public_lanes(self) -> list[dict[str, Any]]:
        out = []
        for lane in self.lanes:
            info = lane.public()
            info["model"] = self.clients[lane.name].model or info.get("model")
            out.append(info)
        return out

    async def connect(self, require_all: bool = True, detect_usage: bool = False) -> dict[str, ProbeResult]:
        """Probe every lane's /models (in parallel); raise :class:`LaneDown` if one is down.

        With ``detect_usage`` each lane that is up is then asked once whether it accepts
        ``stream_options.continuous_usage_stats`` (:meth:`LaneClient.detect_continuous_usage`; the
        tiny request is not recorded); the answer is published as a ``lane`` event carrying
        ``continuous_usage`` and used for every later request of that client.
        """
        if self.loadwatch is not None:
            self.loadwatch.start()
        if self.monitors is not None:
            self.monitors.start()
        results = await asyncio.gather(*(c.probe_models() for c in self.clients.values()))
        by_lane = dict(zip(self.clients, results))
        down = {name: r for name, r in by_lane.items() if not r.ok}
        if down and require_all:
            raise LaneDown("; ".join(f"lane {name}: {r.message if r.message is not None else 'down'}"
                                     for name, r in down.items()))
        if detect_usage:
            await self.detect_usage([name for name in by_lane if name not in down])
        return by_lane

    async def detect_usage(self, names: Sequence[str] | None = None) -> None:
        """Detect continuous usage on these lanes (default: all) and publish the answers."""
        names = list(self.clients) if names is None else list(names)
        await asyncio.gather(*(self.clients[n].detect_continuous_usage() for n in names))
        for lane in self.lanes:
            if lane.name in names:
                client = self.clients[lane.name]
                info = lane_data(lane, model=client.model or lane.model,
                                 continuous_usage=client.continuous_usage)
                self.bus.publish(Event(self.clock.now(), schema.LANE, lane.name, None, info))

    def mark(self, label: str, lane: str | None = None, **data: Any) -> None:
        self.bus.publish(Event(self.clock.now(), schema.MARK, lane, None, {"label": label, **data}))
        if self.monitors is not None and data.get("phase") in ("start", "end"):
            self.monitors.edge()  # GPU telemetry read at the edge (energy per cell / race, docs/GPU.md)

    async def edge(self) -> None:
        """A run's edge: read every lane's /metrics and GPU telemetry now and wait for the readings (the
        run-scoped counters and energy of a cell are the differences between its edges; docs/GPU.md)."""
        if self.monitors is not None:
            await self.monitors.edge_now()

    def note(self, message: str, level: str = "info") -> None:
        self.bus.publish(Event(self.clock.now(), schema.NOTE, None, None, note_data(message, level)))

    async def request(
        self,
        lane: str,
        endpoint: str = "completions",
        *,
        prompt: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
        purpose: str = "",
        meta: dict[str, Any] | None = None,
    ) -> RequestRecord:
        """One streaming request on ``lane``; ``meta`` is recorded with the request event."""
        client = self.clients[lane]
        body = client.build_body(endpoint, prompt=prompt, messages=messages, max_tokens=max_tokens, extra=extra)
        return await client.stream(endpoint, body, purpose=purpose, meta=meta)

    async def aclose(self) -> None:
        if self.monitors is not None:
            await self.monitors.stop()
        if self.loadwatch is not None:
            await self.loadwatch.stop()
        for client in self.clients.values():
            await client.aclose()
        if self.recorder is not None:
            self.recorder.flush()

    async def __aenter__(self) -> "Harness":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
