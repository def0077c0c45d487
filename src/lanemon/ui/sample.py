"""A deterministic scripted session: fixed events and a tiny in-memory source.

Used by the UI tests and snapshots, and handy for looking at the dashboard
without any lane (``python -m lanemon.ui.sample``).  Times are made up but
shaped like the write-up's two lanes (A: TTFT ~0.17 s, ~148 tok/s; B: TTFT
~0.22 s, ~134 tok/s).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import msgspec

from lanemon.bus import EventBus
from lanemon.public_lane import PublicLane
from lanemon import events as schema
from lanemon.events import Event

MS = 1_000_000
SAMPLE_LANES: list[PublicLane] = [
    PublicLane("A", "http://127.0.0.1:8001/v1", "deepseek-v4.1-flash-exl3"),
    PublicLane("B", "http://127.0.0.1:8888/v1", "deepseek-v4.1-flash"),
]

# (ttft ms, decode tok/s) per request; a deterministic wobble around each lane's profile
_PROFILE = {
    "A": [(172, 148.2), (168, 150.1), (181, 144.7), (165, 151.3), (176, 146.0), (199, 139.8),
          (170, 149.5), (174, 147.7), (163, 152.4), (188, 142.9), (171, 148.8), (169, 150.6)],
    "B": [(221, 134.1), (230, 131.0), (214, 137.2), (246, 127.5), (219, 135.8), (225, 133.3),
          (262, 121.9), (217, 136.4), (228, 132.2), (223, 134.7)],
}


def _request(lane: str, req: str, start: int, ttft_ms: float, tps: float, tokens: int = 64,
             usage: bool = True, chunks: int = 16) -> list[Event]:
    ttft = int(ttft_ms * MS)
    decode_ns = int((tokens - 1) / tps * 1e9)
    evs = [
        Event(start, schema.REQUEST, lane, req, {"endpoint": "chat", "purpose": "probe", "max_tokens": tokens}),
        Event(start + ttft - 2 * MS, schema.FIRST_BYTE, lane, req),
    ]
    n_chunks = chunks if usage else tokens
    for k in range(n_chunks):
        t = start + ttft + (decode_ns * k) // max(1, n_chunks - 1)
        evs.append(Event(t, schema.TOKEN, lane, req, {"text": "tok "}))
    end = start + ttft + decode_ns
    if usage:
        evs.append(Event(end, schema.USAGE, lane, req, {"prompt_tokens": 24, "completion_tokens": tokens}))
    evs.append(Event(end, schema.DONE, lane, req, {"finish_reason": "length", "status": 200}))
    return evs


def sample_events() -> list[Event]:
    """The scripted session, sorted by time."""
    evs: list[Event] = []
    for i, lane in enumerate(("A", "B")):
        evs.append(Event(50 * MS + i * MS, schema.PROBE, lane, None,
                         {"ok": True, "latency_s": (12 + 7 * i) / 1000, "models": ["m"]}))
    for lane, rows in _PROFILE.items():
        offset = 0 if lane == "A" else 400 * MS
        for i, (ttft, tps) in enumerate(rows):
            start = 200 * MS + offset + i * 2_000 * MS
            evs += _request(lane, f"{lane}-{i}", start, ttft, tps,
                            usage=not (lane == "B" and i == len(rows) - 1))
    # failures
    evs += [
        Event(7_100 * MS, schema.REQUEST, "B", "B-e1", {"endpoint": "chat", "purpose": "probe"}),
        Event(7_150 * MS, schema.ERROR, "B", "B-e1",
              {"cls": schema.ERR_HTTP, "status": 503, "message": "503 Service Unavailable: engine overloaded"}),
        Event(15_100 * MS, schema.REQUEST, "B", "B-e2", {"endpoint": "chat", "purpose": "probe"}),
        Event(25_100 * MS, schema.ERROR, "B", "B-e2",
              {"cls": schema.ERR_TIMEOUT, "message": "read timeout after 10.0 s"}),
        Event(19_000 * MS, schema.REQUEST, "A", "A-e1", {"endpoint": "chat", "purpose": "probe"}),
        Event(19_300 * MS, schema.ERROR, "A", "A-e1",
              {"cls": schema.ERR_CUT, "message": "stream ended before [DONE]"}),
    ]
    # a request still in flight on A at the end
    evs += [
        Event(24_500 * MS, schema.REQUEST, "A", "A-open", {"endpoint": "chat", "purpose": "probe"}),
        Event(24_670 * MS, schema.TOKEN, "A", "A-open", {"text": "The "}),
        Event(25_200 * MS, schema.PROBE, "A", None, {"ok": True, "latency_s": 0.011, "models": ["m"]}),
        Event(25_210 * MS, schema.PROBE, "B", None, {"ok": True, "latency_s": 0.018, "models": ["m"]}),
    ]
    evs.sort(key=lambda e: e.t)
    return evs


class ScriptedSource:
    """An in-memory :class:`~lanemon.ui.app.Source` that publishes a fixed list of events.

    ``run()`` publishes everything (honouring pause) and then sets ``finished``;
    with ``hold=True`` it then waits until :meth:`stop` like a live session.  ``real_time=True``: the
    screens treat it as a session happening now (a test that feeds it as time goes by: the dashboard's charts
    settle a column at a time and the status bar ticks once a second, as for ``LiveSession``).
    """

    def __init__(self, events: list[Event] | None = None, *,
                 lanes: Sequence[PublicLane | dict[str, str | None]] | None = None,
                 mode: str = "demo", recording_path: Path | None = None, speed: float | None = None,
                 hold: bool = False, real_time: bool = False) -> None:
        self.mode = mode
        self.real_time = real_time
        self.bus = EventBus()
        self.lanes = [lane if isinstance(lane, PublicLane) else msgspec.convert(lane, PublicLane)
                      for lane in (SAMPLE_LANES if lanes is None else lanes)]  # a test's lanes may be written as dicts
        self.recording_path = recording_path
        self.paused = False
        self.speed = speed
        self.finished = False
        self.events = list(sample_events() if events is None else events)
        self.hold = hold
        self.stopped = False
        self._stop: asyncio.Event | None = None  # created inside the running loop

    async def run(self) -> None:
        self._stop = asyncio.Event()
        for ev in self.events:
            while self.paused and not self.stopped:
                await asyncio.sleep(0.01)
            if self.stopped:
                return
            self.bus.publish(ev)
        self.finished = self.mode == "replay"
        if self.hold and not self.stopped:
            await self._stop.wait()

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    def faster(self) -> None:
        if self.mode == "replay" and self.speed is not None and self.speed != float("inf"):
            self.speed *= 2

    def slower(self) -> None:
        if self.mode == "replay" and self.speed is not None:
            self.speed = 8.0 if self.speed == float("inf") else max(0.25, self.speed / 2)

    def stop(self) -> None:
        self.stopped = True
        if self._stop is not None:
            self._stop.set()


if __name__ == "__main__":  # pragma: no cover - manual preview
    from lanemon.ui.app import make_app

    make_app(ScriptedSource(hold=True, recording_path=Path("~/.local/share/lanemon/sample.jsonl"))).run()
