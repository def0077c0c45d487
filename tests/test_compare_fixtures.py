"""Fixed recordings for the compare tests: a decode ladder (5 reps), a prefill ladder and two races.

Everything is built by hand (no lane, no clock), so the numbers -- and the
compare screen's snapshot -- are the same on every run.  ``write_recording``
writes events as a real recording; ``slow_copy`` makes the "regression" copy
of a recording by stretching one lane's timestamps (docs/COMPARE.md, "Testing").
"""

from __future__ import annotations

from pathlib import Path

import orjson

from lanemon import events as schema
from lanemon.events import SCHEMA_NAME, Event
from test_bench_results import MS, Ev
from test_race_fixtures import race_events

LANES = ("A", "B")
DECODE_RATE = {"A": 120, "B": 100}  # tokens per request per second of a level
PREFILL_MS = {"A": {2000: 800, 8000: 3100}, "B": {2000: 600, 8000: 2000}}


REPS = 5


def _decode_events(jitter: float = 0.04, reps: int = REPS) -> list[Event]:
    """Every rep's wall time is 1 s + up to ``jitter`` (rep r of n: r / (n - 1) of it): spread, never overlap
    with a copy 1.3x slower."""
    ev = Ev("decode", LANES, config={"levels": [1, 2], "reps": reps, "categories": ["coding", "prose"]})
    t = 1000 * MS
    for lane in LANES:
        for level in (1, 2):
            for rep in range(reps):
                wall = int((1000 + jitter * 1000 * rep / max(1, reps - 1)) * MS)
                reqs = [dict(sent=t, ttft=(150 + 20 * (lane == "B")) * MS, end=t + wall,
                             tokens=DECODE_RATE[lane] - 10 * (level - 1), part="level", level=level, rep=rep,
                             category="coding" if i % 2 == 0 else "prose") for i in range(level)]
                ev.cell(lane, f"{lane}/C{level}/r{rep}", t, t + wall, reqs, part="level", level=level, rep=rep)
                t += wall + 10 * MS
        for cat, tokens in (("coding", 150), ("prose", 90)):
            for rep in range(reps):
                wall = int((1000 + jitter * 1000 * rep / max(1, reps - 1)) * MS)
                reqs = [dict(sent=t, ttft=160 * MS, end=t + wall, tokens=tokens - 10 * (lane == "B"),
                             part="category", category=cat, level=1, rep=rep)]
                ev.cell(lane, f"{lane}/{cat}/r{rep}", t, t + wall, reqs, part="category", category=cat, level=1,
                        rep=rep)
                t += wall + 10 * MS
    return ev.end()


def _prefill_events(t0: int) -> list[Event]:
    ev = Ev("prefill", LANES, config={"lengths": [2000, 8000], "reps": 1, "cache_check": False})
    t = t0
    for lane in LANES:
        for length in (2000, 8000):
            ms = PREFILL_MS[lane][length]
            reqs = [dict(sent=t, ttft=ms * MS, prompt_tokens=length, tokens=1, run="cold", part="length",
                         length=length, rep=0)]
            ev.cell(lane, f"{lane}/{length}/r0", t, t + (ms + 10) * MS, reqs, part="length", length=length, rep=0)
            t += (ms + 20) * MS
    evs = ev.end()
    return [e for e in evs if e.kind != schema.LANE]


def session_events() -> list[Event]:
    """Decode, then prefill, then two races: one fixed session of lanes A and B."""
    decode = _decode_events()
    end = max(e.t for e in decode) + 100 * MS
    prefill = _prefill_events(end)
    end = max(e.t for e in prefill) + 100 * MS
    races = [Event(e.t + end, e.kind, e.lane, e.req, e.data) for e in race_events(2)
             if e.kind != schema.LANE]
    return decode + prefill + races


def write_recording(path: Path, events: list[Event], command: str = "fixed session") -> Path:
    header = {"schema": SCHEMA_NAME, "version": "1.0", "lanemon": "0.1.0", "created": "2026-10-18T09:00:00+00:00",
              "command": command, "lanes": [{"name": n, "url": f"http://127.0.0.1:800{i}/v1", "model": f"model-{n}"}
                                            for i, n in enumerate(LANES)]}
    lines = [orjson.dumps(header)] + [orjson.dumps(e.to_json_obj()) for e in events]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def slow_copy(src: Path, dst: Path, lane: str = "A", factor: float = 1.3) -> Path:
    """A copy of recording ``src`` where every event of ``lane`` happens ``factor`` times as long after that
    lane's first event: the same session with that lane ``factor``× slower (TTFT × factor, tok/s ÷ factor)."""
    lines = src.read_bytes().splitlines()
    objs = [orjson.loads(x) for x in lines[1:] if x.strip()]
    t0 = min((o["t"] for o in objs if o.get("lane") == lane), default=0)
    out = [lines[0]]
    for o in objs:
        if o.get("lane") == lane:
            o["t"] = t0 + int((o["t"] - t0) * factor)
        out.append(orjson.dumps(o))
    dst.write_bytes(b"\n".join(out) + b"\n")
    return dst
