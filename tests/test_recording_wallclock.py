"""The recording header's wall-clock anchor: ``created`` to the millisecond, and ``wall_t0_s`` (the wall-clock
time of the session clock's t = 0) when the writer is handed the session clock; old headers still read."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from types import SimpleNamespace

import orjson
import pytest

from lanemon import events as schema
from lanemon.events import Clock, Event
from lanemon.recording.reader import Recording, RecordingError
from lanemon.recording.writer import Recorder, make_header
from lanemon.sessions.sources import ReplaySession
from lanemon.ui.screens.dashboard import wall_start_s

LANES = [{"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "m"}]


def replayed(path):
    """A replay of ``path`` played to its end at full speed, as the dashboard would play it."""
    replay = ReplaySession(path, speed=float("inf"))
    asyncio.run(replay.run())
    assert replay.finished
    return replay


EPS = 2e-3  # rounding of created (1 ms) and wall_t0_s (1 µs)


def test_created_has_milliseconds_and_is_when_the_header_was_made():
    before = time.time()
    header = make_header("test", LANES)
    after = time.time()
    created = header["created"]
    assert created.endswith("+00:00") and "." in created and len(created.split(".")[1]) == len("123+00:00")
    t = datetime.fromisoformat(created).timestamp()
    assert before - EPS <= t <= after + 1e-6  # truncated to the millisecond, never later than the call
    assert "wall_t0_s" not in header  # no clock given: no anchor claimed


def test_wall_t0_s_is_the_wall_time_of_the_clocks_start_wherever_the_header_is_made():
    # a session clock that started 5 s ago (as a bench's harness starts its clock, then connects)
    before = time.time()
    clock = Clock(time.perf_counter_ns() - 5_000_000_000)
    after = time.time()
    header = make_header("bench-decode", LANES, {"bench": "decode"}, clock=clock)
    assert before - 5 - EPS <= header["wall_t0_s"] <= after - 5 + EPS
    # created stays when the header was made, about 5 s after t = 0
    assert datetime.fromisoformat(header["created"]).timestamp() - header["wall_t0_s"] > 4.9
    # a clock made after the header would be: t0 in the future of the header, still exact
    before = time.time()
    clock = Clock(time.perf_counter_ns() + 2_000_000_000)
    after = time.time()
    assert before + 2 - EPS <= make_header("demo", LANES, clock=clock)["wall_t0_s"] <= after + 2 + EPS


def test_events_map_to_the_wall_clock_through_the_anchor_on_replay(tmp_path):
    clock = Clock()
    path = tmp_path / "s.jsonl"
    stamps = []
    with Recorder(path, make_header("demo", LANES, clock=clock)) as rec:
        for i in range(3):
            before = time.time()
            t = clock.now()
            after = time.time()
            stamps.append((before, after))
            rec(Event(t, schema.TOKEN, "A", "A-1", {"text": f"t{i}"}))
    replay = replayed(path)
    assert replay.wall_t0_s == Recording(path).header["wall_t0_s"]
    for ev, (before, after) in zip(Recording(path).events(), stamps):
        wall = replay.wall_t0_s + ev.t / 1e9
        assert before - EPS <= wall <= after + EPS
    # the dashboard's x axis takes the source's anchor before the header's created stamp
    app = SimpleNamespace(source=replay, wall_base_s=lambda: 0.0)
    assert wall_start_s(app) == replay.wall_t0_s


def write(path, header):
    path.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps({"t": 5, "kind": "note",
                                                                  "data": {"level": "info", "message": "x"}}) + b"\n")
    return path


def test_old_headers_without_an_anchor_still_read_and_replay(tmp_path):
    header = {"schema": schema.SCHEMA_NAME, "version": schema.SCHEMA_VERSION_STR, "lanemon": "0.1.0",
              "created": "2026-10-18T09:00:00+00:00", "command": "demo", "lanes": LANES, "host": {}}
    path = write(tmp_path / "old.jsonl", header)
    rec = Recording(path)
    assert rec.warnings == [] and len(list(rec.events())) == 1
    replay = replayed(path)
    assert replay.wall_t0_s is None
    app = SimpleNamespace(source=replay, wall_base_s=lambda: datetime.fromisoformat(header["created"]).timestamp())
    assert wall_start_s(app) == datetime.fromisoformat("2026-10-18T09:00:00+00:00").timestamp()


@pytest.mark.parametrize("bad", [True, "soon", [1], {"s": 1}])
def test_a_wall_t0_s_of_the_wrong_type_is_refused_naming_the_field(tmp_path, bad):
    header = {"schema": schema.SCHEMA_NAME, "version": schema.SCHEMA_VERSION_STR, "created": "2026-10-18T09:00:00",
              "lanes": LANES, "host": {}, "wall_t0_s": bad}
    with pytest.raises(RecordingError, match="wall_t0_s"):
        Recording(write(tmp_path / "bad.jsonl", header))


def test_an_implausible_anchor_is_not_believed_by_the_axis(tmp_path):
    header = {"schema": schema.SCHEMA_NAME, "version": schema.SCHEMA_VERSION_STR, "created": "2026-10-18T09:00:00",
              "lanes": LANES, "host": {}, "wall_t0_s": 1e15}
    replay = replayed(write(tmp_path / "far.jsonl", header))
    assert replay.wall_t0_s == 1e15 and wall_start_s(SimpleNamespace(source=replay, wall_base_s=lambda: None)) is None
