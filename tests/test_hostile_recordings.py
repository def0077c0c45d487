"""Hostile recordings (issue 11, items 6 and 8): files somebody hands you are read without a traceback,
in bounded memory; a bad row is skipped and counted, a bad header is one clear error (exit 2).

The commands run in a subprocess with a 1 GiB address-space limit, so reading a whole 300 MB line (as
lanemon once did) fails the test instead of exhausting the machine.
"""

from __future__ import annotations

import errno
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from lanemon import events as schema
from lanemon.events import Event
from lanemon.recording.index import RecordingIndex
from lanemon.recording.reader import Recording, RecordingError
from lanemon.recording.writer import Recorder, make_header

LANES = [{"name": "A", "url": "http://127.0.0.1:1/v1", "model": "m"},
         {"name": "B", "url": "http://127.0.0.1:2/v1", "model": "m"}]
MB = 1 << 20


def request_events(lane: str, req: str, t0: int, tokens: int = 5) -> list[Event]:
    ms = 1_000_000
    evs = [Event(t0, schema.REQUEST, lane, req, {"endpoint": "chat", "purpose": "probe", "model": "m",
                                                   "max_tokens": tokens, "prompt_chars": 10}),
           Event(t0 + 5 * ms, schema.FIRST_BYTE, lane, req, {"status": 200})]
    evs += [Event(t0 + (10 + i) * ms, schema.TOKEN, lane, req, {"text": f"w{i} ", "n": 1}) for i in range(tokens)]
    evs += [Event(t0 + 20 * ms, schema.USAGE, lane, req, {"prompt_tokens": 7, "completion_tokens": tokens}),
            Event(t0 + 21 * ms, schema.DONE, lane, req, {"finish_reason": "length", "chunks": tokens})]
    return evs


def good_events(n_requests: int = 6) -> list[Event]:
    out: list[Event] = []
    for i in range(n_requests):
        lane = "AB"[i % 2]
        out += request_events(lane, f"{lane}-{i}", (i + 1) * 100_000_000)
    return out


def write(path: Path, events: list[Event], header: dict | None = None, mutate=None) -> list[bytes]:
    """Write a recording; ``mutate(obj)`` may change each event's JSON object (return False to keep it as is)."""
    lines = [orjson.dumps(header if header is not None else make_header("demo", LANES))]
    for ev in events:
        obj = ev.to_json_obj()
        if mutate is not None:
            mutate(obj)
        lines.append(orjson.dumps(obj))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return lines


def lanemon(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)


def no_traceback(out: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in out.stderr and "Error:" not in out.stderr.replace("RecordingError", ""), out.stderr


# -- bad rows: skipped, counted, the rest kept ----------------------------------------------------


def test_export_with_req_an_object_skips_those_rows(tmp_path):
    path = tmp_path / "req.jsonl"

    def mutate(obj):
        if obj.get("req") == "A-0":
            obj["req"] = {"id": "A-0"}

    write(path, good_events(), mutate=mutate)
    out = lanemon("export", str(path), "--requests")
    no_traceback(out)
    assert out.returncode == 0
    rows = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert sorted(r["req"] for r in rows) == ["A-2", "A-4", "B-1", "B-3", "B-5"]
    assert "skipped" in out.stderr and "$.req" in out.stderr


def test_export_with_usage_strings_skips_the_usage_rows(tmp_path):
    path = tmp_path / "usage.jsonl"

    def mutate(obj):
        if obj["kind"] == "usage":
            obj["data"] = {"prompt_tokens": "7", "completion_tokens": "many"}

    write(path, good_events(), mutate=mutate)
    out = lanemon("export", str(path), "--requests")
    no_traceback(out)
    assert out.returncode == 0
    rows = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)
    assert "usage event" in out.stderr and "prompt_tokens" in out.stderr


def test_report_with_lane_a_list_skips_those_rows(tmp_path):
    path = tmp_path / "lane.jsonl"

    def mutate(obj):
        if obj.get("lane") == "B":
            obj["lane"] = ["B"]

    write(path, good_events(), mutate=mutate)
    out = lanemon("report", str(path), "--format", "json")
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["environment"]["lanes"]


