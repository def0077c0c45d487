"""`lanemon qeval run` / `compare` end to end on the simulated lanes."""

from __future__ import annotations

import json

import pytest

from lanemon.cli.main import main
from lanemon.recording.reader import read_events
from lanemon.reports.json_schema import validate
from lanemon.results.common import to_json_obj
from lanemon.results.qeval import QevalResult
from lanemon.sim.server import SimThread
from lanemon.workloads.qeval import qeval_results
from lanemon.workloads.qeval.sandbox import sandbox_problem

needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None,
                                   reason=f"code tasks are skipped here: {sandbox_problem()}")

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


@needs_sandbox
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


@needs_sandbox
def test_recording_rebuilds_the_same_result(demo_runs):
    _, stdout_json, rec = demo_runs["A"]
    header, events, warnings = read_events(rec)
    assert not warnings
    marks = [ev.data["label"] for ev in events if ev.kind == "mark" and ev.data.get("bench") == "qeval"]
    assert marks[0] == "qeval start" and marks[-1] == "qeval end" and marks[1:-1] == ["qeval score"] * 75
    reqs = [ev for ev in events if ev.kind == "request"]
    assert len(reqs) == 75 and all(ev.data["bench"] == "qeval" and ev.data["task"] and ev.data["kind"]
                                   for ev in reqs)
    scores = {ev.data["task"]: ev.data for ev in events if ev.kind == "mark" and ev.data["label"] == "qeval score"}
    assert {t: (d["passed"], d["reason"]) for t, d in scores.items()} == {
        t: (e["passed"], e["reason"]) for t, e in stdout_json["tasks"].items()}
    assert {d["req"] for d in scores.values()} == {ev.req for ev in reqs}
    # from the recorded verdicts: the typed result, whose JSON is what the command printed (the contract, strictly)
    rebuilt = qeval_results(events)
    assert isinstance(rebuilt, QevalResult) and to_json_obj(rebuilt) == stdout_json
    assert validate("qeval", stdout_json) == rebuilt


@needs_sandbox
def test_reading_uses_recorded_verdicts_and_names_the_unscored(demo_runs, monkeypatch):
    """qeval_results never runs anything: a tripwire on the sandbox stays untouched, even for code tasks;
    replies without a recorded verdict (an older recording) are listed as not scored, never re-executed."""
    import lanemon.workloads.qeval.sandbox as sandbox
    from lanemon.workloads.qeval.run import NOT_SCORED

    calls = []
    monkeypatch.setattr(sandbox, "_run", lambda *a, **k: calls.append(a) or pytest.fail("code was executed"))
    _, stdout_json, rec = demo_runs["A"]
    header, events, _ = read_events(rec)
    assert to_json_obj(qeval_results(events)) == stdout_json
    old = [ev for ev in events if not (ev.kind == "mark" and ev.data.get("label") == "qeval score")]
    res = qeval_results(old)
    assert (res.passed, res.total, len(res.skipped)) == (0, 0, 75)
    assert set(res.skipped.values()) == {NOT_SCORED} and "lanemon qeval rescore" in NOT_SCORED
    from lanemon.reports.analyse import analyze
    from lanemon.reports.render import render

    assert "Quality gate (qeval): A 0/0 (75 not scored)" in render(analyze((header, old)), "md")
    # a verdict with the wrong types (a hostile recording) counts as none
    bad = [ev if not (ev.kind == "mark" and ev.data.get("task") == "math_m1") else
           type(ev)(ev.t, ev.kind, ev.lane, ev.req, {**ev.data, "passed": "yes"}) for ev in events]
    assert qeval_results(bad).skipped == {"math_m1": NOT_SCORED}
    assert calls == []


