"""`lanemon report` on the quality and agent workloads: qeval, agree, kl, gauntlet.

Small real recordings made with the CLI on the simulated lanes (and one
two-lane qeval recording through the harness), checked against each command's
own --json, then every format; plus hand-made analyses for the verdict rules.
"""

from __future__ import annotations

import asyncio
import copy
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import msgspec

from lanemon.results.agree import AgreeResult
from lanemon.results.common import as_result

import pytest

from lanemon.reports.sections import sections
from lanemon.reports.verdict import verdict
from lanemon.reports.format import int_text
from lanemon.reports.render import render_csv, render_html, render_markdown
from lanemon.reports.render.csv import CSV_COLUMNS
from lanemon.reports.analyse import analyze
from lanemon.results.agree import AgreeResult
from lanemon.results.common import Result, as_result, to_json_obj
from lanemon.results.gauntlet import GauntletResult
from lanemon.results.kl import KlLane, KlResult
from lanemon.results.qeval import QevalResult, QevalTask
from lanemon.workloads.agree import agree_results
from lanemon.workloads.kl import kl_results

TASKS = "math_m9,json_escape,json_count,code_interval_intersect,format_haiku,format_three_bullets,math_m1"
MISSES = "code_interval_intersect, json_escape, json_count, math_m9"  # bank order
COMMANDS = {
    "agree": ["agree", "--demo", "--time-scale", "0.02", "--prompts", "6", "--tokens", "24"],
    "kl": ["kl", "--reference", "B", "--demo", "--time-scale", "0.02", "--prompts", "2"],
    "qeval": ["qeval", "run", "A", "--demo", "--time-scale", "0.05", "--tasks", TASKS],
    "gauntlet": ["gauntlet", "--demo", "--time-scale", "0.05", "--reps", "1", "--hops", "5", "--seed", "7"],
}
EXIT = {"agree": 0, "kl": 3, "qeval": 0, "gauntlet": 0}  # kl: 3 = logprobs not exposed by the default lanes


def lanemon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=60)


