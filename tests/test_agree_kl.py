"""Greedy agreement and teacher-forced logprob divergence (lanemon agree / lanemon kl)."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys

import pytest

from lanemon.recording.reader import read_events
from lanemon.reports.json_schema import validate
from lanemon.results.agree import AgreeResult
from lanemon.results.common import to_json_obj
from lanemon.results.kl import KlResult
from lanemon.sim.divergence import divergence_word
from lanemon.sim.server import SimThread
from lanemon.workloads.agree import first_divergence_word, load_agree_prompts, summarize_agreement
from lanemon.workloads.kl import kl_results, kl_topk


def lanemon(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ pure parts
@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("the cat sat", "the cat sat", (3, True)),
        ("the cat sat", "the dog sat", (1, False)),
        ("a b", "x b", (0, False)),
        ("the cat", "the cat sat on", (2, False)),  # one stopped early: differs where it stopped
        ("the  cat\nsat", "the cat sat", (3, True)),  # whitespace does not make words differ
    ],
)
def test_first_divergence_word(a, b, expected):
    assert first_divergence_word(a, b) == expected


def test_summary_counts():
    s = summarize_agreement([(0, False), (0, False), (2, False), (12, False), (5, True)])
    assert s.total == 5 and s.exact == 1 and s.diverge_at_0 == 2
    assert s.agree_ge_10_words == 2  # the 12 and the exact one
    assert s.median_first_divergence_word == 2
    assert s.histogram["0"] == 2 and s.histogram["10-19"] == 1 and s.histogram["exact"] == 1
    assert s.histogram_share == {"0": 0.4, "1": 0.0, "2": 0.2, "3-4": 0.0, "5-9": 0.0, "10-19": 0.2, "20+": 0.0,
                                 "exact": 0.2}  # each bucket's prompts / the 5 compared
    assert list(s.histogram_share) == list(s.histogram)
    assert set(summarize_agreement([]).histogram_share.values()) == {None}  # none compared: no share
    third = summarize_agreement([(0, False), (1, False), (1, False)])
    assert third.histogram_share["0"] == 0.3333 and third.histogram_share["1"] == 0.6667  # 4 places


def test_kl_estimator_hand_checked():
    ln = math.log
    # same support, tail 0.2 on both sides: 0.5 ln(0.5/0.4) + 0.3 ln(0.3/0.4) + 0.2 ln(0.2/0.2)
    expected = 0.5 * ln(0.5 / 0.4) + 0.3 * ln(0.3 / 0.4) + 0.2 * ln(0.2 / 0.2)
    assert kl_topk({"a": ln(0.5), "b": ln(0.3)}, {"a": ln(0.4), "b": ln(0.4)}) == pytest.approx(expected, abs=1e-9)
    assert expected == pytest.approx(0.025267, abs=1e-6)
    # 'c' missing from the lane's top-k gets its leftover mass 0.1: .6 ln(.6/.5) + .3 ln(.3/.1) + .1 ln(.1/.4)
    expected = 0.6 * ln(0.6 / 0.5) + 0.3 * ln(0.3 / 0.1) + 0.1 * ln(0.1 / 0.4)
    assert kl_topk({"a": ln(0.6), "c": ln(0.3)}, {"a": ln(0.5), "b": ln(0.4)}) == pytest.approx(expected, abs=1e-9)
    same = {"x": ln(0.7), "y": ln(0.2)}
    assert kl_topk(same, same) == 0.0


# ------------------------------------------------------------ against the sims
def test_agree_reproduces_the_writeup_from_the_documented_rule(tmp_path):
    rec = tmp_path / "agree.jsonl"
    out = lanemon("agree", "--demo", "--time-scale", "0.02", "--json", "--record", str(rec))
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert (r["total"], r["exact"], r["median_first_divergence_word"], r["agree_ge_10_words"], r["diverge_at_0"]) == (
        40, 0, 2, 9, 18)
    # every prompt diverges exactly where the simulator's rule says (or where the native text ends)
    prompts = load_agree_prompts()
    for row in r["prompts"]:
        assert row["first_divergence_word"] == min(divergence_word(prompts[row["id"]], 0), row["b_words"])
    # the recording alone gives the same result: what --json printed decodes strictly into it and equals it
    from lanemon.workloads.agree import agree_results, public

    _, events, warnings = read_events(rec)
    again = agree_results(events)
    assert warnings == [] and isinstance(again, AgreeResult)
    assert to_json_obj(public(again)) == r and validate("agree", r) == public(again)
    assert all(p.a_text is not None and p.b_text is not None for p in again.prompts)  # the report has the texts
    assert all("a_text" not in p and "b_text" not in p for p in r["prompts"])  # --json does not


def test_agree_on_two_identical_lanes_is_exact():
    with SimThread("sglang-native", time_scale=0.02) as b1, SimThread("sglang-native", time_scale=0.02) as b2:
        out = lanemon("agree", "--lane", f"B1={b1.base_url}", "--lane", f"B2={b2.base_url}", "--json", "--no-record")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["exact"] == r["total"] == 40 and r["diverge_at_0"] == 0


def test_kl_reports_not_exposed_cleanly_on_default_lanes(tmp_path):
    rec = tmp_path / "kl.jsonl"
    out = lanemon("kl", "--reference", "B", "--demo", "--time-scale", "0.02", "--json", "--record", str(rec),
                  "--prompts", "2")
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    r = json.loads(out.stdout)
    assert r["lanes"]["A"]["status"] == "not_exposed" and "logprobs are not supported" in r["lanes"]["A"]["message"]
    assert r["lanes"]["B"]["status"] == "not_exposed" and "prompt logprobs" in r["lanes"]["B"]["message"]
    assert "not exposed by lane A: HTTP 400" in out.stderr
    _, events, _ = read_events(rec)
    again = kl_results(events)  # the typed result; what --json printed decodes strictly into it and equals it
    assert isinstance(again, KlResult) and to_json_obj(again) == r and validate("kl", r) == again


def _kl_between(profile_a, profile_b):
    from lanemon.config import LaneConfig
    from lanemon.workloads.harness import Harness
    from lanemon.workloads.kl import run_kl

    with SimThread(profile_a, time_scale=0.02, logprobs="full") as a, \
            SimThread(profile_b, time_scale=0.02, logprobs="full") as b:
        async def main():
            h = Harness([LaneConfig("A", a.base_url), LaneConfig("B", b.base_url)])
            await h.connect()
            await run_kl(h, load_agree_prompts()[:3], reference="B", tokens=16, k=5)
            await h.aclose()
            return kl_results(h.events)

        return asyncio.run(main())


def test_kl_is_finite_and_positive_when_logprobs_are_on():
    r = _kl_between("tensorfold-exl3", "sglang-native")
    a = r.lanes["A"]
    assert a.status == "ok" and a.positions >= 30
    assert 0 < a.kl < 0.2 and math.isfinite(a.kl_p99)
    assert r.lanes["B"].message == "reference"


def test_kl_of_two_native_lanes_is_zero():
    r = _kl_between("sglang-native", "sglang-native")
    assert r.lanes["A"].status == "ok" and r.lanes["A"].kl == 0.0
