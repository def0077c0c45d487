"""Recorder and reader: header, round trip, truncation, corruption, versions, write failures."""

import orjson
import pytest

from lanemon import events as schema
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import Recording, RecordingError, read_events
from lanemon.events import Event

LANES = [{"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "m"}]


def sample_events(n=20):
    return [Event(i * 1000, schema.TOKEN, "A", "A-1", {"text": f"t{i}"}) for i in range(n)]


def record(path, events):
    with Recorder(path, make_header("test", LANES)) as rec:
        for ev in events:
            rec(ev)
    return rec


def test_round_trip_keeps_every_event(tmp_path):
    evs = sample_events() + [Event(99_000, schema.PROBE, "A", None, {"ok": True, "latency_s": 0.01})]
    rec = record(tmp_path / "s.jsonl", evs)
    header, back, warnings = read_events(rec.path)
    assert header["schema"] == schema.SCHEMA_NAME and header["version"] == schema.SCHEMA_VERSION_STR
    assert header["lanes"] == LANES and "host" in header
    assert back == evs and warnings == []


def test_truncated_last_line_keeps_the_rest_and_warns_once(tmp_path):
    rec = record(tmp_path / "s.jsonl", sample_events(10))
    raw = rec.path.read_bytes()
    rec.path.write_bytes(raw[: len(raw) - 12])  # cut the last line in half
    r = Recording(rec.path)
    back = list(r.events())
    assert [e.data["text"] for e in back] == [f"t{i}" for i in range(9)]
    assert len(r.warnings) == 1 and "truncated" in r.warnings[0]


def test_corrupt_middle_line_is_skipped_and_counted(tmp_path):
    rec = record(tmp_path / "s.jsonl", sample_events(5))
    lines = rec.path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{not json\n"
    rec.path.write_bytes(b"".join(lines))
    r = Recording(rec.path)
    assert len(list(r.events())) == 4
    assert r.skipped == 1 and any("line 4" in w for w in r.warnings)


@pytest.mark.parametrize(
    "first, message",
    [
        (b"", "empty"),
        (b"hello\n", "not a lanemon recording"),
        (b'{"schema": "other"}\n', "not a lanemon recording"),
        (orjson.dumps({"schema": schema.SCHEMA_NAME, "version": "9.0", "lanemon": "9.9"}) + b"\n", "upgrade lanemon"),
    ],
)
def test_bad_headers_are_refused_clearly(tmp_path, first, message):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(first)
    with pytest.raises(RecordingError, match=message):
        Recording(p)


def test_newer_minor_version_loads_with_a_warning(tmp_path):
    p = tmp_path / "minor.jsonl"
    header = make_header("test", LANES)
    header["version"] = f"{schema.SCHEMA_VERSION[0]}.{schema.SCHEMA_VERSION[1] + 5}"
    p.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(sample_events(1)[0].to_json_obj()) + b"\n")
    r = Recording(p)
    assert len(list(r.events())) == 1 and "newer" in r.warnings[0]


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(RecordingError, match="no such file"):
        Recording(tmp_path / "missing.jsonl")


def test_two_recorders_never_share_a_file(tmp_path):
    p = tmp_path / "same.jsonl"
    r1 = Recorder(p, make_header("a", LANES))
    r2 = Recorder(p, make_header("b", LANES))
    assert r1.path != r2.path and r2.path.name == "same-2.jsonl"
    r1.close(), r2.close()


def test_write_failure_stops_recording_and_reports_once(tmp_path):
    errors = []
    rec = Recorder(tmp_path / "s.jsonl", make_header("test", LANES), on_error=errors.append)
    rec(sample_events(1)[0])
    rec.flush()

    class Broken:
        def write(self, _):
            raise OSError(28, "No space left on device")

        def flush(self):
            raise OSError(28, "No space left on device")

        def close(self):
            pass

    rec._fh = Broken()
    rec(sample_events(2)[1])
    rec(sample_events(3)[2])  # after the failure: ignored, no second report
    assert len(errors) == 1 and "No space left on device" in errors[0]
    assert rec.failed
    rec.close()
    assert len(list(Recording(rec.path).events())) == 1


@pytest.mark.parametrize("line", [
    b'{"t": 1.5, "kind": "token", "lane": "A", "req": "A-1", "data": {"text": "x"}}',
    b'{"t": 99999999999999999999999, "kind": "token", "lane": "A", "req": "A-1"}',
    b'{"t": 5, "kind": 7, "lane": "A"}',
    b'{"t": 5, "kind": "token", "lane": "A", "req": "A-1", "data": "text"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"t": 5, "kind": "note", "data": ' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
])
def test_the_schema_still_rejects_what_the_reader_always_rejected(tmp_path, line):
    """Held before the typed schema (recording/schema.py) and kept: garbage and deep nesting are one skipped line."""
    rec = record(tmp_path / "s.jsonl", sample_events(6))
    lines = rec.path.read_bytes().split(b"\n")
    rec.path.write_bytes(b"\n".join(lines[:3] + [line] + lines[3:]))
    r = Recording(rec.path)
    assert len(list(r.events())) == 6 and r.skipped == 1 and "line 4" in r.warnings[0]


def test_unknown_kinds_and_fields_still_read(tmp_path):
    evs = [Event(1, schema.TOKEN, "A", "A-1", {"text": "x", "from_the_future": {"x": [1, 2]}}),
           Event(2, "telemetry", "A", None, {"anything": [1]}), Event(3, schema.MARK, None, None, {"label": "m", "cell": 4})]
    rec = record(tmp_path / "s.jsonl", evs)
    r = Recording(rec.path)
    assert list(r.events()) == evs and r.skipped == 0 and r.warnings == []


def test_every_sample_session_fits_the_schema():
    from pathlib import Path

    paths = sorted((Path(__file__).resolve().parents[1] / "sample_sessions").glob("*.jsonl"))
    assert len(paths) >= 10
    for path in paths:
        r = Recording(path)
        n = sum(1 for _ in r.events())
        assert n > 50 and r.skipped == 0 and r.warnings == [], (path, r.warnings)


async def test_replay_counts_a_broken_line_once(tmp_path):
    """The index counts it; the replay reading it again (also after a seek back) does not count it again."""
    import math

    from lanemon.sessions.sources import ReplaySession

    path = tmp_path / "broken.jsonl"
    rec = record(path, sample_events(12))
    lines = rec.path.read_bytes().split(b"\n")[:-1]
    path.write_bytes(b"\n".join(lines[:4] + [b'{"t": 5, "kind": "probe", "lane"'] + lines[4:]) + b"\n")
    session = ReplaySession(path, speed=math.inf)
    published = []
    session.bus.subscribe(lambda ev: published.append(ev) if ev.kind != schema.NOTE else None)
    await session.run()
    assert len(published) == len(lines) - 1 == session.index.events
    assert session.recording.skipped == 1 and "line 5" in session.warnings[0]


def test_bounded_lines_agrees_with_a_plain_split_at_every_chunk_boundary():
    """Lines under the bound come back exactly; longer ones only as their size; offsets add up."""
    import io
    import random

    from lanemon.recording.schema import Overlong, bounded_lines

    rnd = random.Random(7)
    for trial in range(300):
        parts = [bytes(rnd.choice(b"ab{}") for _ in range(rnd.choice((0, 1, 3, 7, 8, 9, 15, 40))))
                 for _ in range(rnd.randint(0, 12))]
        data = b"\n".join(parts) + (b"\n" if rnd.random() < 0.5 else b"")
        max_line, chunk = rnd.choice((4, 8, 9)), rnd.choice((1, 2, 3, 5, 16))
        got = list(bounded_lines(io.BytesIO(data), max_line=max_line, chunk=chunk))
        want_lines = data.split(b"\n")
        last = want_lines.pop()
        want = [(w, True) for w in want_lines] + ([(last, False)] if last else [])
        assert len(got) == len(want), (data, max_line, chunk)
        size = 0
        for g, (line, ended) in zip(got, want):
            if len(line) >= max_line:
                assert isinstance(g, Overlong) and g.size == len(line) + ended and g.ended == ended
            else:
                assert g == (line, ended)
            size += len(line) + ended
        assert size == len(data)


def test_replay_path_reads_what_the_reader_reads_in_hostile_files(tmp_path, monkeypatch):
    """Random files (broken lines, rows that fail the schema, blank and overlong lines, a cut last line) with
    tiny chunks and a tiny line bound: the index + read_from path (a replay) yields exactly the reader's
    events and counts the same skipped lines."""
    import random

    from lanemon.recording import index as index_mod
    from lanemon.recording import reader as reader_mod
    from lanemon.recording import schema as schema_mod
    from lanemon.recording.index import RecordingIndex, read_from

    monkeypatch.setattr(schema_mod, "MAX_LINE_BYTES", 400)
    monkeypatch.setattr(reader_mod, "MAX_LINE_BYTES", 400)
    monkeypatch.setattr(index_mod, "MAX_LINE_BYTES", 400)
    rnd = random.Random(11)
    bad_rows = [b'{"t": 5, "kind": "probe", "lane"', b"garbage", b'{"t":7,"kind":"usage","lane":"A","req":"A-1",'
                b'"data":{"prompt_tokens":"7"}}', b'{"t":8,"kind":"token","lane":["A"],"req":"A-1"}', b"   ",
                b'{"t":9,"kind":"mark","data":{"label":"' + b"x" * 600 + b'"}}']
    for trial in range(40):
        monkeypatch.setattr(index_mod, "CHUNK", rnd.choice((64, 100, 257, 1024, 4096)))
        monkeypatch.setattr(index_mod, "CHECKPOINT_EVERY", rnd.choice((3, 7, 50)))
        path = tmp_path / f"r{trial}.jsonl"
        evs = [Event(i * 1000, rnd.choice((schema.TOKEN, schema.MARK)), "A", "A-1",
                     {"text": "t" * rnd.randint(0, 30)} if rnd.random() < 0.8 else {"label": f"m{i}"})
               for i in range(rnd.randint(1, 60))]
        rec = record(path, evs)
        lines = rec.path.read_bytes().split(b"\n")[:-1]
        body = lines[1:]
        for _ in range(rnd.randint(0, 8)):
            body.insert(rnd.randint(0, len(body) - 1), rnd.choice(bad_rows))
        data = b"\n".join([lines[0]] + body) + b"\n"
        if rnd.random() < 0.3:
            data += b'{"t": 99, "kind": "tok'  # cut short
        path.write_bytes(data)
        reader = Recording(path)
        want = list(reader.events())
        replay = Recording(path)
        index = RecordingIndex.build(replay)
        with path.open("rb") as fh:
            got = [ev for _, ev in read_from(fh, index.checkpoints[0].offset, index.end_offset, replay)]
        assert got == want, trial
        assert replay.skipped == reader.skipped, (trial, replay.warnings, reader.warnings)
        assert [e.t for e in want] == sorted(e.t for e in want)


def test_an_event_over_the_line_bound_is_recorded_as_a_note_saying_so(tmp_path):
    from lanemon.recording.schema import MAX_LINE_BYTES

    huge = Event(7, schema.ERROR, "A", "A-1", {"cls": "http", "message": "x" * MAX_LINE_BYTES})
    rec = record(tmp_path / "s.jsonl", sample_events(3) + [huge] + sample_events(2))
    r = Recording(rec.path)
    evs = list(r.events())
    assert r.skipped == 0 and len(evs) == 6 and rec.path.stat().st_size < 10_000
    note = evs[3]
    assert (note.kind, note.lane, note.req) == (schema.NOTE, "A", "A-1")
    assert "error event of 8,388," in note.data["message"] and "not recorded" in note.data["message"]
