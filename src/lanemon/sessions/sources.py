"""Event sources: a live session (probe loops over real lanes) or a replay.

Both publish :class:`~lanemon.events.Event` objects on an
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
import bisect
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanemon.bus import EventBus
from lanemon.config import LaneConfig, ProbeConfig
from lanemon.public_lane import PublicLane
from lanemon.client.http import LaneClient
from lanemon.client.stop_event import StopEvent
from lanemon import events as schema
from lanemon.recording.writer import Recorder
from lanemon.recording.reader import Recording
from lanemon.events import Clock, Event
from lanemon.results.requests import lane_data, note_data

if TYPE_CHECKING:
    from lanemon.measure.alerts import Rule
    from lanemon.measure.records import RequestRecord

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


@dataclass(frozen=True)
class MonitorOptions:
    """What runs beside a live dashboard (lanemon.monitor): the alert rules, the SLO targets, the exporter's
    address and the monitor's window."""

    rules: Sequence[Rule] = ()
    slo: dict[str, float] | None = None
    listen: tuple[str, int] | None = None
    window_s: float = 60.0

    @property
    def wanted(self) -> bool:
        """Anything to run: a rule, an exporter or SLO targets."""
        return bool(self.rules or self.listen or self.slo)


class LiveSession:
    """Probe loops over real lanes; every event goes to the bus (and the recorder)."""

    real_time = True
    """Its events happen now (the dashboard's charts settle a column at a time, ui/screens/dashboard.py)."""
    monitor_options: MonitorOptions | None = None
    """Set by ``lanemon live`` before the app starts: what the app runs beside the dashboard."""

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
        metrics_interval: float | None = None,
        host_interval: float | None = None,
    ) -> None:
        self.mode = mode
        self.metrics_interval = metrics_interval
        """Seconds between scrapes of each lane's Prometheus /metrics (None: no scraping)."""
        self.host_interval = host_interval
        """Seconds between host (psutil) samples (None: no sampling)."""
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
        self._stop = StopEvent()  # its sleeps end at stop (client/stop_event.py)
        self._wake = asyncio.Event()
        self.clients: dict[str, LaneClient] = {}
        self._ready = asyncio.Event()  # set once run() has made the clients
        self._racing = 0  # races in progress: no new probe requests meanwhile
        self._probing = 0  # probe requests in flight
        self._watch: Any = None
        """The load watcher while :meth:`run` runs (client/loadwatch.py): told when a request starts."""
        self._race_ids = itertools.count(1)
        if recorder is not None:
            self.bus.subscribe(recorder)
            recorder.on_error = self._recording_failed

    @property
    def lanes(self) -> list[PublicLane]:
        return [lane.shown(getattr(self.clients.get(lane.name), "model", None)) for lane in self.lane_configs]

    def _recording_failed(self, message: str) -> None:
        self.bus.publish(Event(self.clock.now(), schema.NOTE, None, None, note_data(message, "error")))

    def note(self, message: str, level: str = "info") -> None:
        self.bus.publish(Event(self.clock.now(), schema.NOTE, None, None, note_data(message, level)))

    async def run(self) -> None:
        for lane in self.lane_configs:
            self.clients[lane.name] = LaneClient(lane, clock=self.clock, emit=self.bus.publish)
            self.bus.publish(Event(self.clock.now(), schema.LANE, lane.name, None, lane_data(lane)))
        self._ready.set()
        try:
            loops = [self._probe_loop(c, i) for i, c in enumerate(self.clients.values())]
            loops.append(self._monitor_loop())
            loops.append(self._load_loop())
            await asyncio.gather(*loops)
        finally:
            for client in self.clients.values():
                await client.aclose()
            if self.recorder is not None:
                self.recorder.flush()

    async def _probe_loop(self, client: LaneClient, offset: int) -> None:
        prompts = itertools.cycle(self.prompts[offset % len(self.prompts):] + self.prompts[: offset % len(self.prompts)])
        while not self._stop.is_set():
            if not self.paused:
                self._probing += 1  # the health probe's latency is shown too (the UP badge)
                self._busy()
                try:
                    result = await client.probe_models()
                finally:
                    self._probing -= 1
                if (result.ok and self.probe.enabled and not self.paused and not self._racing
                        and not self._stop.is_set()):
                    prompt = next(prompts)
                    if self.probe.endpoint == "chat":
                        body = client.build_body("chat", prompt=prompt, max_tokens=self.probe.max_tokens)
                    else:
                        body = client.build_body("completions", prompt=prompt, max_tokens=self.probe.max_tokens)
                    self._probing += 1
                    self._busy()
                    try:
                        await client.stream(self.probe.endpoint, body, purpose="probe")
                    finally:
                        self._probing -= 1
            await self._sleep(self.probe.interval)

    async def _monitor_loop(self) -> None:
        """The lanes' /metrics and this machine's samples (client/monitors.py), paused with the probes."""
        from lanemon.client.monitors import Monitors

        mon = Monitors(self.clients.values(), self.clock, self.bus.publish, metrics_interval=self.metrics_interval,
                       host_interval=self.host_interval, paused=lambda: self.paused)
        mon.start()
        try:
            await self._stop.wait()
        finally:
            await mon.stop()

    async def _load_loop(self) -> None:
        """lanemon's own event-loop lag as ``client_load`` events (client/loadwatch.py) until stopped."""
        from lanemon.client.loadwatch import LoadWatch

        from lanemon.workloads.collector import CollectorHold

        # full collections only while nothing of lanemon's is in flight (client/loadwatch.py "Idle collections")
        watch = self._watch = LoadWatch(self.clock, self.bus.publish, idle=self.idle)
        with CollectorHold():
            watch.start()
            try:
                await self._stop.wait()
            finally:
                self._watch = None
                await watch.stop()

    def idle(self) -> bool:
        """No request of this session in flight: no probe (health or stream), no race."""
        return not self._probing and not self._racing

    def _busy(self) -> None:
        """A request of this session starts: the load watcher, slower while idle, watches closely again."""
        if self._watch is not None:
            self._watch.wake()

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake early on stop (the next probe is scheduled after this one ends)."""
        await self._stop.sleep(seconds)

    def mark(self, label: str, lane: str | None = None, **data: Any) -> None:
        self.bus.publish(Event(self.clock.now(), schema.MARK, lane, None, {"label": label, **data}))

    async def race(self, prompt: Any, *, endpoint: str = "completions", max_tokens: int | None = None,
                   probe_wait: float = 5.0) -> dict[str, RequestRecord]:
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
        self._busy()
        try:
            await self._ready.wait()
            missing = [c for c in self.clients.values() if c.model is None]
            if missing:
                await asyncio.gather(*(c.probe_models() for c in missing))
            deadline = time.monotonic() + probe_wait
            while self._probing and time.monotonic() < deadline and not self._stop.is_set():
                await asyncio.sleep(0.01)
            undetected = [c for c in self.clients.values() if c.continuous_usage is None]
            if undetected:  # once per client: per-chunk token counts where the lane offers them
                await asyncio.gather(*(c.detect_continuous_usage() for c in undetected))
            return await run_race(self, prompt, next(self._race_ids), endpoint=endpoint, max_tokens=max_tokens,
                                  slo=getattr(self, "race_slo", None))
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
SEEK_STEP_S = 10.0
"""Seconds that ``seek_relative(±1)`` steps (the dashboard's left/right keys)."""
SEEK_YIELD_EVERY = 20_000
"""A seek that folds many events yields to the event loop this often (the UI stays live)."""


class ReplaySession:
    """Re-emits a recording's events on the bus at ``speed`` times real time, with seeking.

    Opening builds a :class:`~lanemon.recording.index.RecordingIndex` (byte offsets
    of checkpoints and markers; no event is kept in memory).  Events are read
    lazily from the file.  Seeking:

    * forward: the events up to the target are published on the bus at once
      (subscribers fold them; the UI repaints on its timer, not per event);
    * backward: the subscribers' state is restored from the snapshot taken at
      the nearest checkpoint before the target (the playhead took it when it
      passed there), then the few events between it and the target are
      published.  The consumer provides the snapshot/restore pair through
      :meth:`attach_state`; without it only forward seeks are possible.

    The state after ``seek(T)`` is the fold of every event before the first
    one later than ``T``, exactly what playing up to ``T`` gives.
    """

    mode = "replay"

    def __init__(self, path: Path | str, *, speed: float = 1.0, bus: EventBus | None = None) -> None:
        from lanemon.recording.index import RecordingIndex

        self.recording = Recording(path)
        self.recording_path = self.recording.path
        self.index = RecordingIndex.build(self.recording)
        self.bus = bus or EventBus()
        self.speed: float = speed
        self.paused = False
        self.finished = False
        self.published = 0
        """Events published so far (the position in the file, in events)."""
        self.position_ns = 0
        """Time of the last published event."""
        self.playhead_ns = self.index.t_first
        """Where playback is, in session time (ns); moves with the wall clock, jumps on seeks."""
        self.seeking = False
        self.snapshots: dict[int, tuple[int, int, Any]] = {}
        """checkpoint number -> (published, position_ns, consumer snapshot), taken as the playhead passes."""
        self._hooks: tuple[Any, Any] | None = None
        self._stop = False
        self._warned = False
        self._fh = None
        self._reader: Any = None
        self._pending: tuple[int, Event] | None = None
        self._tmax = -1  # latest event time published so far
        self._next_cp = 0  # next checkpoint to snapshot at
        self._wall_last = time.perf_counter()
        self._open_at(self.index.checkpoints[0].offset)

    @property
    def lanes(self) -> list[PublicLane]:
        return self.recording.lanes

    @property
    def warnings(self) -> list[str]:
        return self.recording.warnings

    @property
    def wall_t0_s(self) -> float | None:
        """Wall-clock time (epoch s) of session time 0 when the recording's header gives it (``wall_t0_s``,
        recordings whose writer was handed the session clock); None otherwise (then ``created`` is used)."""
        header = getattr(self.recording, "header", None)
        v = header.get("wall_t0_s") if isinstance(header, dict) else None
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    @property
    def duration_ns(self) -> int:
        """Session time of the last event (the end of the timeline)."""
        return self.index.duration_ns

    @property
    def markers(self) -> list[Any]:
        """Every ``mark`` event as :class:`~lanemon.recording.index.Marker` (time, label, offset)."""
        return self.index.markers

    def attach_state(self, snapshot: Any, restore: Any) -> None:
        """Let backward seeks rewind the consumer: ``snapshot() -> obj`` copies everything the
        consumer folded from the bus; ``restore(obj)`` puts such a copy back (it may be restored
        more than once, so restore a copy of it).  Call before :meth:`run`."""
        self._hooks = (snapshot, restore)

    # -- reading ---------------------------------------------------------------

    def _open_at(self, offset: int) -> None:
        from lanemon.recording.index import read_from

        if self._fh is None:
            self._fh = self.recording.path.open("rb")
        self._reader = read_from(self._fh, offset, self.index.end_offset, self.recording)
        self._pending = None
        cps = self.index.checkpoints
        self._next_cp = bisect.bisect_left([c.offset for c in cps], offset)

    def _peek(self) -> Event | None:
        if self._pending is None:
            if self._reader is None:
                return None
            self._pending = next(self._reader, None)
            if self._pending is None:
                self._reader = None
                return None
        return self._pending[1]

    def _publish_next(self) -> None:
        assert self._pending is not None
        offset, ev = self._pending
        self._pending = None
        cps = self.index.checkpoints
        while self._next_cp < len(cps) and cps[self._next_cp].offset <= offset:
            if self._next_cp not in self.snapshots and self._hooks is not None:
                self.snapshots[self._next_cp] = (self.published, self.position_ns, self._hooks[0]())
            self._next_cp += 1
        self.position_ns = ev.t
        if ev.t > self._tmax:
            self._tmax = ev.t
        self.bus.publish(ev)
        self.published += 1

    def _close_file(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._reader = None

    # -- playing ---------------------------------------------------------------

    async def run(self) -> None:
        """Publish events as the playhead reaches them; returns at the end (or on stop).

        After the end, a seek backwards sets ``finished`` to False again and
        ``run()`` may be called again to go on playing from there.
        """
        self._wall_last = time.perf_counter()
        batch = 0
        while not self._stop:
            if self.seeking:
                await asyncio.sleep(0.01)
                self._wall_last = time.perf_counter()
                continue
            ev = self._peek()
            if ev is None:
                break
            if ev.t > self.playhead_ns:
                if math.isinf(self.speed) and not self.paused:
                    self.playhead_ns = ev.t
                else:
                    now = time.perf_counter()
                    if not self.paused:
                        self.playhead_ns += int((now - self._wall_last) * 1e9 * self.speed)
                    self._wall_last = now
                    if ev.t > self.playhead_ns:
                        wait = 0.05 if self.paused else min(0.05, (ev.t - self.playhead_ns) / 1e9 / self.speed)
                        await asyncio.sleep(wait)
                        batch = 0
                        continue
            self._publish_next()
            batch += 1
            if batch >= 500:  # let the UI breathe when replaying fast
                batch = 0
                await asyncio.sleep(0)
        if self._stop:
            self._close_file()
            return
        self._finish()

    def _finish(self) -> None:
        self.finished = True
        self.playhead_ns = max(self.playhead_ns, self.index.t_last)
        if not self._warned:
            self._warned = True
            for warning in self.recording.warnings:
                self.bus.publish(Event(self.position_ns, schema.NOTE, None, None, note_data(warning, "warning")))

    # -- seeking ---------------------------------------------------------------

    async def seek(self, target_ns: int) -> None:
        """Move the playhead to session time ``target_ns`` (clamped to the recording)."""
        target = max(0, min(int(target_ns), self.index.t_last))
        cps = self.index.checkpoints
        # the furthest checkpoint (with a snapshot) whose events before it all belong to the target
        best = self.index.checkpoint_for(target)
        while best >= 0 and best not in self.snapshots:
            best -= 1
        current_ok = self._tmax <= target  # everything published so far is before the target
        use_snapshot = best >= 0 and (not current_ok or self.snapshots[best][0] > self.published)
        if not current_ok and best < 0:
            raise RuntimeError("seeking backwards needs attach_state() before run()")
        self.seeking = True
        try:
            if use_snapshot:
                published, position, snap = self.snapshots[best]
                assert self._hooks is not None
                self._hooks[1](snap)
                self.published, self.position_ns = published, position
                self._tmax = cps[best].tmax_before
                self._open_at(cps[best].offset)
            n = 0
            while True:
                ev = self._peek()
                if ev is None or ev.t > target:
                    break
                self._publish_next()
                n += 1
                if n % SEEK_YIELD_EVERY == 0:
                    await asyncio.sleep(0)
                    if self._stop:
                        return
            self.playhead_ns = target
            self._wall_last = time.perf_counter()
            if ev is None:
                self._finish()
            else:
                self.finished = False
        finally:
            self.seeking = False

    async def seek_relative(self, seconds: float) -> None:
        """Jump ``seconds`` forward (negative: back) from the playhead."""
        await self.seek(self.playhead_ns + int(seconds * 1e9))

    async def seek_marker(self, direction: int) -> bool:
        """Jump to the next (``direction > 0``) or previous marker; False if there is none.

        "Previous" skips a marker less than half a second behind the playhead, so
        pressing it again keeps going back instead of landing on the same one.
        """
        if direction > 0:
            times = [m.t for m in self.index.markers if m.t > self.playhead_ns]
            target = min(times) if times else None
        else:
            times = [m.t for m in self.index.markers if m.t < self.playhead_ns - 500_000_000]
            target = max(times) if times else None
        if target is None:
            return False
        await self.seek(target)
        return True

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def faster(self) -> None:
        self.speed = next((s for s in SPEED_STEPS if s > self.speed), SPEED_STEPS[-1])

    def slower(self) -> None:
        self.speed = next((s for s in reversed(SPEED_STEPS) if s < self.speed), SPEED_STEPS[0])

    def stop(self) -> None:
        self._stop = True
        self._reader = None
        if self._fh is not None:  # kept open after the end for seeking back; the app is done with it now
            self._fh.close()
            self._fh = None
