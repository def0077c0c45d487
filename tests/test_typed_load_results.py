"""``bench load`` and ``bench sweep`` return their typed results (lanemon.results.load / .sweep; issue 37, item 2):
``--json`` decodes strictly into them, is exactly ``to_json_obj`` of the result the recording of the same run
gives back, and keeps every key it printed before the results were typed (a key printed as ``null`` included)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lanemon.measure.energy import ENERGY_KEYS
from lanemon.measure.views import attach_engine_views
from lanemon.recording.reader import read_events
from lanemon.reports.json_schema import validate
from lanemon.results.common import to_json_obj
from lanemon.results.load import LoadResult
from lanemon.results.sweep import SweepResult
from lanemon.workloads.bench.load import load_results
from lanemon.workloads.bench.sweep import sweep_results

ARGS = {
    "load": ["--arrival", "constant", "--rate", "8", "--requests", "12", "--warmup", "0.2", "--seed", "1",
             "--workers", "1"],
    "sweep": ["--max-level", "2", "--max-tokens", "32"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One short run of each on the simulated lanes (an SLO and a cost for lane A only: figures and nulls)."""
    out = {}
    for kind, args in ARGS.items():
        rec = tmp_path_factory.mktemp(kind) / f"{kind}.jsonl"
        p = subprocess.run([sys.executable, "-m", "lanemon", "bench", kind, "--demo", "--time-scale", "0.05",
                            "--slo", "ttft=0.5", "--cost", "A=3.5", *args, "--json", "--record", str(rec)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        out[kind] = json.loads(p.stdout), rec
    return out


@pytest.mark.parametrize("kind,cls,results", [("load", LoadResult, load_results), ("sweep", SweepResult, sweep_results)])
def test_json_is_the_typed_results_encoding_and_the_recording_gives_it_back(runs, kind, cls, results):
    printed, rec = runs[kind]
    assert isinstance(validate(f"bench-{kind}", printed), cls)  # strictly: no key the contract does not name
    _, events, _ = read_events(rec)
    result = results(events)
    assert isinstance(result, cls)
    assert to_json_obj(attach_engine_views(result, events)) == printed


def test_load_json_keeps_the_keys_it_prints_as_null(runs):
    printed, _ = runs["load"]
    assert {"interrupted", "cut", "schedule", "config"} <= set(printed)
    assert set(printed["config"]["load"]) >= {"duration", "input_len", "output_len", "trace", "turns"}
    assert "max_tokens_cap" in printed["config"]
    for name, lane in printed["lanes"].items():
        assert {"offered_rate_rps", "client_behind", "lane_behind", "slo_held"} <= set(lane)
        for rep in lane["reps"]:
            assert {"completed_rate_reason", "error", "refused_error", "ttft_early_s", "input_tokens_asked_p50",
                    "workers_lost", "slo"} <= set(rep)
            assert set(ENERGY_KEYS) <= set(rep), (name, sorted(set(ENERGY_KEYS) - set(rep)))
            assert all(k in rep["ttft_s"] for k in ("p50", "p90", "p99", "n", "max"))
    assert printed["lanes"]["B"]["reps"][0]["usd_per_1m_output_tokens"] is None  # no cost for B: null, said


def test_sweep_json_keeps_the_keys_it_prints_as_null(runs):
    printed, _ = runs["sweep"]
    assert {"interrupted", "cut", "crossover", "knee_gain", "slo", "config"} <= set(printed)
    for lane in printed["lanes"].values():
        assert {"knee", "slo_holds_to", "rests_on", "max_aggregate_tok_s", "knee_reliable", "slo_held"} <= set(lane)
        for cell in lane["levels"].values():
            assert {"error", "reasoning_tokens", *ENERGY_KEYS} <= set(cell)


def test_a_reps_end_mark_is_read_as_untrusted():
    """A recording's end mark is bytes from outside: counts that are not integers count nothing, a lost host keeps
    only the keys the contract names (clipped), at most 64 of them; what is left encodes into the contract."""
    from lanemon.results.load import LostWorker
    from lanemon.workloads.bench.load import end_mark_figures

    lost = [{"node": "n" * 500, "host": "load-b", "why": "died", "extra": "x"}, "not a host", {"host": None}] + [
        {"host": f"h{i}"} for i in range(100)]
    got = end_mark_figures({"refused": True, "not_sent": "3", "refused_error": "e" * 1000, "workers_lost": lost})
    assert got["refused"] == 0 and got["not_sent"] == 0  # a bool and a string are no counts
    assert got["refused_error"] == "e" * 300
    ws = got["workers_lost"]
    assert len(ws) == 64 and ws[0] == LostWorker(node="n" * 200, host="load-b", why="died")
    assert ws[1] == LostWorker()  # no key it names: kept as a host lost, said with nothing
    assert end_mark_figures({"workers_lost": {"host": "x"}})["workers_lost"] == []  # not a list: none
    assert end_mark_figures({}) == {"refused": 0, "refused_error": None, "not_sent": 0, "workers_lost": []}
