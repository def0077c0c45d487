"""Issue 37, one model per result: the recording checker of every event kind that carries a typed reading is made
from that reading (recording/schema.py ``checker``), so a field added to a reading is checked in recordings with no
second edit; a mark's checker is made from the mark models (results/marks.py)."""

from __future__ import annotations

import msgspec
import orjson
import pytest

from lanemon import events as schema
from lanemon.recording.schema import DATA_SCHEMAS, BadRow, checker, decode_event
from lanemon.results.marks import MARK_MODELS
from lanemon.results.readings import (EngineMetrics, HostSample, LoopWindow, ProbeResult, Rates, ServerScrape, StreamEnd,
                                      Telemetry, Usage)

READINGS = {schema.PROBE: ProbeResult, schema.SERVER_METRICS: ServerScrape, schema.GPU: Telemetry,
            schema.HOST: HostSample, schema.CLIENT_LOAD: LoopWindow, schema.USAGE: Usage, schema.DONE: StreamEnd}


def names(cls) -> set[str]:
    return {f.encode_name for f in msgspec.structs.fields(cls)}


def line(kind: str, data: dict) -> bytes:
    return orjson.dumps({"t": 1, "kind": kind, "lane": "A", "req": "A-1", "data": data})


@pytest.mark.parametrize("kind", sorted(READINGS))
def test_every_field_of_the_reading_is_checked_in_recordings(kind):
    model = READINGS[kind]
    want = names(model)
    if model is ServerScrape:  # a scrape's figures sit beside ``ok`` in the event (``SPLICED``)
        assert set(model.SPLICED) == {"metrics", "rates"}
        want = want - {"metrics", "rates"} | names(EngineMetrics) | names(Rates)
    assert want == names(DATA_SCHEMAS[kind])


def test_a_reading_only_field_of_the_wrong_type_is_a_skipped_line():
    """Fields the hand-written checker never named (a probe's ``max_model_len``, a scrape's ``process_start_s``,
    a loop window's ``threshold_ms``, a GPU's ``sm_clock_mhz`` inside a host sample): checked now."""
    bad = [(schema.PROBE, {"ok": True, "max_model_len": "long"}),
           (schema.SERVER_METRICS, {"ok": True, "engine": "vllm", "process_start_s": "yesterday"}),
           (schema.CLIENT_LOAD, {"lag_ms": 1.0, "threshold_ms": [5]}),
           (schema.HOST, {"cpu_pct": 1.0, "cpus": 2, "gpus": [{"gpu": "0", "util_pct": "hot"}]}),
           (schema.DONE, {"finish_reason": "stop", "chunks": 3, "finish_t": "late"}),
           (schema.MARK, {"label": "cell", "phase": "end", "tokens_per_char": "x"}),
           (schema.MARK, {"label": "cell", "phase": "end", "max_context": {"n": 1}})]
    for kind, data in bad:
        with pytest.raises(BadRow, match=f"{kind} event"):
            decode_event(line(kind, data))
        ok = {k: v for k, v in data.items() if k in ("ok", "engine", "lag_ms", "cpu_pct", "cpus", "label", "phase",
                                                        "finish_reason", "chunks")}
        assert decode_event(line(kind, ok)).data == ok  # the same event without the bad field is read


def test_a_field_added_to_a_reading_is_checked_with_no_second_edit():
    class ProbeResultPlus(ProbeResult):
        queue_depth: int | None = None

    check = checker(ProbeResultPlus)
    assert msgspec.convert({"ok": True, "queue_depth": 3}, check).queue_depth == 3
    with pytest.raises(msgspec.ValidationError, match="queue_depth"):
        msgspec.convert({"ok": True, "queue_depth": "deep"}, check)
    assert msgspec.convert({"from_the_future": [1]}, check).ok is None  # lenient: every field optional, unknown kept
    gpus = {f.name: f.type for f in msgspec.structs.fields(checker(HostSample))}["gpus"]
    with pytest.raises(msgspec.ValidationError, match=r"gpus\[0\].power_w"):  # a nested reading: its checker too
        msgspec.convert({"gpus": [{"power_w": "hot"}]}, checker(HostSample))
    assert "GpuReadingData" in str(gpus)


def test_the_mark_checker_is_made_from_the_mark_models():
    want = set().union(*(names(m) for m in MARK_MODELS))
    assert names(DATA_SCHEMAS[schema.MARK]) == want