def test_bad_rows_are_counted_and_the_warnings_stay_short(tmp_path):
    path = tmp_path / "many.jsonl"
    events = good_events(10)
    bad = 0

    def mutate(obj):
        nonlocal bad
        if obj["kind"] == "token" and obj["t"] % 3 == 0:
            obj["data"]["n"] = [1]
            bad += 1

    write(path, events, mutate=mutate)
    rec = Recording(path)
    got = list(rec.events())
    assert bad > 5 and rec.skipped == bad and len(got) == len(events) - bad
    assert len(rec.warnings) == 4 and f"{bad} lines skipped" in rec.warnings[-1]
    assert all("token event" in w for w in rec.warnings[:3])


HOSTILE_ROWS = [
    b'{"t": -5, "kind": "token", "lane": "A", "req": "A-0", "data": {"text": "x"}}',
    b'{"t": 5, "kind": "token", "lane": "A", "req": "A-0", "data": {"text": ["x"]}}',
    b'{"t": 5, "kind": "mark", "data": {"label": "x", "cell": {"a": 1}}}',
    b'{"t": 5, "kind": "error", "lane": "A", "req": "A-0", "data": {"cls": "http", "message": {"m": 1}}}',
    b'{"t": 5, "kind": "done", "lane": {"A": 1}, "req": "A-0", "data": {}}',
]


@pytest.mark.parametrize("line", HOSTILE_ROWS)
def test_each_hostile_row_is_skipped_and_the_next_one_read(tmp_path, line):
    path = tmp_path / "odd.jsonl"
    lines = write(path, good_events(1))
    path.write_bytes(b"\n".join(lines[:3] + [line] + lines[3:]) + b"\n")
    rec = Recording(path)
    assert len(list(rec.events())) == len(lines) - 1
    assert rec.skipped == 1 and "line 4" in rec.warnings[0]


# -- bad headers: one clear error, exit 2 ---------------------------------------------------------


BAD_HEADERS = [
    ({"lanes": "A,B"}, "$.lanes"),
    ({"lanes": 5}, "$.lanes"),
    ({"lanes": [{"name": {"x": 1}, "url": 3}]}, "$.lanes[0].name"),
    ({"host": "box"}, "$.host"),
    ({"version": 1.0}, "version"),
]
COMMANDS = (("report",), ("export", "--requests"), ("replay",))


@pytest.mark.parametrize("change, words", BAD_HEADERS)
def test_a_bad_header_is_one_clear_error(tmp_path, change, words):
    """Every bad header is one RecordingError naming the field (in process, for each); each command that reads
    a recording turns it into one line and exit 2 (a process per header, the commands in turn: every command
    meets a bad header, every header a command; the line is the error's own text, checked here for all)."""
    path = tmp_path / "hdr.jsonl"
    write(path, good_events(1), header={**make_header("demo", LANES), **change})
    with pytest.raises(RecordingError, match="bad recording header|schema version") as info:
        Recording(path)
    assert words in str(info.value) or "version" in words
    name, *flags = COMMANDS[[c for c, _ in BAD_HEADERS].index(change) % len(COMMANDS)]
    out = lanemon(name, str(path), *flags, timeout=60)
    no_traceback(out)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, (name, out.stderr)
    assert str(path) in out.stderr and str(info.value).splitlines()[0][-40:] in out.stderr, (out.stderr, info.value)


# -- bounded reads ----------------------------------------------------------------------------------


def test_report_dev_zero_is_a_clear_error_in_bounded_memory():
    out = lanemon("report", "/dev/zero", timeout=60)
    no_traceback(out)
    assert out.returncode == 2 and "not a lanemon recording" in out.stderr


def test_a_300_mb_file_without_a_newline_is_not_a_recording(tmp_path):
    path = tmp_path / "flat.jsonl"
    with path.open("wb") as fh:
        fh.truncate(300 * MB)  # sparse: 300 MB of NUL bytes, no newline, no disk used
    out = lanemon("report", str(path), timeout=60)
    no_traceback(out)
    assert out.returncode == 2 and "first line longer than 1 MiB" in out.stderr


