"""Event sources: a live session (probe loops over real lanes) or a replay.

Both publish :class:`~lanemon.record.schema.Event` objects on an
:class:`~lanemon.bus.EventBus`; the UI holds a source and never asks which
kind it is beyond labels and which keys apply.  Neither imports Textual.

Source protocol (duck-typed)::

    mode: str                  "live" | "demo" | "replay"
    bus: EventBus
    lanes: list[dict]          public lane info: name, url, model (no keys)
    recording_path: Path|None  where events are written (live) or read (replay)
    paused: bool
    speed: float|None          replay speed (inf = as fast as possible); None live
    finished: bool
    async run()                publish until done or stopped
    toggle_pause(); faster(); slower(); stop()

A LiveSession can also race (``async race(prompt)``, see
:mod:`lanemon.workloads.race`); a source without ``race`` (a replay) only
shows the races already in its events.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lanemon.bus import EventBus
from lanemon.config import LaneConfig, ProbeConfig
from lanemon.lanes.client import LaneClient
from lanemon.record import schema
from lanemon.record.recorder import Recorder
from lanemon.record.replay import Recording
from lanemon.record.schema import Clock, Event

DEMO_PROMPTS = (
    "Write a Python function that merges two sorted lists.",
    "In one paragraph of prose, describe a harbour at dawn.",
    "Summarize why prefill speed matters for agents.",
    "Solve: a train travels 180 km in 2.5 hours; what is its average speed?",
    "Tell a very short story about a lighthouse keeper.",
    "Translate 'the lanes are ready' into French and German.",
    "Extract the name and the date as JSON: Ada met Bob on 3 May 2026.",
    "Explain why the sky is blue, step by step.",
)


class LiveSession:
    """Probe loops over real lanes; every event goes to the bus (and the recorder)."""

    def __init__(
        self,
        lanes: Sequence[LaneConfig],
        *,
        probe: ProbeConfig = ProbeConfig(),
        mode: str = "live",
        recorder: Recorder | None = None,
        prompts: Sequence[str] | None = None,
        bus: EventBus | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.mode = mode
        self.bus = bus or EventBus()
        self.clock = clock or Clock()
        self.lane_configs = list(lanes)
        self.probe = probe
        self.recorder = recorder
        self.recording_path = recorder.path if recorder else None
        self.prompts = tuple(prompts) if prompts else (probe.prompt,)
        self.paused = False
        self.speed: float | None = None
        self.finished = False
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self.clients: dict[str, LaneClient] = {}
        self._ready = asyncio.Event()  # set once run() has made the clients
        self._racing = 0  # races in progress: no new probe requests meanwhile
        self._probing = 0  # probe requests in flight
        self._race_ids = itertools.count(1)
        if recorder is not None:
            self.bus.subscribe(recorder)
            recorder.on_error = self._recording_failed

    @property
    def lanes(self) -> list[dict[str, Any]]:
        out = []
        for lane in self.lane_configs:
            info = lane.public()
            client = self.clients.get(lane.name)
            if client is not None and client.model:
                info["model"] = client.model
            out.append(info)
        return out

    def _recording_failed(self, message: str) -> None:
        self.bus.publish(Event(self.clock.now(), schema.NOTE, None, None, {"level": "error", "message": message}))

    def note(self, message: str, level: str = "info") -> None:
        self.bus.publish(Event(self.clock.now(), schema.NOTE, None, None, {"level": level, "message": message}))

    async def run(self) -> None:
        for lane in self.lane_configs:
            self.clients[lane.name] = LaneClient(lane, clock=self.clock, emit=self.bus.publish)
            self.bus.publish(Event(self.clock.now(), schema.LANE, lane.name, None, lane.public()))
        self._ready.set()
        try:
            await asyncio.gather(*(self._probe_loop(c, i) for i, c in enumerate(self.clients.values())))
        finally:
            for client in self.clients.values():
                await client.aclose()
            if self.recorder is not None:
                self.recorder.flush()

    async def _probe_loop(self, client: LaneClient, offset: int) -> None:
        prompts = itertools.cycle(self.prompts[offset % len(self.prompts):] + self.prompts[: offset % len(self.prompts)])
        while not self._stop.is_set():
            if not self.paused:
                result = await client.probe_models()
                if (result.get("ok") and self.probe.enabled and not self.paused and not self._racing
                        and not self._stop.is_set()):
                    prompt = next(prompts)
                    if self.probe.endpoint == "chat":
                        body = client.build_body("chat", prompt=prompt, max_tokens=self.probe.max_tokens)
                    else:
                        body = client.build_body("completions", prompt=prompt, max_tokens=self.probe.max_tokens)
                    self._probing += 1
                    try:
                        await client.stream(self.probe.endpoint, body, purpose="probe")
                    finally:
                        self._probing -= 1
            await self._sleep(self.probe.interval)

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake early on stop (the next probe is scheduled after this one ends)."""
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    def mark(self, label: str, lane: str | None = None, **data: Any) -> None:
        self.bus.publish(Event(self.clock.now(), schema.MARK, lane, None, {"label": label, **data}))

    async def race(self, prompt: Any, *, endpoint: str = "completions", max_tokens: int | None = None,
                   probe_wait: float = 5.0) -> dict[str, Any]:
        """Race ``prompt`` (text or a RacePrompt) on every lane through this session's clients.

        The race is published on the bus (so it is recorded with the session).
        New probe requests wait while a race runs, and the race waits up to
        ``probe_wait`` seconds for probes already in flight, so they do not
        share the lanes with it.  Returns each lane's finished request record.
        """
        from lanemon.workloads.race import RacePrompt, run_race

        if isinstance(prompt, str):
            prompt = RacePrompt(text=prompt, id="prompt")
        self._racing += 1
        try:
            await self._ready.wait()
            missing = [c for c in self.clients.values() if c.model is None]
            if missing:
                await asyncio.gather(*(c.probe_models() for c in missing))
            deadline = time.monotonic() + probe_wait
            while self._probing and time.monotonic() < deadline and not self._stop.is_set():
                await asyncio.sleep(0.01)
            return await run_race(self, prompt, next(self._race_ids), endpoint=endpoint, max_tokens=max_tokens)
        finally:
            self._racing -= 1

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self.note("probes paused" if self.paused else "probes resumed")
        return self.paused

    def faster(self) -> None:  # live traffic has no speed
        return None

    def slower(self) -> None:
        return None

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()


