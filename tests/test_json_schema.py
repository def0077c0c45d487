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

from lanemon.reports.json_schema import OUTPUTS, SCHEMA_VERSION, VERSIONS, validate, version
from lanemon.results.common import to_json_obj

SAMPLES = Path(__file__).resolve().parents[1] / "sample_sessions"
LANEMON = [sys.executable, "-m", "lanemon"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*LANEMON, *args], capture_output=True, text=True, timeout=180)


def test_schema_list_and_each_schema_with_its_version():
    out = _run("schema", "--list")
    assert out.returncode == 0, out.stderr
    names = [ln.split()[0] for ln in out.stdout.splitlines() if ln.strip()]
    assert names == list(OUTPUTS) and {"bench-decode", "bench-prefill", "bench-needles", "bench-load", "bench-sweep",
                                        "race", "check", "agree", "kl", "gauntlet", "qeval", "qeval-compare",
                                        "history", "recording"} <= set(names)
    for name in names:
        got = _run("schema", name)
        assert got.returncode == 0, got.stderr
        doc = json.loads(got.stdout)
        assert doc["version"] == version(name) and doc["$id"].endswith(f":{version(name)}")
        listed = next(ln for ln in out.stdout.splitlines() if ln.split()[0] == name)
        assert f"(schema version {version(name)})" in listed
        assert "$defs" in doc or "properties" in doc or "items" in doc
    assert VERSIONS["history"] == "2" and version("bench-decode") == SCHEMA_VERSION  # history's requests moved on
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

    validate("bench-decode", to_json_obj(analyze(SAMPLES / "decode.jsonl", benches=["decode"]).decode))
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

    return to_json_obj(analyze(SAMPLES / "decode.jsonl", benches=["decode"]).decode)


