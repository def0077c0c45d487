"""A published schema (issue 37 item 3): ``lanemon schema --list`` / ``lanemon schema NAME`` print the JSON Schema
of each ``--json`` output with a version, and the outputs the suite makes decode strictly into their Structs.

Where another test already runs a command with ``--json`` and decodes what it printed strictly into its Struct,
this file does not run it again (each run costs a lanemon process and its simulators): bench decode / prefill /
needles in tests/test_typed_bench_results.py (``--slo``, ``--cost``), bench load / sweep in
tests/test_typed_load_results.py (``--slo``, ``--cost``), agree and kl (refused) in tests/test_agree_kl.py, check
in tests/test_check_result.py, gauntlet in tests/test_gauntlet.py, qeval in tests/test_qeval_cli.py (when the
sandbox is there: here too, without it).  What is run here is what no other test prints: race with an SLO and a
cost, kl with logprobs on, qeval without the sandbox, a recording line by line, history."""

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


def test_schema_list_and_each_schema_with_its_version(capsys):
    """The list and a bad name through the installed entry point; each schema in-process (the same ``main`` the
    entry point calls: a process per schema was most of this test's time)."""
    from lanemon.cli.main import main

    out = _run("schema", "--list")
    assert out.returncode == 0, out.stderr
    names = [ln.split()[0] for ln in out.stdout.splitlines() if ln.strip()]
    assert names == list(OUTPUTS) and {"bench-decode", "bench-prefill", "bench-needles", "bench-load", "bench-sweep",
                                        "race", "check", "agree", "kl", "gauntlet", "qeval", "qeval-compare",
                                        "history", "recording"} <= set(names)
    for name in names:
        capsys.readouterr()
        assert main(["schema", name]) == 0
        got = capsys.readouterr()
        doc = json.loads(got.out)
        assert doc["version"] == version(name) and doc["$id"].endswith(f":{version(name)}")
        listed = next(ln for ln in out.stdout.splitlines() if ln.split()[0] == name)
        assert f"(schema version {version(name)})" in listed
        assert "$defs" in doc or "properties" in doc or "items" in doc
    assert VERSIONS["history"] == "2" and version("bench-needles") == SCHEMA_VERSION  # history's requests moved on
    bad = _run("schema", "bench-nothing")
    assert bad.returncode == 2 and "bench-nothing" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_the_suites_outputs_decode_into_their_structs(tmp_path):
    """bench decode / load --json of a fresh run: tests/test_typed_bench_results.py, test_typed_load_results.py."""
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
    """bench sweep --json of a fresh run: tests/test_typed_load_results.py; race's (without --slo / --cost):
    tests/test_race.py."""
    race = _run("race", "--demo", "--time-scale", "0.02", "--slo", "ttft=1", "--cost", "A=3", "--json", "--no-record")
    assert race.returncode == 0, race.stderr
    validate("race", json.loads(race.stdout))
    from lanemon.reports.analyse import analyze

    validate("race", to_json_obj(analyze(SAMPLES / "races.jsonl", benches=["race"]).race))


def test_prefill_needles_agree_and_check_outputs_decode_into_their_structs():
    """Their --json of a fresh run: prefill and needles in tests/test_typed_bench_results.py, agree in
    tests/test_agree_kl.py, check in tests/test_check_result.py (which also holds the check rejected here)."""
    from lanemon.reports.analyse import analyze

    validate("bench-prefill", to_json_obj(analyze(SAMPLES / "prefill.jsonl", benches=["prefill"]).prefill))
    validate("bench-needles", to_json_obj(analyze(SAMPLES / "needles.jsonl", benches=["needles"]).needles))
    validate("agree", to_json_obj(analyze(SAMPLES / "agree.jsonl", benches=["agree"]).agree))


def test_kl_outputs_decode_into_their_struct(tmp_path):
    """``lanemon kl --json`` of lanes that expose prompt logprobs (the simulator with ``logprobs="full"``; lanes
    that refuse them, the demo's: tests/test_agree_kl.py), and the kl of a sample session's recording."""
    from lanemon.reports.analyse import analyze
    from lanemon.sim.server import SimThread

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
    """gauntlet --json of a fresh run: tests/test_gauntlet.py."""
    qeval = _run("qeval", "run", "A", "--demo", "--time-scale", "0.02", "--tasks", "math", "--json",
                 "-o", str(tmp_path / "A.json"), "--no-record")
    assert qeval.returncode == 0, qeval.stderr
    assert validate("qeval", json.loads(qeval.stdout)).total == 20
    pair = _run("qeval", "compare", str(tmp_path / "A.json"), str(SAMPLES / "qeval-B.json"), "--json")
    assert pair.returncode == 0, pair.stderr
    assert validate("qeval-compare", json.loads(pair.stdout)).a.total == 20  # the math tasks both runs hold
    from lanemon.reports.analyse import analyze
    from lanemon.results.common import to_json_obj

    gauntlet = to_json_obj(analyze(SAMPLES / "gauntlet.jsonl", benches=["gauntlet"]).gauntlet)
    assert set(validate("gauntlet", gauntlet).lanes) == {"A", "B"}
    q = analyze(SAMPLES / "qeval-A.jsonl", benches=["qeval"]).qeval
    validate("qeval", to_json_obj(q.lanes["A"]))
    for name in ("qeval-A", "qeval-B"):
        validate("qeval", json.loads((SAMPLES / f"{name}.json").read_text()))
    bad = json.loads(json.dumps(gauntlet))
    bad["lanes"]["A"]["turns"][0][0]["tool"]["oops"] = 1
    with pytest.raises(msgspec.ValidationError, match="oops"):
        validate("gauntlet", bad)
