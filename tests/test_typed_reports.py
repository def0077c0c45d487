"""The reading side of the typed results (issue 37, items 2 and 8): the analysis every report surface reads is
one typed Struct holding each workload's own typed result; ``report --format json`` and ``compare --format json``
print those Structs; history rows of every bench are that bench's own figures for the cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from lanemon.reports.analyse import analyze, analyze_many
from lanemon.reports.compare import compare, compare_lanes
from lanemon.results.analysis import Analysis
from lanemon.results.common import to_json_obj
from lanemon.results.compare import Comparison, CompareRow
from lanemon.results.decode import DecodeResult
from lanemon.results.prefill import PrefillResult
from lanemon.results.race import RaceResult

SAMPLES = Path(__file__).resolve().parents[1] / "sample_sessions"


def _lanemon(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_analyze_returns_the_typed_analysis_of_typed_results():
    a = analyze(SAMPLES / "decode.jsonl")
    assert isinstance(a, Analysis) and isinstance(a.decode, DecodeResult)
    assert a.benches() == ["decode"] and a.prefill is None and a.race is None
    assert [lane.name for lane in a.environment.lanes] == ["A", "B"]
    many = analyze_many([SAMPLES / "prefill.jsonl", SAMPLES / "races.jsonl"])
    assert isinstance(many.prefill, PrefillResult) and isinstance(many.race, RaceResult)
    assert many.environment.recordings == [str(SAMPLES / "prefill.jsonl"), str(SAMPLES / "races.jsonl")]


def test_the_json_report_is_the_typed_analysis():
    path = SAMPLES / "races.jsonl"
    text = _lanemon("report", "--format", "json", str(path))
    strict = msgspec.json.decode(text, type=Analysis, strict=True)  # every key the contract names, no other
    assert json.loads(text) == to_json_obj(analyze(path))
    assert strict.race.races[0].lanes["A"].ttft_s == analyze(path).race.races[0].lanes["A"].ttft_s


def test_compare_returns_the_typed_comparison_and_prints_it():
    old, new = SAMPLES / "yesterday.jsonl", SAMPLES / "today.jsonl"
    result = compare(analyze(old), analyze(new))
    assert isinstance(result, Comparison) and result.rows and all(isinstance(r, CompareRow) for r in result.rows)
    text = _lanemon("compare", "--format", "json", str(old), str(new))
    printed = msgspec.json.decode(text, type=Comparison, strict=True)
    assert json.loads(text) == to_json_obj(result) and printed.summary.rows == len(result.rows)
    lanes = compare_lanes(analyze(old), "A", "B")
    assert (lanes.mode, lanes.old.lane, lanes.new.lane) == ("lanes", "A", "B")


@pytest.fixture(scope="module")
def rows():
    from lanemon.monitor.history import summarize_recording

    return {name: summarize_recording(SAMPLES / f"{name}.jsonl") for name in ("prefill", "races", "needles")}


def test_prefill_and_needles_rows_are_the_benchs_own_cells(rows):
    for name in ("prefill", "needles"):
        result = analyze(SAMPLES / f"{name}.jsonl").bench(name)
        assert rows[name]
        for r in rows[name]:
            cell = result.lanes[r.lane].lengths[r.level]
            assert r.basis == f"{name} results"
            assert r.ttft_p50 == cell.ttft_s and r.prefill_tok_s == cell.prefill_tok_s
            assert r.tok_s is None and r.decode_tok_s_p50 is None  # the bench prints no decode figure for it


def test_race_rows_are_the_races_own_summary(rows):
    race = analyze(SAMPLES / "races.jsonl").race
    assert {r.lane for r in rows["races"]} == set(race.lanes)
    for r in rows["races"]:
        lane = race.lanes[r.lane]
        assert r.basis == "race results"
        assert (r.ttft_p50, r.e2e_p50, r.decode_tok_s_p50) == (lane.ttft_s, lane.total_s, lane.decode_tok_s)
        assert r.requests == len(race.races) and r.complete == lane.races_ok


def test_every_bench_section_reads_its_benchs_typed_result_not_its_json(monkeypatch):
    """Issue 37: the report's decode, efficiency, prefill, needles, sweep and load sections are handed the analysis's
    own typed result (the same object), never its JSON form (reports/sections once converted them with
    ``for_section``)."""
    import lanemon.reports.sections as sections_mod

    seen: dict[str, object] = {}

    def spy(name, real):
        def build(result, lanes):
            seen[name] = result
            return real(result, lanes)
        return build

    for name in ("decode_sections", "efficiency_section", "prefill_section", "needles_section"):
        monkeypatch.setattr(sections_mod, name, spy(name, getattr(sections_mod, name)))
    a = analyze_many([SAMPLES / "decode.jsonl", SAMPLES / "prefill.jsonl", SAMPLES / "needles.jsonl"])
    keys = [s.key for s in sections_mod.sections(a)]
    assert {"decode", "ttft", "categories", "prefill", "needles"} <= set(keys)
    assert seen["decode_sections"] is a.decode and isinstance(a.decode, DecodeResult)
    assert seen["efficiency_section"] is a.decode
    assert seen["prefill_section"] is a.prefill and isinstance(a.prefill, PrefillResult)
    assert seen["needles_section"] is a.needles