def test_sweep_and_race_outputs_decode_into_their_structs():
    sweep = _run("bench", "sweep", "--demo", "--time-scale", "0.02", "--lanes", "A,B", "--max-level", "2",
                 "--max-tokens", "16", "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert sweep.returncode == 0, sweep.stderr
    validate("bench-sweep", json.loads(sweep.stdout))
    race = _run("race", "--demo", "--time-scale", "0.02", "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert race.returncode == 0, race.stderr
    validate("race", json.loads(race.stdout))
    from lanemon.reports.analyse import analyze

    validate("race", to_json_obj(analyze(SAMPLES / "races.jsonl", benches=["race"]).race))


def test_prefill_needles_agree_and_check_outputs_decode_into_their_structs():
    prefill = _run("bench", "prefill", "--demo", "--time-scale", "0.02", "--lanes", "A,B", "--lengths", "256,1024",
                   "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert prefill.returncode == 0, prefill.stderr
    validate("bench-prefill", json.loads(prefill.stdout))
    needles = _run("bench", "needles", "--demo", "--time-scale", "0.02", "--lanes", "A", "--lengths", "512,1024",
                   "--json", "--no-record")
    assert needles.returncode == 0, needles.stderr
    validate("bench-needles", json.loads(needles.stdout))
    from lanemon.reports.analyse import analyze
    from lanemon.sim.server import SimThread

    validate("bench-prefill", to_json_obj(analyze(SAMPLES / "prefill.jsonl", benches=["prefill"]).prefill))
    validate("bench-needles", to_json_obj(analyze(SAMPLES / "needles.jsonl", benches=["needles"]).needles))
    agree = _run("agree", "--demo", "--time-scale", "0.02", "--prompts", "4", "--tokens", "16", "--json",
                 "--no-record")
    assert agree.returncode == 0, agree.stderr
    validate("agree", json.loads(agree.stdout))
    validate("agree", to_json_obj(analyze(SAMPLES / "agree.jsonl", benches=["agree"]).agree))
    with SimThread("sglang-native", time_scale=0.05) as sim:
        check = _run("check", sim.base_url, "--json")
    assert check.returncode == 0, check.stderr
    validate("check", json.loads(check.stdout))
    bad = json.loads(check.stdout)
    bad["checks"][0]["verdict"] = "fine"
    with pytest.raises(msgspec.ValidationError, match="verdict"):
        validate("check", bad)


def test_kl_outputs_decode_into_their_struct(tmp_path):
    """``lanemon kl --json`` of both outcomes: lanes that refuse prompt logprobs (the demo's), and lanes that expose
    them (the simulator with ``logprobs="full"``); and the kl of a sample session's recording."""
    from lanemon.reports.analyse import analyze
    from lanemon.sim.server import SimThread

    refused = _run("kl", "--demo", "--reference", "A", "--time-scale", "0.02", "--prompts", "2", "--tokens", "8",
                   "--json", "--no-record")
    assert refused.returncode == 3, refused.stderr
    r = validate("kl", json.loads(refused.stdout))
    assert {lane.status for lane in r.lanes.values()} == {"not_exposed"}
    with SimThread("tensorfold-exl3", time_scale=0.02, logprobs="full") as a, \
            SimThread("sglang-native", time_scale=0.02, logprobs="full") as b:
        ok = _run("kl", "--lane", f"A={a.base_url}", "--lane", f"B={b.base_url}", "--reference", "B", "--prompts",
                  "2", "--tokens", "8", "--json", "--no-record")
    assert ok.returncode == 0, ok.stderr
    r = validate("kl", json.loads(ok.stdout))
    assert r.lanes["A"].status == "ok" and r.lanes["A"].kl is not None and r.lanes["B"].message == "reference"
    validate("kl", to_json_obj(analyze(SAMPLES / "kl.jsonl", benches=["kl"]).kl))
    bad = json.loads(ok.stdout)
    bad["lanes"]["A"]["kl_mean"] = 0.1
    with pytest.raises(msgspec.ValidationError, match="kl_mean"):
        validate("kl", bad)


def test_every_line_of_a_recording_fits_the_recording_schema(tmp_path):
    rec = tmp_path / "run.jsonl"
    out = _run("bench", "decode", "--demo", "--time-scale", "0.02", "--lanes", "A", "--levels", "1",
               "--no-categories", "--max-tokens", "8", "--json", "--record", str(rec))
    assert out.returncode == 0, out.stderr
    kinds = set()
    for path in (rec, SAMPLES / "races.jsonl", SAMPLES / "needles.jsonl"):
        lines = path.read_text().splitlines()
        assert validate("recording", json.loads(lines[0])).schema  # the header
        for line in lines[1:]:
            kinds.add(validate("recording", json.loads(line)).kind)
    assert {"request", "token", "done", "mark", "gpu"} <= kinds
    with pytest.raises(msgspec.ValidationError, match="kind"):
        validate("recording", {"t": 1, "kind": "telepathy", "data": {}})
    with pytest.raises(msgspec.ValidationError, match="ok"):
        validate("recording", {"t": 1, "kind": "probe", "data": {"ok": "maybe"}})


def test_gauntlet_and_qeval_outputs_decode_into_their_structs(tmp_path):
    gauntlet = _run("gauntlet", "--demo", "--time-scale", "0.02", "--hops", "2", "--reps", "1", "--json",
                    "--no-record")
    assert gauntlet.returncode == 0, gauntlet.stderr
    assert set(validate("gauntlet", json.loads(gauntlet.stdout)).lanes) == {"A", "B"}
    qeval = _run("qeval", "run", "A", "--demo", "--time-scale", "0.02", "--tasks", "math", "--json",
                 "-o", str(tmp_path / "A.json"), "--no-record")
    assert qeval.returncode == 0, qeval.stderr
    assert validate("qeval", json.loads(qeval.stdout)).total == 20
    pair = _run("qeval", "compare", str(tmp_path / "A.json"), str(SAMPLES / "qeval-B.json"), "--json")
    assert pair.returncode == 0, pair.stderr
    assert validate("qeval-compare", json.loads(pair.stdout)).a.total == 20  # the math tasks both runs hold
    from lanemon.reports.analyse import analyze
    from lanemon.results.common import to_json_obj

    validate("gauntlet", to_json_obj(analyze(SAMPLES / "gauntlet.jsonl", benches=["gauntlet"]).gauntlet))
    q = analyze(SAMPLES / "qeval-A.jsonl", benches=["qeval"]).qeval
    validate("qeval", to_json_obj(q.lanes["A"]))
    for name in ("qeval-A", "qeval-B"):
        validate("qeval", json.loads((SAMPLES / f"{name}.json").read_text()))
    bad = json.loads(gauntlet.stdout)
    bad["lanes"]["A"]["turns"][0][0]["tool"]["oops"] = 1
    with pytest.raises(msgspec.ValidationError, match="oops"):
        validate("gauntlet", bad)
