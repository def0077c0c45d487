"""Big recordings stream (issue 24 item 7): ``report`` and ``export`` read a recording in one pass that folds
each request's token chunks into its record as they stream past (measure/records.compact_events), so memory
follows the requests and a few bytes per token chunk, not a ~600-byte Event per line.

The recordings are made by bench/big_recording.py (a shipped session, every token chunk split in K)."""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path

import orjson
import pytest

from lanemon.measure.records import AssembledEvent, OpenTokensEvent, assemble, compact_events
from lanemon.recording.reader import Recording
from lanemon.reports.analyse import analyze
from lanemon.reports.export import csv_chunks, iter_request_rows, request_rows, to_csv

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_sessions").glob("*.jsonl"))


def _big():
    spec = importlib.util.spec_from_file_location("big_recording", ROOT / "bench" / "big_recording.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _json(obj) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


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
        streamed["environment"].pop("recording")
        assert _json(streamed) == _json(full), path
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