@needs_sandbox
def test_compare_identical_misses(demo_runs, capsys):
    a, b = demo_runs["A"][0], demo_runs["B"][0]
    assert main(["qeval", "compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "A 71/75, B 71/75; kept 71, broke 0, fixed 0, no discordant pairs"
    assert main(["qeval", "compare", str(a), str(b), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    validate("qeval-compare", res)
    assert res["a"] == {"name": "A", "passed": 71, "total": 75} and res["b"]["name"] == "B"
    assert (res["kept"], res["broke"], res["fixed"], res["both_failed"], res["p_value"], res["left_out"]) == (
        71, 0, 0, 4, 1.0, 0)
    assert res["both_failed_ids"] == sorted(WRITEUP_MISSES) and res["broke_ids"] == res["fixed_ids"] == []
    assert len(res["kept_ids"]) == 71


@needs_sandbox
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


@needs_sandbox
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


@needs_sandbox
def test_compare_left_out_and_bad_input(demo_runs, tmp_path, capsys):
    a = json.loads(demo_runs["A"][0].read_text())
    del a["tasks"]["math_m1"]
    (tmp_path / "a.json").write_text(json.dumps(a))
    assert main(["qeval", "compare", str(tmp_path / "a.json"), str(demo_runs["B"][0])]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "A 70/74, B 70/74; kept 70, broke 0, fixed 0, no discordant pairs"
    assert "left out 1 task(s)" in out
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["qeval", "compare", str(tmp_path / "bad.json"), str(demo_runs["B"][0])]) == 2
    assert "not a `lanemon qeval run` result" in capsys.readouterr().err
    a["tasks"]["math_m2"]["passed"] = "yes"  # not the contract's bool: refused, not read as true
    (tmp_path / "typed.json").write_text(json.dumps(a))
    assert main(["qeval", "compare", str(tmp_path / "typed.json"), str(demo_runs["B"][0])]) == 2
    err = capsys.readouterr().err
    assert "not a `lanemon qeval run` result" in err and "passed" in err


def test_run_usage_errors(capsys):
    assert main(["qeval", "run", "A", "--demo", "--tasks", "nope", "--no-record"]) == 2
    assert "unknown task id(s) or kind(s): nope" in capsys.readouterr().err
    assert main(["qeval", "run", "C", "--demo", "--time-scale", "0.05", "--no-record"]) == 2
    assert "unknown lane 'C'" in capsys.readouterr().err
    assert main(["qeval"]) == 2


def test_without_a_sandbox_code_tasks_are_skipped_and_counted(tmp_path, capsys):
    missing = str(tmp_path / "no-bwrap")
    code = main(["qeval", "run", "A", "--demo", "--time-scale", "0.05", "--tasks", "code_fizzbuzz,json_count",
                 "--bwrap", missing, "--record", str(tmp_path / "r.jsonl"), "--json"])
    assert code == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    assert (res["passed"], res["total"], list(res["tasks"])) == (0, 1, ["json_count"])
    assert list(res["skipped"]) == ["code_fizzbuzz"]
    assert res["skipped"]["code_fizzbuzz"].startswith(f"skipped: no sandbox: {missing} not found")
    assert "--unsafe-run-code-without-sandbox" in res["skipped"]["code_fizzbuzz"]
    assert "1 code task(s) will be skipped: no sandbox" in cap.err
    _, events, _ = read_events(tmp_path / "r.jsonl")
    assert to_json_obj(qeval_results(events)) == res  # the skip is recorded too
    validate("qeval", res)
    assert main(["qeval", "run", "A", "--demo", "--time-scale", "0.05", "--tasks", "code_fizzbuzz",
                 "--bwrap", missing, "--no-record"]) == 0
    out = capsys.readouterr().out
    assert "A 0/0, 1 skipped" in out and "skipped 1 (not in the score): skipped: no sandbox" in out


def test_the_unsafe_opt_in_runs_code_and_says_so(tmp_path, capsys):
    code = main(["qeval", "run", "A", "--demo", "--time-scale", "0.05", "--tasks", "code_fizzbuzz",
                 "--bwrap", str(tmp_path / "no-bwrap"), "--unsafe-run-code-without-sandbox", "--json",
                 "--record", str(tmp_path / "r.jsonl")])
    assert code == 0
    cap = capsys.readouterr()
    assert (json.loads(cap.out)["passed"], json.loads(cap.out)["total"]) == (1, 1)
    assert "WARNING" in cap.err and "WITHOUT a sandbox" in cap.err
    _, events, _ = read_events(tmp_path / "r.jsonl")
    assert [ev.data.get("sandbox") for ev in events if ev.kind == "mark" and ev.data["label"] == "qeval score"] == [
        "none"]


@needs_sandbox
def test_rescore_is_explicit_and_writes_a_copy_with_verdicts(demo_runs, tmp_path, capsys):
    _, stdout_json, rec = demo_runs["B"]
    header, events, _ = read_events(rec)
    old = tmp_path / "old.jsonl"
    with old.open("w") as fh:  # a recording from before verdicts were recorded
        fh.write(json.dumps(header) + "\n")
        for ev in events:
            if not (ev.kind == "mark" and ev.data.get("label") == "qeval score"):
                fh.write(json.dumps(ev.to_json_obj()) + "\n")
    assert main(["qeval", "rescore", str(old), "--json", "--write", str(tmp_path / "new.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out) == stdout_json
    _, new_events, warnings = read_events(tmp_path / "new.jsonl")
    assert not warnings and to_json_obj(qeval_results(new_events)) == stdout_json
    marks = [ev.data for ev in new_events if ev.kind == "mark" and ev.data["label"] == "qeval score"]
    assert len(marks) == 75 and all(m["rescored"] is True for m in marks)
    assert main(["qeval", "rescore", str(old), "--lane", "Z"]) == 2
    assert "no qeval replies for lane 'Z'" in capsys.readouterr().err
    assert main(["qeval", "rescore", str(tmp_path / "missing.jsonl")]) == 2


def test_headless_summary(capsys):
    assert main(["qeval", "run", "B", "--demo", "--time-scale", "0.05", "--tasks", "math", "--no-record"]) == 0
    out = capsys.readouterr().out
    assert "B 19/20" in out and "math_m9 (math): expected 24, got 22" in out


def _hostile_reply(watch) -> str:
    """A correct fizzbuzz whose module level creates files in ``watch`` when run outside a sandbox."""
    return ("```python\nimport os, sqlite3\ntry:\n"
            f"    sqlite3.connect({str(watch / 'by-sqlite.db')!r}).execute('create table t (x)')\n"
            f"    os.close(os.open('by-dirfd.txt', os.O_CREAT | os.O_WRONLY, dir_fd=os.open({str(watch)!r}, os.O_RDONLY)))\n"
            "except Exception:\n    pass\n\n"
            "def fizzbuzz(n):\n    out = []\n    for i in range(1, n + 1):\n"
            "        out.append('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else str(i))\n"
            "    return out\n```")


@needs_sandbox
def test_report_compare_export_never_run_a_recordings_code(tmp_path, monkeypatch, capsys):
    """A hostile lane answers with code that creates files; reading its recording creates nothing."""
    import subprocess
    import sys

    from scripted_server import ScriptedServer, json_response, sse_head

    import lanemon.workloads.qeval.sandbox as sandbox

    watch = tmp_path / "watched"
    watch.mkdir()
    reply = _hostile_reply(watch)
    sse = [sse_head()]
    for part in (reply[:40], reply[40:]):
        sse.append(b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": part}}]}).encode() + b"\n\n")
    sse.append(b"data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).encode()
               + b"\n\ndata: [DONE]\n\n")
    models = json_response(200, b'{"object": "list", "data": [{"id": "hostile-model"}]}')
    rec = tmp_path / "hostile.jsonl"
    with ScriptedServer({"/v1/models": [models], "/v1/chat/completions": sse}) as srv:
        code = main(["qeval", "run", "H", "--lane", f"H={srv.url}", "--tasks", "code_fizzbuzz", "--json",
                     "--record", str(rec)])
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    assert res["tasks"]["code_fizzbuzz"]["passed"] is True  # scored once, in the sandbox: no file appeared
    assert list(watch.iterdir()) == []

    # in this process: a tripwire on the sandbox
    calls = []
    monkeypatch.setattr(sandbox, "_run", lambda *a, **k: calls.append(a) or pytest.fail("code was executed"))
    assert main(["report", str(rec), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["qeval"]["lanes"]["H"] == res
    assert main(["compare", str(rec), str(rec), "--format", "json"]) == 0
    assert main(["export", str(rec), "--requests", "--format", "csv"]) == 0
    assert calls == []
    # and as separate processes, unsandboxed if anything ran: the watched directory stays empty
    for args in (["report", str(rec)], ["compare", str(rec), str(rec)], ["export", str(rec), "--requests"],
                 ["report", str(rec), "--format", "html", "-o", str(tmp_path / "r.html")]):
        out = subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (args, out.stderr[-500:])
    assert list(watch.iterdir()) == []
    # rescoring is the explicit way to run it again -- in the sandbox, so still nothing appears
    monkeypatch.undo()
    capsys.readouterr()
    assert main(["qeval", "rescore", str(rec), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"]["code_fizzbuzz"]["passed"] is True
    assert list(watch.iterdir()) == []


def test_a_truncated_stream_is_not_scored_as_a_reply(tmp_path, capsys):
    """Tokens, then [DONE] without a finish_reason: a request failure, not a reply to score."""
    from scripted_server import ScriptedServer, json_response, sse_head

    reply = json.dumps({"choices": [{"index": 0, "delta": {"content": "Answer: 42"}}]}).encode()
    sse = [sse_head(), b"data: " + reply + b"\n\ndata: [DONE]\n\n"]
    models = json_response(200, b'{"object": "list", "data": [{"id": "m"}]}')
    with ScriptedServer({"/v1/models": [models], "/v1/chat/completions": sse}) as srv:
        assert main(["qeval", "run", "T", "--lane", f"T={srv.url}", "--tasks", "math_m1", "--json",
                     "--no-record"]) == 0
    res = json.loads(capsys.readouterr().out)
    from lanemon.measure.records import RequestRecord

    if not hasattr(RequestRecord, "outcome"):
        pytest.skip("this lanemon has no request outcomes yet")
    assert res["tasks"]["math_m1"]["passed"] is False
    assert res["tasks"]["math_m1"]["reason"] == "request failed: the stream ended without a finish_reason (truncated)"


@needs_sandbox
def test_a_verdict_quoting_the_lanes_key_is_redacted(tmp_path, monkeypatch, capsys):
    """The model rebuilds the lane's key in its output (it never sees the key in the sandbox, but a hostile
    server knows it): the recorded and printed reason carries [redacted], not the key."""
    from scripted_server import ScriptedServer, json_response, sse_head

    planted = "sk-lanemon-planted-qeval-" + "4d2e9a71c0"
    monkeypatch.setenv("LANEMON_QEVAL_KEY", planted)
    half = len(planted) // 2
    code = (f"```python\ndef fizzbuzz(n):\n    return [{planted[:half]!r} + {planted[half:]!r}]\n```")
    sse = [sse_head(),
           b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": code}}]}).encode() + b"\n\n",
           b"data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).encode()
           + b"\n\ndata: [DONE]\n\n"]
    models = json_response(200, b'{"object": "list", "data": [{"id": "m"}]}')
    with ScriptedServer({"/v1/models": [models], "/v1/chat/completions": sse}) as srv:
        cfg = tmp_path / "lanes.toml"
        cfg.write_text(f'[lanes.K]\nurl = "{srv.url}"\napi_key_env = "LANEMON_QEVAL_KEY"\n')
        rec = tmp_path / "k.jsonl"
        assert main(["qeval", "run", "K", "--config", str(cfg), "--tasks", "code_fizzbuzz", "--json",
                     "--record", str(rec)]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    reason = res["tasks"]["code_fizzbuzz"]["reason"]
    assert not res["tasks"]["code_fizzbuzz"]["passed"] and "[redacted]" in reason, reason
    assert planted not in out.out + out.err and planted not in rec.read_text()
