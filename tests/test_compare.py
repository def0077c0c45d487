"""`lanemon compare`: real recordings from the simulated lanes, fixed recordings, every format, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lanemon.cli.main import main
from lanemon.reports.compare import NOISE_BANDS, Metric, compare, compare_lanes, judge, render
from lanemon.reports.analyse import analyze
from test_compare_fixtures import session_events, slow_copy, write_recording

ROW_KEYS = {"bench", "lane", "cell", "metric", "old", "new", "ratio", "better", "significant"}


def _run(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "lanemon", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=90)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """A decode recording (2 reps) and a prefill recording from the CLI on the simulated lanes, run at once,
    plus the decode recording's "regression" copy with lane A 2x slower (a loaded 2-core box can spread
    reps by 30 %; the copy must be beyond that)."""
    d = tmp_path_factory.mktemp("compare")
    decode, prefill = d / "decode.jsonl", d / "prefill.jsonl"
    procs = [subprocess.Popen([sys.executable, "-m", "lanemon", "bench", "decode", "--demo", "--time-scale", "0.05",
                               "--levels", "1,2", "--categories", "coding,prose", "--max-tokens", "48", "--reps", "2",
                               "--json", "--record", str(decode)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL),
             subprocess.Popen([sys.executable, "-m", "lanemon", "bench", "prefill", "--demo", "--time-scale", "0.05",
                               "--lengths", "2000,8000", "--seed", "1", "--json", "--record", str(prefill)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for p in procs:
        assert p.wait(timeout=90) == 0
    slow = slow_copy(decode, d / "decode-slow.jsonl", lane="A", factor=2.0)
    return {"decode": decode, "prefill": prefill, "slow": slow}


@pytest.fixture()
def fixed(tmp_path):
    old = write_recording(tmp_path / "old.jsonl", session_events())
    return old, slow_copy(old, tmp_path / "new.jsonl", lane="A", factor=1.3)


def _json(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main(["compare", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------ real recordings
def test_same_recording_has_no_significant_change(real, capsys):
    out = _json(capsys, str(real["decode"]), str(real["decode"]))
    assert out["rows"] and out["summary"]["significant_better"] == out["summary"]["significant_worse"] == 0
    assert out["summary"]["noise"] == len(out["rows"])
    assert all(not r["significant"] and r["better"] is None for r in out["rows"])
    assert out["only_old"] == out["only_new"] == []


def test_the_slowed_lane_is_named_as_a_significant_regression(real, capsys):
    out = _json(capsys, str(real["decode"]), str(real["slow"]))
    assert ROW_KEYS <= set(out["rows"][0])
    agg = {(r["lane"], r["cell"]): r for r in out["rows"] if r["metric"] == "aggregate_tok_s"}
    for level in ("C1", "C2"):
        a = agg[("A", level)]
        assert a["significant"] and a["better"] == "old" and a["ratio"] == pytest.approx(1 / 2.0, rel=0.02)
        assert a["old_range"] and a["new_range"]  # judged on the reps' ranges
        b = agg[("B", level)]
        assert not b["significant"] and b["ratio"] == 1.0
    ttft = [r for r in out["rows"] if r["lane"] == "A" and r["metric"] == "ttft_p50_s"]
    assert ttft and all(r["significant"] and r["better"] == "old" for r in ttft)
    assert out["summary"]["significant_worse"] >= 8 and out["summary"]["significant_better"] == 0
    assert all(r["lane"] == "A" for r in out["rows"] if r["significant"])
    # the table names it too
    capsys.readouterr()
    assert main(["compare", str(real["decode"]), str(real["slow"])]) == 0
    text = capsys.readouterr().out
    assert "worse, significant" in text and "old:" in text and "new:" in text


def test_lanes_mode_reproduces_the_a_vs_b_ratios_of_analyze(real, capsys):
    decode = analyze(real["decode"])["decode"]["lanes"]
    out = _json(capsys, str(real["decode"]), "--lanes", "A,B")
    assert out["old"]["lane"] == "A" and out["new"]["lane"] == "B"
    rows = {r["cell"]: r for r in out["rows"] if r["metric"] == "aggregate_tok_s"}
    assert set(rows) == {"C1", "C2"}
    for lvl in ("1", "2"):
        a, b = decode["A"]["levels"][lvl]["aggregate_tok_s"], decode["B"]["levels"][lvl]["aggregate_tok_s"]
        r = rows[f"C{lvl}"]
        assert (r["old"], r["new"]) == (a, b) and r["ratio"] == pytest.approx(b / a, abs=1e-4)
        assert r["better"] == ("new" if b > a else "old")
    prefill = analyze(real["prefill"])["prefill"]
    out = _json(capsys, str(real["prefill"]), "--lanes", "A,B")
    by_len = {r["cell"]: r["ratio"] for r in out["rows"] if r["metric"] == "prefill_tok_s"}
    assert by_len.keys() == prefill["ratios"]["by_length"].keys()
    for k, v in prefill["ratios"]["by_length"].items():
        assert by_len[k] == pytest.approx(v, abs=2e-3)


def test_only_in_one_recording_is_listed(real, capsys):
    out = _json(capsys, str(real["decode"]), str(real["prefill"]))
    assert out["rows"] == []
    assert {x["bench"] for x in out["only_old"]} == {"decode"}
    assert {x["bench"] for x in out["only_new"]} == {"prefill"}
    assert {"bench": "prefill", "lane": "B", "cell_kind": "length", "cell": "8000"} in out["only_new"]
    assert out["summary"]["only_new"] == len(out["only_new"]) == 4
    # --lanes with two recordings keeps only those lanes
    out = _json(capsys, str(real["decode"]), str(real["slow"]), "--lanes", "B")
    assert {r["lane"] for r in out["rows"]} == {"B"}


# ------------------------------------------------------------------ fixed recordings, pure parts
def test_partial_overlap_and_task_rows(fixed):
    old, new = analyze(fixed[0]), analyze(fixed[1])
    del new["decode"]["lanes"]["B"]["levels"]["2"]
    del old["prefill"]["lanes"]["A"]["lengths"]["8000"]
    out = compare(old, new)
    assert {"bench": "decode", "lane": "B", "cell_kind": "level", "cell": "C2"} in out["only_old"]
    assert out["only_new"] == [{"bench": "prefill", "lane": "A", "cell_kind": "length", "cell": "8000"}]
    assert not any(r["lane"] == "B" and r["cell"] == "C2" and r["bench"] == "decode" for r in out["rows"])


def test_judge_rules():
    tps = Metric("x", "x", "higher", "throughput", "tok/s")
    ttft = Metric("t", "t", "lower", "latency", "s")
    assert NOISE_BANDS == {"throughput": 0.05, "latency": 0.10, "divergence": 0.10}
    # no reps: the default band
    assert judge(tps, 100, 104)["significant"] is False and judge(tps, 100, 106)["significant"] is True
    assert judge(ttft, 1.0, 1.08) == {"ratio": 1.08, "better": "old", "significant": False, "basis": "band 10%"}
    assert judge(ttft, 1.0, 0.85)["better"] == "new" and judge(ttft, 1.0, 0.85)["significant"]
    # reps: overlapping ranges are noise even for a large median change, disjoint ones are significant
    assert not judge(tps, 100, 120, [80, 100, 130], [110, 120, 125])["significant"]
    assert judge(tps, 100, 103, [99, 100, 101], [102, 103, 104])["significant"]
    # one side with reps widens the band to its spread
    assert not judge(tps, 100, 110, [85, 100, 115], [110])["significant"]
    # counts are exact; missing values are never significant
    count = Metric("errors", "errors", "lower", "count", "")
    assert judge(count, 0, 1) == {"ratio": None, "better": "old", "significant": True, "basis": "exact count"}
    assert judge(tps, None, 5)["significant"] is False and judge(tps, None, 5)["better"] == "new"


def test_qeval_score_uses_the_paired_test():
    def run(fails):
        return {"lane": "A", "passed": 20 - len(fails), "total": 20,
                "tasks": {f"t{i}": {"passed": f"t{i}" not in fails} for i in range(20)}}

    def analysis(r):
        return {"environment": {}, "qeval": {"bench": "qeval", "lanes": {"A": r}, "compare": None}}

    out = compare(analysis(run([])), analysis(run(["t1"])))
    score = next(r for r in out["rows"] if r["metric"] == "passed")
    assert score["better"] == "old" and not score["significant"] and "McNemar" in score["basis"]
    tasks = [r for r in out["rows"] if r["metric"] == "task_passed"]
    assert [(t["cell"], t["old"], t["new"], t["significant"]) for t in tasks] == [("t1", 1.0, 0.0, False)]
    out = compare(analysis(run([])), analysis(run([f"t{i}" for i in range(8)])))
    assert next(r for r in out["rows"] if r["metric"] == "passed")["significant"]


def test_every_format_renders(fixed, tmp_path, capsys):
    old, new = fixed
    result = compare(analyze(old), analyze(new))
    md = render(result, "md")
    assert md.startswith("# Compare: old vs new session") and "## Significant changes" in md
    assert "| bench | lane | cell |" in md and "**worse, significant**" in md
    html = render(result, "html")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html.split("<main>")[0]
    assert html.count("<svg") >= 2 and "A old" in html and "A new" in html  # overlaid curves
    assert 'class="worse"' in html
    data = json.loads(render(result, "json"))
    assert set(data) >= {"old", "new", "rows", "only_old", "only_new", "summary"}
    assert set(data["summary"]) >= {"significant_better", "significant_worse", "noise"}
    # -o picks the format from the suffix
    for suffix, probe in ((".md", "# Compare"), (".html", "<!DOCTYPE html>"), (".json", '"rows"')):
        path = tmp_path / f"out{suffix}"
        assert main(["compare", str(old), str(new), "-o", str(path)]) == 0
        assert probe in path.read_text()
    lanes = compare_lanes(analyze(old), "A", "B")
    assert "B/A" in render(lanes, "table") and "Compare: lane A vs lane B" in render(lanes, "md")


@pytest.mark.parametrize("argv, needle", [
    (["nope.jsonl", "nope2.jsonl"], "no such file"),
    (["{old}"], "needs --lanes A,B"),
    (["{old}", "--lanes", "A,Z"], "no lane Z"),
    (["{old}", "--lanes", "A,A"], "named twice"),
    (["{old}", "{new}", "{old}"], "two recordings"),
    (["{notrec}", "{new}"], "not a lanemon recording"),
    (["{old}", "{new}", "-o", "{tmp}/x.pdf"], "cannot tell the format"),
    (["{old}", "{new}", "--tui", "--format", "md"], "--tui"),
])
def test_bad_input_is_one_line_and_exit_2(fixed, tmp_path, capsys, argv, needle):
    notrec = tmp_path / "notes.txt"
    notrec.write_text("hello\n")
    args = [a.format(old=fixed[0], new=fixed[1], notrec=notrec, tmp=tmp_path) for a in argv]
    capsys.readouterr()
    assert main(["compare", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1
