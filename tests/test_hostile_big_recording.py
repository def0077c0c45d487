"""Big recordings stream (issue 24 item 7): ``report`` and ``export`` read a recording in one pass that folds
each request's token chunks into its record as they stream past (measure/records.compact_events), so memory
follows the requests and a few bytes per token chunk, not a ~600-byte Event per line.

The recordings are made by bench/big_recording.py (a shipped session, every token chunk split in K)."""

from __future__ import annotations

import gc
import importlib.util
import sys
import tracemalloc
from pathlib import Path

import msgspec
import orjson
import pytest

from lanemon.measure.records import AssembledEvent, OpenTokensEvent, assemble, compact_events
from lanemon.recording.reader import Recording
from lanemon.reports.analyse import analyze
from lanemon.reports.export import csv_chunks, iter_request_rows, request_rows, to_csv
from lanemon.results.common import to_json_obj

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_sessions").glob("*.jsonl"))


def _big():
    spec = importlib.util.spec_from_file_location("big_recording", ROOT / "bench" / "big_recording.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _json(obj) -> bytes:  # a typed result (lanemon.results) as the --json it prints
    return orjson.dumps(obj, default=to_json_obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


def _cut(src: Path, dest: Path, fraction: float) -> Path:
    lines = src.read_bytes().splitlines(keepends=True)
    dest.write_bytes(b"".join(lines[: max(2, int(len(lines) * fraction))]))
    return dest


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_streamed_analysis_is_the_same_as_from_every_event(sample, tmp_path):
    """The compact read changes no figure: the whole analysis and the export rows are byte for byte those
    computed from every event, for each shipped session and for the same session cut mid-request."""
    for path in (sample, _cut(sample, tmp_path / "cut.jsonl", 0.45)):
        rec = Recording(path)
        events = list(rec.events())
        full = analyze((rec.header, events))
        streamed = analyze(Recording(path))
        streamed.environment.recording = msgspec.UNSET
        assert _json(to_json_obj(streamed)) == _json(to_json_obj(full)), path
        compact = compact_events(iter(events))
        assert compact.count == len(events)
        assert to_csv(iter_request_rows(compact.events)) == to_csv(request_rows(events))


def test_compact_list_holds_no_token_of_a_finished_request(tmp_path):
    path = _cut(ROOT / "sample_sessions" / "races.jsonl", tmp_path / "cut.jsonl", 0.5)
    events = list(Recording(path).events())
    compact = compact_events(iter(events))
    finished = {r.req for r in assemble(events)}
    assert finished and not any(ev.kind == "token" and ev.req in finished for ev in compact.events)
    assert sum(isinstance(ev, AssembledEvent) for ev in compact.events) == len(finished)
    open_ = [ev for ev in compact.events if isinstance(ev, OpenTokensEvent)]
    assert open_  # the race cut mid-stream: its open requests keep their tokens so far, as one event each
    assert len(compact.events) < len(events) / 5


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_memory_per_event_is_small_and_does_not_follow_the_events(tmp_path):
    """tracemalloc peak of report and export for N and 4N events: each added event costs a few dozen bytes
    (its token time, count and text in compact form), where holding every Event cost ~580 bytes (measured
    before this change: 17 MB -> 59 MB for 25 k -> 100 k events of this recording)."""
    big = _big()
    sample = ROOT / "sample_sessions" / "races.jsonl"
    analyze(Recording(sample))  # imports and caches out of the way
    sizes, peaks = [], {"report": [], "export": []}
    for n in (20_000, 80_000):
        path = tmp_path / f"big{n}.jsonl"
        sizes.append(big.write_big(path, n, sample))
        peaks["report"].append(_peak(lambda path=path: analyze(Recording(path))))
        peaks["export"].append(_peak(lambda path=path: sum(
            len(c) for c in csv_chunks(iter_request_rows(compact_events(Recording(path).events()).events)))))
    added = sizes[1] - sizes[0]
    assert added > 2 * sizes[0]
    for what, (small, large) in peaks.items():
        per_event = (large - small) / added
        print(f"{what}: {small >> 10} KB -> {large >> 10} KB, {per_event:.0f} B per added event")
        assert per_event < 150, f"{what}: {per_event:.0f} bytes per added event ({small >> 10} KB -> {large >> 10} KB)"
        assert large < 2.5 * small, f"{what}: peak grew {large / small:.1f}x for {sizes[1] / sizes[0]:.1f}x the events"


# ------------------------------------------------------------------ many short requests: what stays alive
# A recording of many short requests is mostly not token chunks (requests, ends, scrapes, load windows, host
# samples): those are what a report held as ~600-3,000-byte events (1.5 M events: report 743 MB, export 619 MB).
# These tests count the objects that stay alive, for N and 4N requests, so per-request retention cannot come back
# unnoticed.

def _alive(cls) -> int:
    """Instances of *cls* alive.  An :class:`Event` is not tracked by the collector (events.py), so ``gc.get_objects``
    does not list it: it is found where it is held, among what the tracked objects and the running frames refer
    to (and what untracked tuples and dicts among those refer to)."""
    from lanemon.events import Event

    gc.collect()
    if not issubclass(cls, Event):
        return sum(1 for o in gc.get_objects() if isinstance(o, cls))
    frames, f = [], sys._getframe()
    while f is not None:
        frames.append(f)
        f = f.f_back
    found: set[int] = set()
    seen: set[int] = set()
    todo = gc.get_objects() + frames
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if isinstance(ref, cls):
                found.add(id(ref))
            elif not gc.is_tracked(ref) and ref.__class__ in (tuple, dict, list) and id(ref) not in seen:
                seen.add(id(ref))
                todo.append(ref)
    del frames, f, todo
    return len(found)


def _many(tmp_path, events: int) -> Path:
    path = tmp_path / f"many{events}.jsonl"
    _big().write_many(path, events, ROOT / "sample_sessions" / "today.jsonl")
    return path


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("many")
    return [_many(tmp, n) for n in (20_000, 80_000)]


@pytest.fixture(scope="module")
def many_compact(many):
    """Each of ``many`` read once into its compact store (re-iterable: each pass decodes fresh events), for the
    tests that look at what reads the store, not at the read that builds it (that one builds its own)."""
    return [compact_events(Recording(path).events()).events for path in many]


@pytest.fixture
def live_records(monkeypatch):
    """How many RequestRecords are alive, counted as they are made and freed (RequestRecord's ``__init__`` and
    ``__del__`` patched for the test; lanemon makes every record through its constructor, a packed one too):
    cheap to read, so every request can be looked at, and never fewer than the collector would find (a record
    left in a reference cycle counts until it is collected).  Records made before the patch are not counted."""
    from lanemon.measure.records import RequestRecord

    ids: set[int] = set()
    init = RequestRecord.__init__

    def counted_init(rec, *args, **kwargs):
        ids.add(id(rec))
        init(rec, *args, **kwargs)

    monkeypatch.setattr(RequestRecord, "__init__", counted_init)
    monkeypatch.setattr(RequestRecord, "__del__", lambda rec: ids.discard(id(rec)), raising=False)
    return lambda: len(ids)


def test_the_compact_store_holds_no_event_object_whatever_the_request_count(many):
    """The kept events live in compressed blocks: no Event object survives the read (the block being filled
    holds at most BLOCK tuples), for ~700 and ~2,800 requests alike."""
    from lanemon.events import Event
    from lanemon.measure.records import EventStore

    base = _alive(Event)
    for path in many:
        compact = compact_events(Recording(path).events())
        store = compact.events
        assert isinstance(store, EventStore) and len(store) > 4000
        assert store.live_items <= EventStore.BLOCK
        assert _alive(Event) - base == 0
        assert store.stored_bytes < 160 * len(store)  # ~100 compressed bytes per kept event (JSON: 150-1,000)
        del compact, store


def test_export_keeps_only_the_requests_in_flight(many_compact, live_records):
    """``export`` of a compact recording: while rows stream, the records alive are those that finished before
    their turn (about the concurrency), not every request (it sorted them all in memory: 2,800 records here);
    counted at every row."""
    peaks = []
    for events in many_compact:
        base, peak, rows = live_records(), 0, 0
        for rows, _ in enumerate(iter_request_rows(events), 1):
            peak = max(peak, live_records() - base)
        assert rows > 500
        peaks.append((rows, peak))
    (small_rows, small), (large_rows, large) = peaks
    assert large_rows > 3 * small_rows
    assert large <= 64 and small <= 64, peaks


def test_engine_views_hold_no_request_record(many_compact, monkeypatch, live_records):
    """The server view, energy and engine counters read each request once as it streams past (the server view
    keeps five figures per request): at every request the views look at, no more than a handful of records are
    alive, for N and 4N requests (they held every record of the lane as a list)."""
    import lanemon.measure.server as server
    from lanemon.measure.views import attach_engine_views
    from lanemon.workloads.bench.decode import decode_results

    real = server.request_metrics
    seen: list[int] = []

    def counting(rec):
        seen.append(live_records())
        return real(rec)

    monkeypatch.setattr(server, "request_metrics", counting)
    for events in many_compact:
        result = decode_results(events)
        assert result.lanes
        seen.clear()
        base = live_records()
        attach_engine_views(result, events)
        assert any(lane.server for lane in result.lanes.values())
        counted = [n - base for n in seen]
        assert len(seen) > 500 and max(counted) <= 8, (len(seen), max(counted))
        del result


def _open_starts(path: Path, n: int, kind: str) -> Path:
    header = (ROOT / "sample_sessions" / "today.jsonl").read_bytes().splitlines()[0]
    lines = [orjson.dumps({"t": 1000 + i, "kind": kind, "lane": "A", "req": f"r{i}",
                           **({"data": {"endpoint": "completions", "purpose": "bench"}} if kind == "request" else {})})
             for i in range(n)]
    path.write_bytes(header + b"\n" + b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("kind", ["first_byte", "request"])
def test_requests_that_never_end_are_not_all_held(tmp_path, monkeypatch, kind, live_records):
    """A hostile file of request starts that never end (300 k of them: report 520 MB, export 637 MB before; 1.5 M
    would take ~3 GB): an Assembler holds at most MAX_OPEN open requests, the oldest given up first, and the
    report and export say how many (here MAX_OPEN is made small to count)."""
    import lanemon.measure.records as records

    monkeypatch.setattr(records, "MAX_OPEN", 500)
    for n in (5_000, 20_000):
        path = _open_starts(tmp_path / f"open{n}.jsonl", n, kind)
        base = live_records()
        compact = compact_events(Recording(path).events())
        assert live_records() - base <= 500
        assert compact.dropped == n - 500
        analysis = analyze(Recording(path))
        assert any("never finished while more than 500 were open" in w for w in analysis.warnings)
        del compact, analysis


def test_export_does_not_hold_every_mark(tmp_path, monkeypatch):
    """``export``'s interruption check listed every mark of the recording (a file of 300 k marks, 34 MB: 289 MB,
    1.5 M would be ~1.4 GB): it now reads them as they stream past; counted here as the events alive when it
    judges the run, for N and 4N marks."""
    import lanemon.workloads.bench.run as run
    from lanemon.events import Event
    from lanemon.reports.export import interruptions

    header = (ROOT / "sample_sessions" / "today.jsonl").read_bytes().splitlines()[0]
    real = run.interruption_text
    alive: list[int] = []

    def judged(bench, state):
        alive.append(_alive(Event))
        return real(bench, state)

    monkeypatch.setattr(run, "interruption_text", judged)
    for n in (5_000, 20_000):
        marks = [{"t": 1, "kind": "mark", "data": {"label": "bench", "bench": "decode", "phase": "start"}}]
        marks += [{"t": 2 + i, "kind": "mark", "lane": "A",
                   "data": {"label": "cell", "bench": "decode", "phase": "end", "cell": f"A/C{i}/r1"}}
                  for i in range(n)]
        path = tmp_path / f"marks{n}.jsonl"
        path.write_bytes(header + b"\n" + b"\n".join(orjson.dumps(m) for m in marks) + b"\n")
        base = _alive(Event)
        alive.clear()
        texts = interruptions(compact_events(Recording(path).events()).events)
        assert alive and max(alive) - base <= 16, (n, max(alive) - base)
        assert any("decode" in t for t in texts)  # started, never ended: an interrupted run, said so


def test_what_no_report_reads_is_counted_not_kept(tmp_path):
    """Notes, host samples and alerts are read by no report or export: a file of 300 large random notes (each
    as big as the schema lets a message be, incompressible) costs the store nothing, and the event count still
    says they were there."""
    import os

    header = (ROOT / "sample_sessions" / "today.jsonl").read_bytes().splitlines()[0]
    lines = [orjson.dumps({"t": i, "kind": kind, "data": {"level": "info", "message": os.urandom(3000).hex()}})
             for i, kind in enumerate(["note", "host", "alert"] * 100)]
    path = tmp_path / "notes.jsonl"
    path.write_bytes(header + b"\n" + b"\n".join(lines) + b"\n")
    compact = compact_events(Recording(path).events())
    assert compact.count == 300 and len(compact.events) == 0 and compact.events.stored_bytes == 0
    assert analyze(Recording(path)).environment.events == 300


def test_scrapes_are_held_compact_and_read_back_the_same(many_compact):
    """A recording of many short requests holds a scrape every couple of seconds per lane (hundreds of thousands
    in 1.5 M events): the counters held each as a dict of ~25 floats (~1,800 bytes measured here; issue 39 row 12).
    Held compact (:class:`Scrapes`: ~350 bytes) they cost a fraction, for N and 4N events, and read back equal."""
    from lanemon.events import SERVER_METRICS
    from lanemon.measure.counters import scrapes

    per_scrape = []
    for events in many_compact:
        lanes = sorted({ev.lane for ev in events if ev.kind == SERVER_METRICS and ev.lane})
        assert lanes
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            held = [scrapes(events, lane) for lane in lanes]
            gc.collect()
            size = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        n = sum(len(s) for s in held)
        assert n > 1000
        per_scrape.append((n, size))
        for s in held:  # read back: time order, and the very pairs the events gave
            pairs = list(s)
            assert [t for t, _ in pairs] == sorted(t for t, _ in pairs)
            assert s[0] == pairs[0] and s[-1] == pairs[-1] and s[1:3] == pairs[1:3]
            assert all(isinstance(d, dict) and d for _, d in pairs)
        del held
    (n0, s0), (n1, s1) = per_scrape
    assert n1 > 3 * n0
    per_added = (s1 - s0) / (n1 - n0)
    assert per_added < 600, f"{per_added:.0f} bytes per added scrape ({per_scrape})"
