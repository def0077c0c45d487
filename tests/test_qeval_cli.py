"""`lanemon qeval run` / `compare` end to end on the simulated lanes."""

from __future__ import annotations

import json

import pytest

from lanemon.cli.main import main
from lanemon.recording.reader import read_events
from lanemon.sim.server import SimThread
from lanemon.workloads.qeval import qeval_results

WRITEUP_MISSES = ["code_interval_intersect", "json_escape", "json_count", "math_m9"]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """`qeval run A` and `qeval run B` on the demo lanes: (paths, stdout JSON, recordings)."""
    d = tmp_path_factory.mktemp("qeval")
    out = {}
    import contextlib
    import io

    for lane in ("A", "B"):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["qeval", "run", lane, "--demo", "--time-scale", "0.05", "--concurrency", "4", "--json",
                         "-o", str(d / f"{lane}.json"), "--record", str(d / f"{lane}.jsonl")])
        assert code == 0
        out[lane] = (d / f"{lane}.json", json.loads(buf.getvalue()), d / f"{lane}.jsonl")
    return out


@pytest.mark.parametrize("lane", ["A", "B"])
def test_run_on_each_simulated_lane_gives_71_of_75(demo_runs, lane):
    path, stdout_json, _ = demo_runs[lane]
    result = json.loads(path.read_text())
    assert result == stdout_json
    assert (result["lane"], result["passed"], result["total"]) == (lane, 71, 75)
    assert result["model"]
    assert sorted(t for t, e in result["tasks"].items() if not e["passed"]) == sorted(WRITEUP_MISSES)
    for tid, e in result["tasks"].items():
        assert set(e) == {"passed", "reason", "kind", "prompt_tokens", "completion_tokens", "seconds"}
        assert e["kind"] == tid.split("_")[0]
        assert e["prompt_tokens"] > 0 and e["completion_tokens"] > 0 and e["seconds"] > 0
        assert (e["reason"] == "passed") == e["passed"]


def test_recording_rebuilds_the_same_result(demo_runs):
    _, stdout_json, rec = demo_runs["A"]
    header, events, warnings = read_events(rec)
    assert not warnings
    marks = [ev.data["label"] for ev in events if ev.kind == "mark" and ev.data.get("bench") == "qeval"]
    assert marks == ["qeval start", "qeval end"]
    reqs = [ev for ev in events if ev.kind == "request"]
    assert len(reqs) == 75 and all(ev.data["bench"] == "qeval" and ev.data["task"] and ev.data["kind"]
                                   for ev in reqs)
    assert qeval_results(events) == stdout_json


def test_compare_identical_misses(demo_runs, capsys):
    a, b = demo_runs["A"][0], demo_runs["B"][0]
    assert main(["qeval", "compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "A 71/75, B 71/75; kept 71, broke 0, fixed 0, p = 1.000"
    assert main(["qeval", "compare", str(a), str(b), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["a"] == {"name": "A", "passed": 71, "total": 75} and res["b"]["name"] == "B"
    assert (res["kept"], res["broke"], res["fixed"], res["both_failed"], res["p_value"], res["left_out"]) == (
        71, 0, 0, 4, 1.0, 0)
    assert res["both_failed_ids"] == sorted(WRITEUP_MISSES) and res["broke_ids"] == res["fixed_ids"] == []
    assert len(res["kept_ids"]) == 71


def test_different_miss_list_gives_broke_and_fixed(demo_runs, tmp_path, capsys):
    # B2 fixes code_interval_intersect and breaks five others: b = 5, c = 1 -> p = 2 * (1 + 6) / 64
    misses = "json_escape,json_count,math_m9,code_fizzbuzz,json_person,math_m1,format_yes_no,format_csv"
    with SimThread("sglang-native", time_scale=0.05, qeval_misses=misses) as sim:
        code = main(["qeval", "run", "B2", "--lane", f"B2={sim.base_url}", "--concurrency", "4", "--no-record",
                     "-o", str(tmp_path / "B2.json")])
    assert code == 0
    capsys.readouterr()
    b2 = json.loads((tmp_path / "B2.json").read_text())
    assert (b2["passed"], b2["total"]) == (67, 75)
    assert main(["qeval", "compare", str(demo_runs["A"][0]), str(tmp_path / "B2.json"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["kept"], res["broke"], res["fixed"], res["both_failed"]) == (66, 5, 1, 3)
    assert res["fixed_ids"] == ["code_interval_intersect"]
    assert res["broke_ids"] == sorted(["code_fizzbuzz", "json_person", "math_m1", "format_yes_no", "format_csv"])
    assert res["p_value"] == pytest.approx(0.21875)
    assert main(["qeval", "compare", str(demo_runs["A"][0]), str(tmp_path / "B2.json")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "A 71/75, B2 67/75; kept 66, broke 5, fixed 1, p = 0.219"


def test_sim_subprocess_with_empty_miss_list_passes_everything(tmp_path, capsys):
    from conftest import SimProcess

    sim = SimProcess("tensorfold-exl3", 0.05, extra=("--qeval-misses", ""))
    try:
        code = main(["qeval", "run", "A", "--lane", f"A={sim.url}", "--tasks", ",".join(WRITEUP_MISSES),
                     "--no-record", "--json"])
    finally:
        sim.stop()
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["passed"], res["total"]) == (4, 4)


def test_compare_left_out_and_bad_input(demo_runs, tmp_path, capsys):
    a = json.loads(demo_runs["A"][0].read_text())
    del a["tasks"]["math_m1"]
    (tmp_path / "a.json").write_text(json.dumps(a))
    assert main(["qeval", "compare", str(tmp_path / "a.json"), str(demo_runs["B"][0])]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "A 70/74, B 70/74; kept 70, broke 0, fixed 0, p = 1.000"
    assert "left out 1 task(s)" in out
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["qeval", "compare", str(tmp_path / "bad.json"), str(demo_runs["B"][0])]) == 2
    assert "not a `lanemon qeval run` result" in capsys.readouterr().err


def test_run_usage_errors(capsys):
    assert main(["qeval", "run", "A", "--demo", "--tasks", "nope", "--no-record"]) == 2
    assert "unknown task id(s) or kind(s): nope" in capsys.readouterr().err
    assert main(["qeval", "run", "C", "--demo", "--time-scale", "0.05", "--no-record"]) == 2
    assert "unknown lane 'C'" in capsys.readouterr().err
    assert main(["qeval"]) == 2


def test_headless_summary(capsys):
    assert main(["qeval", "run", "B", "--demo", "--time-scale", "0.05", "--tasks", "math", "--no-record"]) == 0
    out = capsys.readouterr().out
    assert "B 19/20" in out and "math_m9 (math): expected 24, got 22" in out