def _two_lane_qeval(path: Path) -> dict:
    """`qeval run A` then `qeval run B` in one recording (one harness, both simulated lanes)."""
    from lanemon.cli.common import demo_lanes
    from lanemon.recording.writer import Recorder, make_header
    from lanemon.workloads.harness import Harness
    from lanemon.workloads.qeval import run_qeval, select_tasks

    tasks = select_tasks(TASKS)
    out = {}
    with demo_lanes(0.05) as lanes:
        rec = Recorder(path, make_header("qeval run A; qeval run B --demo", [lane.public() for lane in lanes]))
        harness = Harness(lanes, recorder=rec)

        async def go():
            await harness.connect()
            try:
                for name in ("A", "B"):
                    out[name] = await run_qeval(harness, name, tasks)
            finally:
                await harness.aclose()

        asyncio.run(go())
        rec.close()
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """kind -> (recording, the command's --json); the four CLI runs go in parallel."""
    d = tmp_path_factory.mktemp("quality")
    procs = {}
    for kind, args in COMMANDS.items():
        path = d / f"{kind}.jsonl"
        procs[kind] = (path, subprocess.Popen([sys.executable, "-m", "lanemon", *args, "--json", "--record", str(path)],
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    out = {"qeval2": (d / "qeval2.jsonl", _two_lane_qeval(d / "qeval2.jsonl"))}
    for kind, (path, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=90)
        assert proc.returncode == EXIT[kind], (kind, stderr)
        out[kind] = (path, json.loads(stdout))
    return out


def assert_self_contained(page: str) -> None:
    """The same rule as tests/test_report.py: one file, nothing fetched."""
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert "<script" not in page and "@import" not in page and "url(" not in page


# ----------------------------------------------------------------- analyze == --json
@pytest.mark.parametrize("kind", ["agree", "kl", "qeval", "gauntlet"])
def test_analyze_recording_equals_the_commands_json(runs, kind):
    path, printed = runs[kind]
    a = analyze(path)
    assert a.warnings == []
    got = a.bench(kind)
    if kind == "qeval":  # per lane: each lane's entry is that `qeval run LANE --json`
        assert list(got.lanes) == ["A"] and got.compare is None
        got = got.lanes["A"]
    if kind == "agree":  # typed; --json leaves out the two continuations (they stay in the analysis for the report)
        assert all(r.a_text is not None and r.b_text is not None for r in got.prompts)
        got = msgspec.structs.replace(got, prompts=[msgspec.structs.replace(r, a_text=None, b_text=None)
                                                    for r in got.prompts])
        printed = as_result(printed, AgreeResult)
    if kind in ("qeval", "gauntlet"):  # a typed result: what --json prints is its JSON
        got = to_json_obj(got)
    if isinstance(got, Result) and not isinstance(printed, Result):  # a typed result: what its --json prints
        got = to_json_obj(got)
    assert got == printed
    assert a.benches() == [kind]


def test_two_lane_qeval_is_paired_with_the_qeval_compare_function(runs):
    from lanemon.workloads.qeval import compare_runs

    path, results = runs["qeval2"]
    q = analyze(path).qeval
    assert q.lanes == results
    assert q.compare == compare_runs(results["A"], results["B"], "A", "B")
    assert (q.compare.kept, q.compare.broke, q.compare.fixed) == (3, 0, 0)

    md = lanemon("report", str(path)).stdout
    line = f"A 3/7, B 3/7, the same four misses ({MISSES})"
    assert f"- Quality gate: identical — {line}; kept 3, broke 0, fixed 0: no discordant pairs." in md
    assert f"**{line}; paired A → B: kept 3, broke 0, fixed 0: no discordant pairs." in md
    assert "| math_m9 | math | expected 24, got 22 | expected 24, got 22 | both failed |" in md

    rows = list(csv.DictReader(io.StringIO(lanemon("report", str(path), "--format", "csv").stdout)))
    tasks = [r for r in rows if r["bench"] == "qeval" and r["cell_kind"] == "task"]
    assert len(tasks) == 14 and {r["lane"] for r in tasks} == {"A", "B"}
    m9 = next(r for r in tasks if r["lane"] == "B" and r["cell"] == "math_m9")
    assert (m9["passed"], m9["paired"], m9["vs_lane"], m9["task_kind"]) == ("false", "both_failed", "A", "math")
    paired = {r["cell"]: (int(r["count"]), float(r["p_value"])) for r in rows if r["cell_kind"] == "paired"}
    assert paired == {"kept": (3, 1.0), "broke": (0, 1.0), "fixed": (0, 1.0), "both_failed": (4, 1.0)}


# ----------------------------------------------------------------- every format, real recordings
def test_qeval_one_lane_report(runs):
    path, printed = runs["qeval"]
    md = lanemon("report", str(path)).stdout
    assert f"Quality gate (qeval): A 3/7; misses: {MISSES}." in md
    assert "## Quality gate (qeval)" in md and "Paired comparison" not in md and "kept" not in md
    assert "## Decode" not in md and "## Greedy agreement" not in md and "## Agent gauntlet" not in md


def test_agree_report(runs, tmp_path):
    path, printed = runs["agree"]
    n = printed["total"]
    sentence = (f"{printed['exact']}/{n} exact matches with a median first divergence at word "
                f"{int_text(printed['median_first_divergence_word'])} ({printed['agree_ge_10_words']}/{n} "
                f"agree for ten or more words, {printed['diverge_at_0']}/{n} diverge at word 0)")
    md = lanemon("report", str(path)).stdout
    assert "## Greedy agreement" in md and sentence in md
    assert f"on {n} raw-text prompts × 24 tokens" in md
    out = tmp_path / "agree.html"
    assert lanemon("report", str(path), "-o", str(out)).returncode == 0
    page = out.read_text()
    assert_self_contained(page)
    assert page.count("<svg") == 1 and "first differing word (0-based)" in page and sentence in page
    for label, count in printed["histogram"].items():  # one bar per bucket, its count in the hover title
        assert f"A vs B {label.replace('-', '–')}: {count}</title>" in page
    rows = list(csv.DictReader(io.StringIO(lanemon("report", str(path), "--format", "csv").stdout)))
    prompts = [r for r in rows if r["bench"] == "agree" and r["cell_kind"] == "prompt"]
    assert [int(r["first_divergence_word"]) for r in prompts] == [p["first_divergence_word"] for p in printed["prompts"]]
    assert {r["lane"] + r["vs_lane"] for r in prompts} == {"AB"}
    buckets = {r["cell"]: int(r["count"]) for r in rows if r["cell_kind"] == "bucket"}
    assert buckets == printed["histogram"]


def test_kl_report_says_not_exposed(runs):
    path, printed = runs["kl"]
    msg_a = printed["lanes"]["A"]["message"]
    md = lanemon("report", str(path)).stdout
    assert f"not exposed by lane A: {msg_a}" in md
    assert "- No KL between lanes: not exposed by lane A" in md
    page = lanemon("report", str(path), "--format", "html").stdout
    assert_self_contained(page)
    assert "not exposed by lane A" in page and "<svg" not in page
    rows = [r for r in csv.DictReader(io.StringIO(lanemon("report", str(path), "--format", "csv").stdout))
            if r["bench"] == "kl"]
    assert {r["lane"]: (r["status"], r["vs_lane"], r["kl"]) for r in rows} == {
        "A": ("not_exposed", "B", ""), "B": ("not_exposed", "B", "")}
    assert next(r for r in rows if r["lane"] == "A")["reason"] == msg_a


def test_gauntlet_report(runs, tmp_path):
    path, printed = runs["gauntlet"]
    a = printed["lanes"]["A"]
    assert a["correct"] == 1 and printed["lanes"]["B"]["correct"] == 1
    md = lanemon("report", str(path)).stdout
    assert printed["summary"] in md and "1/1 correct with 5 tool calls" in md
    assert "## Agent gauntlet: where each turn's time goes" in md
    assert re.search(r"- Agents(:| → [AB]:) ", md)
    assert "time scale 0.05" in md
    out = tmp_path / "g.html"
    lanemon("report", str(path), "-o", str(out))
    page = out.read_text()
    assert_self_contained(page)
    assert page.count("<svg") == 2  # wall per rep, per-turn TTFT + decode
    assert "wall time (s)" in page and "TTFT (solid)" in page and 'class="bar light' in page
    rows = list(csv.DictReader(io.StringIO(lanemon("report", str(path), "--format", "csv").stdout)))
    reps = {r["lane"]: r for r in rows if r["bench"] == "gauntlet" and r["cell_kind"] == "rep"}
    assert reps["A"]["passed"] == "true" and int(reps["A"]["tool_calls"]) == 5
    assert float(reps["A"]["seconds"]) == a["wall_s"][0] and reps["A"]["reason"] == "answer"
    turns = [r for r in rows if r["bench"] == "gauntlet" and r["cell_kind"] == "turn" and r["lane"] == "A"]
    assert len(turns) == len(a["turns"][0]) == 6
    assert [float(r["ttft_s"]) for r in turns] == [t["ttft_s"] for t in a["turns"][0]]
    assert int(turns[0]["prompt_tokens"]) == a["turns"][0][0]["prompt_tokens"]


# ----------------------------------------------------------------- verdict rules on hand-made figures
def _env():
    return {"lanes": [{"name": "A", "url": "u", "model": "tensorfold-exl3"}, {"name": "B", "url": "v", "model": "sglang-native"}]}


def writeup_gauntlet():
    """The write-up's gauntlet: B 22.4 s vs A 30.4 s, 3/3 with 20 calls; B prefills faster, A decodes faster."""
    from lanemon.results.gauntlet import GauntletTurn
    from lanemon.workloads.gauntlet import summary_sentence
    from lanemon.workloads.gauntlet.results import rep_figures

    def lane(wall, ttft0, decode):
        turns = [{"turn": t, "prompt_tokens": 2023 + 85 * t, "cached_tokens": 0, "ttft_s": ttft0 * (1 + t / 20),
                  "decode_s": decode, "completion_tokens": 50 if t < 20 else 24,
                  "tool": {"name": "read_file", "path": "x", "ok": True} if t < 20 else None, "calls": int(t < 20)}
                 for t in range(21)]
        typed = msgspec.convert(turns, list[GauntletTurn])  # the rep figures are the workload's own
        return {"model": None, "correct": 3, "reps": 3, "correct_per_rep": [True] * 3, "tool_calls": [20] * 3,
                "wall_s": [wall - 0.1, wall, wall + 0.1], "median_wall_s": wall, "malformed_calls": [0] * 3,
                "stopped": ["answer"] * 3, "turns": [turns] * 3,
                **msgspec.to_builtins(rep_figures([typed] * 3))}

    g = as_result({"bench": "gauntlet", "lanes": {"A": lane(30.4, 0.7, 0.30), "B": lane(22.4, 0.4, 0.36)},
                   "config": {"hops": 20, "reps": 3, "system_prompt_tokens": 1950, "time_scale": None},
                   "summary": ""}, GauntletResult)
    g.summary = summary_sentence(g.lanes, 20)
    return g


def writeup_quality():
    tasks = {"code_interval_intersect": "code", "json_escape": "json", "json_count": "json", "math_m9": "math",
             "math_m1": "math", "format_haiku": "format"}

    from lanemon.workloads.qeval.run import task_figures

    def run(lane, fails):
        t = {tid: {"passed": tid not in fails, "reason": "passed" if tid not in fails else "expected 24, got 22",
                   "kind": k, "prompt_tokens": 40, "completion_tokens": 60, "seconds": 0.5} for tid, k in tasks.items()}
        r = as_result({"lane": lane, "model": None, "passed": sum(v["passed"] for v in t.values()), "total": len(t),
                       "tasks": t}, QevalResult)
        return msgspec.structs.replace(r, **task_figures(r.tasks.values())._asdict())  # the run's figures, as qeval's own

    from lanemon.workloads.qeval import compare_runs

    four = {"code_interval_intersect", "json_escape", "json_count", "math_m9"}
    a, b = run("A", four), run("B", four)
    hist = {"0": 18, "1": 1, "2": 3, "3-4": 1, "5-9": 8, "10-19": 3, "20+": 6, "exact": 0}
    agree = {"bench": "agree", "lanes": ["A", "B"], "total": 40, "exact": 0, "median_first_divergence_word": 2.0,
             "agree_ge_10_words": 9, "diverge_at_0": 18, "histogram": hist,
             "histogram_share": {k: v / 40 for k, v in hist.items()}, "errors": 0, "prompts": [],
             "interrupted": False, "config": {"lanes": ["A", "B"], "prompts": 40, "tokens": 128}}
    kl = {"bench": "kl", "reference": "B", "estimator": "topk_tail", "k": 5, "interrupted": False, "config": {},
          "lanes": {"A": {"status": "ok", "message": None, "kl": 0.0123, "kl_p50": 0.004, "kl_p99": 0.21, "positions": 96},
                    "B": {"status": "ok", "message": "reference", "kl": None, "kl_p50": None, "kl_p99": None, "positions": 0}}}
    return {"environment": _env(), "qeval": {"bench": "qeval", "lanes": {"A": a, "B": b}, "compare": compare_runs(a, b)},
            "agree": as_result(agree, AgreeResult), "kl": as_result(kl, KlResult), "gauntlet": writeup_gauntlet(),
            "warnings": []}


def test_verdict_reads_like_the_writeup():
    v = verdict(writeup_quality())
    assert v[0] == ("Quality gate: identical — A 2/6, B 2/6, the same four misses (code_interval_intersect, json_escape, "
                    "json_count, math_m9); kept 2, broke 0, fixed 0: no discordant pairs.")
    assert v[1].startswith("Greedy agreement A vs B: 0/40 exact matches with a median first divergence at word 2 "
                           "(9/40 agree for ten or more words, 18/40 diverge at word 0)")
    assert v[2] == "Logprob divergence: KL(B ‖ A) = 0.0123 nats/token (p50 0.0040, p99 0.2100, 96 positions)."
    assert v[3].startswith("Agents → B: finished the 20-hop chain in 22.4 s vs A 30.4 s (median of 3); both 3/3 "
                           "correct with 20 tool calls; B's faster prefill of the growing transcript")
    assert "outweighs A's decode edge" in v[3]


def test_gauntlet_verdict_swaps_with_the_figures_and_ties_are_ties():
    a = writeup_quality()
    g = a["gauntlet"]
    g.lanes["A"], g.lanes["B"] = g.lanes["B"], g.lanes["A"]
    from lanemon.results.gauntlet import GauntletTurn
    from lanemon.workloads.gauntlet import summary_sentence
    from lanemon.workloads.gauntlet.results import rep_figures

    g.summary = summary_sentence(g.lanes, 20)
    v = verdict(a)[-1]
    assert v.startswith("Agents → A: finished the 20-hop chain in 22.4 s vs B 30.4 s") and "outweighs B's decode edge" in v
    g.lanes["B"].median_wall_s = 22.5
    assert verdict(a)[-1].startswith("Agents: A and B tie on the 20-hop chain")
    g.lanes["B"].median_wall_s, g.lanes["B"].correct = 30.4, 3
    g.lanes["A"].correct, g.lanes["A"].correct_per_rep = 2, [True, True, False]
    assert "but B is correct more often (3/3 vs 2/3)" in verdict(a)[-1]


def test_quality_verdict_claims_a_lead_only_when_the_paired_test_says_so():
    from lanemon.workloads.qeval import compare_runs

    a = writeup_quality()
    q = a["qeval"]
    runs = q["lanes"]
    runs["B"].tasks["format_haiku"].passed = False  # broke 1
    runs["A"].tasks["math_m1"].passed = False  # fixed 1
    q["compare"] = compare_runs(runs["A"], runs["B"])
    v = verdict(a)[0]
    assert v.startswith("Quality gate: no significant difference — ") and "broke 1, fixed 1, McNemar p = 1.000" in v
    # 8 fixed, 0 broke: p = 2/2^8 < 0.05
    def task(passed):
        return QevalTask(passed=passed, kind="math", reason="x", prompt_tokens=None, completion_tokens=None,
                         seconds=None)

    a_run = QevalResult(lane="A", model=None, passed=0, total=8, tasks={f"t{i}": task(False) for i in range(8)})
    b_run = QevalResult(lane="B", model=None, passed=8, total=8, tasks={f"t{i}": task(True) for i in range(8)})
    a["qeval"] = {"bench": "qeval", "lanes": {"A": a_run, "B": b_run}, "compare": compare_runs(a_run, b_run)}
    v = verdict(a)[0]
    assert v.startswith("Quality gate → B: A 0/8, B 8/8") and "fixed 8" in v and "p = 0.008" in v


def test_kl_sentences_and_sections_without_data_are_omitted():
    a = writeup_quality()
    a["kl"].lanes["A"] = KlLane(status="not_exposed", message="HTTP 400: logprobs are not supported", kl=None,
                                kl_p50=None, kl_p99=None, positions=0)
    assert "No KL between lanes: not exposed by lane A: HTTP 400: logprobs are not supported." in verdict(a)
    md = render_markdown(a)
    order = [md.index(h) for h in ("## Verdict", "## Quality gate (qeval)", "## Greedy agreement",
                                   "## Logprob divergence (KL vs B)", "## Agent gauntlet\n",
                                   "## Agent gauntlet: where each turn's time goes", "## Environment")]
    assert order == sorted(order)
    for key in ("qeval", "agree", "kl", "gauntlet"):
        b = copy.deepcopy(a)
        del b[key]
        text = render_markdown(b) + render_html(b)
        gone = {"qeval": "Quality gate", "agree": "Greedy agreement", "kl": "KL", "gauntlet": "Agent"}[key]
        assert gone not in text
    empty = {"environment": _env(), "agree": agree_results([]), "kl": kl_results([]),
             "gauntlet": msgspec.structs.replace(a["gauntlet"], lanes={  # a lane that finished no rep
                 "A": msgspec.structs.replace(a["gauntlet"].lanes["A"], reps=0)}),
             "qeval": {"bench": "qeval", "lanes": {}, "compare": None}, "warnings": []}
    assert sections(empty) == [] and verdict(empty) == []


def test_writeup_html_has_the_quality_and_agent_charts():
    a = writeup_quality()
    page = render_html(a)
    assert_self_contained(page)
    assert page.count("<svg") == 3  # agreement histogram, wall per rep, per-turn breakdown
    assert "A vs B 0: 18</title>" in page and ">18</text>" in page  # bar + integer value label
    assert "B rep 2: 22.40</title>" in page
    assert page.count('class="bar light') == 42 + 1  # a decode segment on every turn of both lanes + legend
    csv_rows = list(csv.DictReader(io.StringIO(render_csv(a))))
    assert tuple(csv_rows[0]) == CSV_COLUMNS
    assert sum(r["bench"] == "gauntlet" and r["cell_kind"] == "turn" for r in csv_rows) == 2 * 3 * 21
