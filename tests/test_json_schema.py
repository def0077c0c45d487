"""A published schema (issue 37 item 3): ``lanemon schema --list`` / ``lanemon schema NAME`` print the JSON Schema
of each ``--json`` output with a version, and the outputs the suite makes decode strictly into their Structs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from lanemon.reports.json_schema import OUTPUTS, SCHEMA_VERSION, validate

SAMPLES = Path(__file__).resolve().parents[1] / "sample_sessions"
LANEMON = [sys.executable, "-m", "lanemon"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LANEMON, *args], capture_output=True, text=True, timeout=180)


def test_schema_list_and_each_schema_with_its_version():
    out = _run("schema", "--list")
    assert out.returncode == 0, out.stderr
    names = [ln.split()[0] for ln in out.stdout.splitlines() if ln.strip()]
    assert names == list(OUTPUTS) and {"bench-decode", "bench-load", "history"} <= set(names)
    for name in names:
        got = _run("schema", name)
        assert got.returncode == 0, got.stderr
        doc = json.loads(got.stdout)
        assert doc["version"] == SCHEMA_VERSION and doc["$id"].endswith(f":{SCHEMA_VERSION}")
        assert "$defs" in doc or "properties" in doc or "items" in doc
    bad = _run("schema", "bench-nothing")
    assert bad.returncode == 2 and "bench-nothing" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_the_suites_outputs_decode_into_their_structs(tmp_path):
    decode = _run("bench", "decode", "--demo", "--time-scale", "0.02", "--lanes", "A,B", "--levels", "1,2",
                  "--max-tokens", "16", "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert decode.returncode == 0, decode.stderr
    validate("bench-decode", json.loads(decode.stdout))
    load = _run("bench", "load", "--demo", "--time-scale", "0.02", "--lanes", "A,B", "--rate", "8", "--duration",
                "2", "--output-len", "fixed:8", "--slo", "ttft=1", "--cost", "A=3", "--workers", "1", "--json",
                "--no-record")
    assert load.returncode == 0, load.stderr
    validate("bench-load", json.loads(load.stdout))
    from lanemon.reports.analyse import analyze

    validate("bench-decode", analyze(SAMPLES / "decode.jsonl", benches=["decode"])["decode"])
    recs = tmp_path / "recs"
    recs.mkdir()
    for name in ("decode", "races", "prefill"):
        shutil.copy(SAMPLES / f"{name}.jsonl", recs)
    hist = _run("history", "--rebuild", "--recordings", str(recs), "--catalogue", str(tmp_path / "c.sqlite3"),
                "--json")
    assert hist.returncode == 0, hist.stderr
    rows = validate("history", json.loads(hist.stdout))
    assert len(rows) > 10


def test_a_key_the_contract_does_not_name_fails():
    d = json.loads(json.dumps(analyze_sample()))
    d["lanes"]["A"]["levels"]["1"]["tok_per_banana"] = 3
    with pytest.raises(msgspec.ValidationError, match="tok_per_banana"):
        validate("bench-decode", d)


def analyze_sample():
    from lanemon.reports.analyse import analyze

    return analyze(SAMPLES / "decode.jsonl", benches=["decode"])["decode"]


def test_sweep_and_race_outputs_decode_into_their_structs():
    sweep = _run("bench", "sweep", "--demo", "--time-scale", "0.02", "--lanes", "A,B", "--max-level", "2",
                 "--max-tokens", "16", "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert sweep.returncode == 0, sweep.stderr
    validate("bench-sweep", json.loads(sweep.stdout))
    race = _run("race", "--demo", "--time-scale", "0.02", "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert race.returncode == 0, race.stderr
    validate("race", json.loads(race.stdout))
    from lanemon.reports.analyse import analyze

    validate("race", analyze(SAMPLES / "races.jsonl", benches=["race"])["race"])
