"""Run-scoped engine counters (measure/counters.py, docs/GPU.md): differences of /metrics between a run's edges,
summed over data-parallel ranks and split by rank; checked on a two-rank vLLM exposition, on the simulator
(whose counters are its own truth) and, where it is installed, on real vLLM (tests/test_real_vllm.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec import to_builtins

from lanemon import events as schema
from lanemon.client.prom import map_engine, parse
from lanemon.events import Event
from lanemon.measure.counters import increase, run_counters, sum_counters, window_counters, scrapes
from lanemon.results.common import to_json_obj

FIXTURES = Path(__file__).parent / "fixtures"
NS = 1_000_000_000


def mapped(name: str) -> dict:
    """A fixture's scrape as a recording holds it."""
    return to_builtins(map_engine(parse((FIXTURES / name).read_text())))


def test_two_ranks_sum_and_split():
    before, after = mapped("vllm_dp2_before.prom"), mapped("vllm_dp2_after.prom")
    assert before["generation_tokens_total"] == 1900 and set(before["by_engine"]) == {"0", "1"}
    c = to_json_obj(run_counters(before, after))  # the block as a cell's JSON carries it
    assert c["generation_tokens"] == 800 and c["prompt_tokens"] == 1600
    assert c["prefix_queries"] == 1600 and c["prefix_hits"] == 600 and c["prefix_hit_rate"] == 0.375
    assert c["preemptions"] == 1 and c["requests"] == 8 and c["requests_by_finish"] == {"stop": 6, "length": 2}
    assert c["spec_drafts"] == 300 and c["spec_draft_tokens"] == 900 and c["spec_accepted_tokens"] == 550
    assert c["spec_acceptance_rate"] == pytest.approx(550 / 900, abs=1e-4)
    assert c["spec_mean_accepted"] == pytest.approx(550 / 300, abs=1e-3)
    assert c["ranks"]["0"]["generation_tokens"] == 600 and c["ranks"]["1"]["generation_tokens"] == 200
    assert c["ranks"]["0"]["prefix_hits"] == 600 and c["ranks"]["1"]["prefix_hits"] == 0
    assert c["rank_imbalance"] == 1.5  # max 600 / mean 400
    assert c["lora_adapters"] == ["sql-lora", "chat-lora"]  # the newest lora_requests_info series


def test_a_reading_that_ignored_the_engine_label_would_be_wrong():
    # what a last-series-wins reader would take for the run: rank 1 only
    text_b = (FIXTURES / "vllm_dp2_before.prom").read_text()
    text_a = (FIXTURES / "vllm_dp2_after.prom").read_text()
    last = lambda t: [v for labels, v in parse(t)["vllm:generation_tokens_total"]][-1]
    assert last(text_a) - last(text_b) == 200 != run_counters(to_builtins(map_engine(parse(text_b))),
                                                                to_builtins(map_engine(parse(text_a)))).generation_tokens


def test_a_counter_reset_counts_the_new_value():
    assert increase(100, 130) == 30
    assert increase(100, 20) == 20  # the server restarted between the scrapes
    assert increase(None, 5) == 5 and increase(5, None) is None
    assert increase(float("nan"), 7) == 7 and increase(3, float("inf")) is None


def sm(t_s: float, **data) -> Event:
    return Event(int(t_s * NS), schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", **data})


def test_the_window_takes_the_scrapes_either_side_and_reps_add_up():
    evs = [sm(0, generation_tokens_total=10), sm(1, generation_tokens_total=50), sm(2, generation_tokens_total=90),
           sm(3, generation_tokens_total=95), Event(int(2.5 * NS), schema.SERVER_METRICS, "A", None, {"ok": False})]
    scr = scrapes(evs, "A")
    w = window_counters(scr, int(1.0 * NS), int(2.0 * NS))
    assert w.generation_tokens == 40 and w.between_s == 1.0
    assert window_counters(scr, int(1.5 * NS), int(3.5 * NS)) is None  # nothing after the end
    both = sum_counters([w, window_counters(scr, int(2 * NS), int(3 * NS))])
    assert both.generation_tokens == 45


def test_bench_cells_carry_the_simulators_counters():
    """Lane A of the demo speaks vLLM's names: each cell's counters are exactly its requests and tokens."""
    out = subprocess.run([sys.executable, "-m", "lanemon", "bench", "decode", "--demo", "--time-scale", "0.05",
                          "--levels", "1,3", "--categories", "coding,prose", "--max-tokens", "16", "--no-categories",
                          "--json", "--no-record", "--lanes", "A"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    levels = json.loads(out.stdout)["lanes"]["A"]["levels"]
    for level, cell in levels.items():
        c = cell["engine_counters"]
        assert c is not None, (level, cell)
        assert c["engine"] == "vllm" and c["requests"] == cell["requests"]
        assert c["generation_tokens"] == cell["output_tokens"]
        assert c["requests_by_finish"] == {"length": cell["requests"]}
        assert c["preemptions"] == 0 and "ranks" not in c


def test_session_counters_cover_the_whole_recording_and_the_report_says_them():
    from lanemon.measure.counters import session_counters
    from lanemon.reports.sections.environment import session_text

    before, after = mapped("vllm_dp2_before.prom"), mapped("vllm_dp2_after.prom")
    evs = [Event(NS, schema.SERVER_METRICS, "A", None, {"ok": True, **before}),
           Event(5 * NS, schema.SERVER_METRICS, "A", None, {"ok": False}),
           Event(31 * NS, schema.SERVER_METRICS, "A", None, {"ok": True, **after}),
           Event(2 * NS, schema.SERVER_METRICS, "B", None, {"ok": True, **after})]
    s = session_counters(evs)
    assert set(s) == {"A"} and s["A"].generation_tokens == 800 and s["A"].between_s == 30.0
    assert session_text(s["A"]) == ("over 30 s: 8 requests; 800 generated tokens; prefix cache hit 38%; "
                                    "1 preemptions; spec decode accepted 61% of draft tokens; "
                                    "2 ranks, max/mean 1.50; LoRA sql-lora, chat-lora")


@pytest.mark.parametrize("kind", ["prefill", "needles"])
def test_prefill_and_needle_cells_carry_their_own_counters(kind):
    """A prefill or needle cell is one or two requests: its edges are read before its start and after its end
    (as decode's and load's), so its counters are exactly its own requests and prompt tokens, never null
    for want of a scrape between two quick cells."""
    out = subprocess.run([sys.executable, "-m", "lanemon", "bench", kind, "--demo", "--time-scale", "0.05",
                          "--lengths", "2000,4000", "--reps", "2", "--json", "--no-record", "--lanes", "A"]
                         + (["--no-cache-check"] if kind == "prefill" else []),
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    lengths = json.loads(out.stdout)["lanes"]["A"]["lengths"]
    assert set(lengths) == {"2000", "4000"}
    for length, cell in lengths.items():
        c = cell["engine_counters"]
        assert c is not None, (length, cell)
        assert c["requests"] == 2, (length, c)  # the two reps, nothing of the calibration or the other length
        assert c["prompt_tokens"] >= 2 * int(length) * 0.97, (length, c)