def test_a_300_mb_line_after_good_events_is_stepped_over(tmp_path):
    path = tmp_path / "long.jsonl"
    lines = write(path, good_events(2))
    with path.open("ab") as fh:
        fh.truncate(path.stat().st_size + 300 * MB)  # then 300 MB with no newline
    out = lanemon("report", str(path), "--format", "json", timeout=120)
    no_traceback(out)
    assert out.returncode == 0, out.stderr
    assert "longer than 8 MiB" in out.stderr
    assert orjson.loads(out.stdout)["environment"]["events"] == len(lines) - 1
    rec = Recording(path)
    index = RecordingIndex.build(rec)
    assert index.events == len(lines) - 1 and rec.skipped == 1


def test_an_overlong_middle_line_keeps_every_event_after_it(tmp_path):
    path = tmp_path / "middle.jsonl"
    lines = write(path, good_events(2))
    huge = b'{"t": 5, "kind": "note", "data": {"message": "' + b"x" * (9 * MB) + b'"}}'
    path.write_bytes(b"\n".join(lines[:5] + [huge] + lines[5:]) + b"\n")
    rec = Recording(path)
    evs = list(rec.events())
    assert len(evs) == len(lines) - 1 and rec.skipped == 1 and "line 6" in rec.warnings[0]
    rec2 = Recording(path)
    index = RecordingIndex.build(rec2)
    assert index.events == len(evs) and rec2.warnings == rec.warnings


def test_the_header_line_is_bounded(tmp_path):
    path = tmp_path / "fat-header.jsonl"
    header = {**make_header("demo", LANES), "padding": "x" * (2 * MB)}
    write(path, good_events(1), header=header)
    with pytest.raises(RecordingError, match="first line longer than 1 MiB"):
        Recording(path)


# -- replay (the TUI's source) ----------------------------------------------------------------------


async def test_replay_skips_and_counts_bad_rows_and_folds_the_rest(tmp_path):
    from lanemon.folds.dashboard import SessionState
    from lanemon.sessions.sources import ReplaySession

    path = tmp_path / "replay.jsonl"
    bad = {"n": 0}

    def mutate(obj):
        if obj["kind"] == "usage" and obj.get("lane") == "A":
            obj["data"]["completion_tokens"] = "five"
            bad["n"] += 1
        if obj["kind"] == "token" and obj.get("req") == "B-1":
            obj["req"] = ["B-1"]
            bad["n"] += 1

    lines = write(path, good_events(), mutate=mutate)
    session = ReplaySession(path, speed=math.inf)
    state = SessionState([(d.name, d.url, d.model) for d in session.lanes])
    session.bus.subscribe(state.apply)
    folded = []
    session.bus.subscribe(lambda ev: folded.append(ev) if ev.kind != schema.NOTE else None)
    await session.run()
    assert session.finished
    assert session.recording.skipped == bad["n"] > 0
    assert any("skipped" in w for w in session.warnings)
    assert len(folded) == len(lines) - 1 - bad["n"]  # every good row published, no bad one
    assert all(isinstance(ev.req, (str, type(None))) for ev in folded)
    assert state.lanes["A"].requests_ok == 3  # usage gone, the streams still complete
    from lanemon.recording.index import read_from

    with path.open("rb") as fh:  # reading the bad rows again (a seek back) does not count them again
        again = list(read_from(fh, session.index.checkpoints[0].offset, session.index.end_offset, session.recording))
    assert len(again) == len(folded) and session.recording.skipped == bad["n"]


# -- item 8: the exit line after a full disk; a refused share leaves no file ------------------------


def test_after_a_full_disk_the_failure_comes_first_and_nothing_says_saved(tmp_path, capsys):
    from lanemon.cli.common import recording_saved

    rec = Recorder(tmp_path / "full.jsonl", make_header("demo", LANES))

    class FullDisk:
        def write(self, _):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        flush = write

        def close(self):
            pass

    rec._fh = FullDisk()
    for ev in good_events(1):
        rec(ev)
    recording_saved(rec)
    err = capsys.readouterr().err.splitlines()
    assert "recording stopped" in err[0] and "No space left on device" in err[0]
    assert not any("recording saved" in line for line in err)
    assert "incomplete" in err[1]


def test_refusing_a_non_loopback_share_leaves_no_recording(tmp_path):
    path = tmp_path / "share.jsonl"
    out = lanemon("share", "--demo", "--host", "0.0.0.0", "--record", str(path), timeout=60)
    no_traceback(out)
    assert out.returncode == 2 and "refusing to share on 0.0.0.0" in out.stderr
    assert not path.exists() and list(tmp_path.iterdir()) == []