SPEED_STEPS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, math.inf)


class ReplaySession:
    """Re-emits a recording's events on the bus at ``speed`` times real time."""

    mode = "replay"

    def __init__(self, path: Path | str, *, speed: float = 1.0, bus: EventBus | None = None) -> None:
        self.recording = Recording(path)
        self.recording_path = self.recording.path
        self.bus = bus or EventBus()
        self.speed: float = speed
        self.paused = False
        self.finished = False
        self.published = 0
        self.position_ns = 0
        self._stop = False

    @property
    def lanes(self) -> list[dict[str, Any]]:
        return self.recording.lanes

    @property
    def warnings(self) -> list[str]:
        return self.recording.warnings

    async def run(self) -> None:
        wall_last = time.perf_counter()
        virtual = None  # recording time (ns) that the playhead has reached
        batch = 0
        for ev in self.recording.events():
            if self._stop:
                return
            if virtual is None:
                virtual = ev.t
                wall_last = time.perf_counter()
            # advance the playhead until it reaches this event
            while ev.t > virtual:
                if self._stop:
                    return
                if math.isinf(self.speed) and not self.paused:
                    virtual = ev.t
                    break
                now = time.perf_counter()
                if not self.paused:
                    virtual += int((now - wall_last) * 1e9 * self.speed)
                wall_last = now
                if ev.t > virtual:
                    wait = 0.05 if self.paused else min(0.05, (ev.t - virtual) / 1e9 / self.speed)
                    await asyncio.sleep(wait)
                    batch = 0
            self.position_ns = ev.t
            self.bus.publish(ev)
            self.published += 1
            batch += 1
            if batch >= 500:  # let the UI breathe when replaying fast
                batch = 0
                await asyncio.sleep(0)
        self.finished = True
        for warning in self.recording.warnings:
            self.bus.publish(Event(self.position_ns, schema.NOTE, None, None, {"level": "warning", "message": warning}))

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def faster(self) -> None:
        self.speed = next((s for s in SPEED_STEPS if s > self.speed), SPEED_STEPS[-1])

    def slower(self) -> None:
        self.speed = next((s for s in reversed(SPEED_STEPS) if s < self.speed), SPEED_STEPS[0])

    def stop(self) -> None:
        self._stop = True
