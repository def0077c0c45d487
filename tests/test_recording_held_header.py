"""A recorder that holds its header until the run knows what to add to it (``bench load`` across Ray: the
workers, their hosts and clock offsets, issue 41), and the header's typed ``workers`` list."""

from __future__ import annotations

import orjson
import pytest

from lanemon.events import Event
from lanemon.recording import writer
from lanemon.recording.reader import Recording, RecordingError
from lanemon.recording.writer import Recorder, make_header

LANES = [{"name": "A", "url": "http://x/v1", "model": "m"}]
WORKERS = [{"worker": 0, "node": "n" * 56, "host": "load-1", "address": "10.0.0.2", "version": "9",
            "offset_ns": -1200, "offset_uncertainty_ns": 800, "synced_at_ns": 5}]


def _lines(path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_a_held_header_is_written_first_with_what_the_run_added_then_the_events_held(tmp_path):
    rec = Recorder(tmp_path / "r.jsonl", make_header("bench-load", LANES), hold_header=True)
    assert rec.path.exists() and rec.path.read_bytes() == b""  # created at once (a bad path is refused early)
    rec(Event(1, "probe", "A", None, {"ok": True}))
    rec(Event(2, "note", None, None, {"level": "info", "message": "joined"}))
    assert rec.path.read_bytes() == b"" and rec.header_held
    rec.release_header({"workers": WORKERS})
    rec(Event(3, "mark", None, None, {"label": "bench"}))
    rec.close()
    lines = _lines(rec.path)
    assert lines[0]["workers"] == WORKERS and lines[0]["command"] == "bench-load"
    assert [ln["t"] for ln in lines[1:]] == [1, 2, 3]
    assert rec.events == 3 and rec.outcome().endswith("(3 events)")
    assert Recording(rec.path).header["workers"] == WORKERS  # the reader's schema takes it


def test_a_held_header_never_released_is_written_as_it_is_at_close(tmp_path):
    rec = Recorder(tmp_path / "r.jsonl", make_header("bench-load", LANES), hold_header=True)
    rec(Event(1, "probe", "A", None, {"ok": True}))
    rec.close()  # the run was refused before its workers were placed
    lines = _lines(rec.path)
    assert "workers" not in lines[0] and lines[0]["schema"] == "lanemon.recording" and len(lines) == 2


def test_release_after_the_header_is_written_changes_nothing(tmp_path):
    rec = Recorder(tmp_path / "r.jsonl", make_header("bench-load", LANES))
    rec.release_header({"workers": WORKERS})
    rec.close()
    assert "workers" not in _lines(rec.path)[0]


def test_the_events_held_are_bounded_in_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "MAX_HELD_BYTES", 300)
    rec = Recorder(tmp_path / "r.jsonl", make_header("bench-load", LANES), hold_header=True)
    for t in range(10):
        rec(Event(t, "note", None, None, {"level": "info", "message": "x" * 40}))
    assert not rec.header_held  # released as it was once past the bound
    rec.close()
    assert [ln.get("t") for ln in _lines(rec.path)[1:]] == list(range(10))


def test_a_header_whose_workers_do_not_fit_the_schema_is_refused(tmp_path):
    path = tmp_path / "bad.jsonl"
    header = make_header("bench-load", LANES)
    header["workers"] = [{**WORKERS[0], "offset_ns": "soon"}]
    path.write_bytes(orjson.dumps(header) + b"\n")
    with pytest.raises(RecordingError, match="workers"):
        Recording(path)
