"""`lanemon compare`: real recordings from the simulated lanes, fixed recordings, every format, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lanemon.cli.main import main
from lanemon.reports.compare import NOISE_BANDS, Metric, compare, compare_lanes, correct, judge, render
from lanemon.reports.analyse import analyze
from lanemon.reports.compare import compare as compare_sessions
from lanemon.results.analysis import as_analysis
from lanemon.results.common import as_result, to_json_obj
from lanemon.results.compare import CompareRow
from lanemon.results.qeval import QevalResult, QevalTask
from test_compare_fixtures import session_events, slow_copy, write_recording

ROW_KEYS = {"bench", "lane", "cell", "metric", "old", "new", "ratio", "better", "significant"}


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Two decode recordings of the same simulated setup (2 reps each) and a prefill recording from the CLI,
    run at once, plus the first decode recording's "regression" copy with lane A 2x slower."""
    d = tmp_path_factory.mktemp("compare")
    decode, decode2, prefill = d / "decode.jsonl", d / "decode2.jsonl", d / "prefill.jsonl"
    decode_cmd = [sys.executable, "-m", "lanemon", "bench", "decode", "--demo", "--time-scale", "0.05", "--levels",
                  "1,2", "--categories", "coding,prose", "--max-tokens", "48", "--reps", "2", "--json", "--record"]
    procs = [subprocess.Popen(decode_cmd + [str(decode)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen(decode_cmd + [str(decode2)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([sys.executable, "-m", "lanemon", "bench", "prefill", "--demo", "--time-scale", "0.05",
                               "--lengths", "2000,8000", "--seed", "1", "--json", "--record", str(prefill)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for p in procs:
        assert p.wait(timeout=400) == 0  # a loaded 2-core box may take minutes
    slow = slow_copy(decode, d / "decode-slow.jsonl", lane="A", factor=2.0)
    return {"decode": decode, "decode2": decode2, "prefill": prefill, "slow": slow}


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


def test_two_runs_of_the_same_simulated_setup_with_two_reps_flag_nothing(real, capsys):
    out = _json(capsys, str(real["decode"]), str(real["decode2"]))
    assert out["rows"] and out["summary"]["significant_better"] == out["summary"]["significant_worse"] == 0
    assert not any(r["significant"] for r in out["rows"])
    assert out["summary"]["tested"] == 0  # 2 reps a side: nothing is tested, whatever the gap
    # the simulated lanes are named at the top of every format
    assert out["simulated"] == ["A", "B"]
    for fmt in ("table", "md", "html"):
        capsys.readouterr()
        assert main(["compare", str(real["decode"]), str(real["decode2"]), "--format", fmt]) == 0
        text = capsys.readouterr().out
        body = text.split("<main>")[-1]  # html: the page's body; table / md: the whole text
        head = "\n".join(body.splitlines()[:4])  # at the top, before anything else is said
        assert "SIMULATED: lanes A, B are lanemon" in head, fmt


def test_the_slowed_lane_with_two_reps_is_beyond_the_band_but_never_significant(real, capsys):
    out = _json(capsys, str(real["decode"]), str(real["slow"]))
    assert ROW_KEYS <= set(out["rows"][0])
    agg = {(r["lane"], r["cell"]): r for r in out["rows"] if r["metric"] in ("aggregate_tok_s", "steady_tok_s")}
    for level in ("C1", "C2"):
        for metric in ("aggregate_tok_s", "steady_tok_s"):
            a = next(r for r in out["rows"] if (r["lane"], r["cell"], r["metric"]) == ("A", level, metric))
            assert a["better"] == "old" and a["ratio"] == pytest.approx(1 / 2.0, rel=0.02)
            assert not a["significant"] and a["p"] is None
            # beyond the band unless a loaded machine spread the reps even wider than the 2x change
            assert a["beyond_band"] == (abs(a["ratio"] - 1) > a["band"]), a
            # a loaded machine may have starved lanemon during the cell: then it is not judged at all
            assert ("starved" if a["unreliable"] else "not tested: 2 vs 2 reps") in a["basis"], a
        b = agg[("B", level)]
        assert not b["significant"] and b["ratio"] == 1.0
    assert out["summary"]["significant_worse"] == out["summary"]["significant_better"] == 0
    assert out["summary"]["untested_beyond_band"] + out["summary"]["unreliable"] >= 8
    capsys.readouterr()
    assert main(["compare", str(real["decode"]), str(real["slow"])]) == 0
    text = capsys.readouterr().out
    from lanemon.reports.compare import change_text

    judged = any(r["beyond_band"] and not r["unreliable"] for r in out["rows"])
    words = {change_text(as_result(r, CompareRow)) for r in out["rows"]}
    assert ("worse, beyond band (untested)" if judged else "worse, not judged (client-bound)") in words
    assert "worse, significant" not in text and "worse, significant" not in words


def test_lanes_mode_reproduces_the_a_vs_b_ratios_of_analyze(real, capsys):
    decode = analyze(real["decode"]).decode.lanes
    out = _json(capsys, str(real["decode"]), "--lanes", "A,B")
    assert out["old"]["lane"] == "A" and out["new"]["lane"] == "B"
    rows = {r["cell"]: r for r in out["rows"] if r["metric"] == "aggregate_tok_s"}
    assert set(rows) == {"C1", "C2"}
    for lvl in ("1", "2"):
        a, b = decode["A"].levels[lvl].aggregate_tok_s, decode["B"].levels[lvl].aggregate_tok_s
        r = rows[f"C{lvl}"]
        assert (r["old"], r["new"]) == (a, b) and r["ratio"] == pytest.approx(b / a, abs=1e-4)
        assert r["better"] == ("new" if b > a else "old")
    prefill = analyze(real["prefill"]).prefill
    out = _json(capsys, str(real["prefill"]), "--lanes", "A,B")
    by_len = {r["cell"]: r["ratio"] for r in out["rows"] if r["metric"] == "prefill_tok_s"}
    assert by_len.keys() == prefill.ratios.by_length.keys()
    for k, v in prefill.ratios.by_length.items():
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
    del new.decode.lanes["B"].levels["2"]
    del old.prefill.lanes["A"].lengths["8000"]
    out = to_json_obj(compare(old, new))
    assert {"bench": "decode", "lane": "B", "cell_kind": "level", "cell": "C2"} in out["only_old"]
    assert out["only_new"] == [{"bench": "prefill", "lane": "A", "cell_kind": "length", "cell": "8000"}]
    assert not any(r["lane"] == "B" and r["cell"] == "C2" and r["bench"] == "decode" for r in out["rows"])


def test_judge_rules():
    tps = Metric("x", "x", "higher", "throughput", "tok/s")
    ttft = Metric("t", "t", "lower", "latency", "s")
    assert NOISE_BANDS == {"throughput": 0.05, "latency": 0.10, "divergence": 0.10}
    # no reps: never significant, only inside or beyond the default band
    j = judge(tps, 100, 104)
    assert (j.significant, j.beyond_band, j.p, j.band) == (False, False, None, 0.05)
    j = judge(tps, 100, 106)
    assert j.significant is False and j.beyond_band is True and "not tested: 0 vs 0 reps" in j.basis
    assert judge(ttft, 1.0, 1.08).beyond_band is False and judge(ttft, 1.0, 0.85).beyond_band is True
    assert judge(ttft, 1.0, 0.85).better == "new"
    # 2 reps a side: still untested, however far apart
    assert judge(tps, 100, 200, [99, 101], [199, 201]).p is None
    # 3 reps a side: tested; separated reps give the exact p 2 / C(6, 3) = 0.1, not enough alone
    j = judge(tps, 100, 103, [99, 100, 101], [102, 103, 104])
    assert j.p == pytest.approx(0.1) and j.significant is False and j.test == "permutation"
    # 5 reps a side, separated: p = 2 / 252
    j = judge(tps, 100, 110, [99, 100, 100, 101, 102], [109, 110, 110, 111, 112])
    assert j.p == pytest.approx(2 / 252) and j.significant is True
    # overlapping reps are noise even for a large median change
    assert not judge(tps, 100, 120, [80, 100, 130, 90, 120], [110, 120, 125, 85, 95]).significant
    # one side's spread widens the band
    assert judge(tps, 100, 110, [85, 100, 115], [110]).band == pytest.approx(0.3)
    # a client-bound cell is not judged
    j = judge(tps, 100, 150, [99, 100, 100, 101, 102], [149, 150, 150, 151, 152], unreliable=True)
    assert j.significant is False and "starved" in j.basis
    # counts are exact; missing values are never significant
    count = Metric("errors", "errors", "lower", "count", "")
    assert judge(count, 0, 1).significant is True and judge(count, 0, 1).basis == "exact count"
    assert judge(tps, None, 5).significant is False and judge(tps, None, 5).better == "new"


def test_correction_across_the_rows_of_one_comparison():
    from lanemon.results.compare import CompareRow

    def row(better, p):
        return CompareRow(bench="decode", lane="A", cell_kind="level", cell="C1", metric="x", label="x", unit="",
                          direction="higher", better=better, p=p, basis="x")

    rows = [row("old", 0.04), row("old", 0.004), row(None, None)] + [row("new", 0.5) for _ in range(8)]
    correct(rows)
    # 0.04 alone would pass; among 10 tested rows it does not (BH: 0.04 * 10 / 2 = 0.2)
    assert rows[0].significant is False and rows[0].p_adjusted == pytest.approx(0.2)
    assert rows[1].significant is True and rows[1].p_adjusted == pytest.approx(0.04)
    assert rows[2].p_adjusted is None and rows[2].significant is False
    assert "Benjamini-Hochberg" in rows[1].basis


def _synthetic(path, seed, reps, slow_a=1.0, noise=0.02):
    """A decode session of lanes A and B, levels 1-3, ``reps`` reps, every rep's wall time jittered by
    ``noise`` (gaussian, seeded); lane A's wall times x ``slow_a``: a real change of that size."""
    import random

    from test_bench_results import MS, Ev

    rng = random.Random(seed)
    ev = Ev("decode", ("A", "B"), config={"levels": [1, 2, 3], "reps": reps, "categories": ["coding"]})
    t = 1000 * MS
    for lane in ("A", "B"):
        for level in (1, 2, 3):
            for rep in range(reps):
                wall = int(1000 * (slow_a if lane == "A" else 1.0) * (1 + rng.gauss(0, noise)) * MS)
                ttft = int(150 * (slow_a if lane == "A" else 1.0) * (1 + rng.gauss(0, noise)) * MS)
                reqs = [dict(sent=t, ttft=ttft, end=t + wall, tokens=60, part="level", level=level, rep=rep,
                             category="coding") for _ in range(level)]
                ev.cell(lane, f"{lane}/C{level}/r{rep}", t, t + wall, reqs, part="level", level=level, rep=rep)
                t += wall + 10 * MS
    return write_recording(path, ev.end())


def test_five_reps_and_a_real_ten_percent_change_is_flagged(tmp_path, capsys):
    old = _synthetic(tmp_path / "old.jsonl", 1, 5)
    new = _synthetic(tmp_path / "new.jsonl", 2, 5, slow_a=1 / 0.9)  # lane A 10 % slower in tok/s
    out = _json(capsys, str(old), str(new))
    flagged = {(r["lane"], r["cell"], r["metric"]) for r in out["rows"] if r["significant"]}
    for level in ("C1", "C2", "C3"):
        for metric in ("steady_tok_s", "aggregate_tok_s", "ttft_p50_s"):
            assert ("A", level, metric) in flagged, (level, metric)
    assert not any(lane == "B" for lane, _, _ in flagged)
    row = next(r for r in out["rows"] if (r["lane"], r["cell"], r["metric"]) == ("A", "C2", "steady_tok_s"))
    assert row["better"] == "old" and row["ratio"] == pytest.approx(0.9, abs=0.03) and row["p_adjusted"] < 0.05
    # the same setup twice, 5 reps, no change: nothing flagged
    out = _json(capsys, str(old), str(_synthetic(tmp_path / "same.jsonl", 3, 5)))
    assert out["summary"]["tested"] >= 12 and not any(r["significant"] for r in out["rows"])
    # ... and with 2 reps not even the real change is (too few to tell)
    out = _json(capsys, str(_synthetic(tmp_path / "o2.jsonl", 4, 2)),
                str(_synthetic(tmp_path / "n2.jsonl", 5, 2, slow_a=1 / 0.9)))
    assert not any(r["significant"] for r in out["rows"]) and out["summary"]["untested_beyond_band"] >= 6


def test_no_change_is_rarely_flagged_at_five_reps(tmp_path):
    """The false-positive rate of whole comparisons (same setup, no change, 5 reps, ~20 tested rows)."""
    flagged = 0
    for seed in range(12):
        old = analyze(_synthetic(tmp_path / f"o{seed}.jsonl", 100 + seed, 5, noise=0.03))
        new = analyze(_synthetic(tmp_path / f"n{seed}.jsonl", 200 + seed, 5, noise=0.03))
        flagged += any(r.significant for r in compare(old, new).rows)
    assert flagged <= 2


def test_qeval_score_uses_the_paired_test():
    def run(fails):
        def task(tid):
            return QevalTask(passed=tid not in fails, reason="", kind="math", prompt_tokens=None,
                             completion_tokens=None, seconds=None)

        return QevalResult(lane="A", model=None, passed=20 - len(fails), total=20,
                           tasks={f"t{i}": task(f"t{i}") for i in range(20)})

    def analysis(r):
        return as_analysis({"environment": {}, "qeval": {"bench": "qeval", "lanes": {"A": r}, "compare": None}})

    def compare(old, new):
        return to_json_obj(compare_sessions(old, new))

    out = compare(analysis(run([])), analysis(run(["t1"])))
    score = next(r for r in out["rows"] if r["metric"] == "passed")
    assert score["better"] == "old" and not score["significant"] and "McNemar p = 1.000" in score["basis"]
    # no task changed: no discordant pairs, said so (no p-value)
    same = next(r for r in compare(analysis(run(["t2"])), analysis(run(["t2"])))["rows"] if r["metric"] == "passed")
    assert same["basis"] == "McNemar: no discordant pairs (no task changed)" and same["p"] is None
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
