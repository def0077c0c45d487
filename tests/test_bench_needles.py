"""Needles against the simulated lanes: found everywhere; a wrong key is "not found"; errors are errors."""

from __future__ import annotations

import asyncio

from conftest import SimProcess

from lanemon.config import LaneConfig
from lanemon.workloads.bench.run import BenchOptions, BenchRun


def run_needles(lanes, **kw):
    run = BenchRun("needles", lanes, BenchOptions(**kw))
    asyncio.run(run.run())
    return run.results()


def test_needles_found_at_every_length_on_both_lanes(fast_sims):
    lengths = [20000, 131072, 300000]
    res = run_needles([LaneConfig("A", fast_sims[0].url), LaneConfig("B", fast_sims[1].url)], lengths=lengths,
                      parallel_lanes=True)
    for lane in ("A", "B"):
        for n in lengths:
            c = res.lanes[lane].lengths[str(n)]
            assert c.found is True, (lane, n, c)
            assert c.error is None and len(c.key) == 8 and c.key in c.answer
            assert 0.05 <= c.depth <= 0.95
            assert abs(c.prompt_tokens - n) / n < 0.03
            assert c.ttft_s > 0 and c.prefill_tok_s > 0
    # the keys differ from run to run and lane to lane
    keys = {res.lanes[lane].lengths[str(n)].key for lane in ("A", "B") for n in lengths}
    assert len(keys) == 6


def test_wrong_key_is_not_found_and_context_errors_are_errors():
    sim = SimProcess("sglang-native", 0.05, extra=("--needle-miss", "--context-len", "40000"))
    try:
        res = run_needles([LaneConfig("B", sim.url)], lengths=[20000, 60000])
    finally:
        sim.stop()
    miss = res.lanes["B"].lengths["20000"]
    assert miss.found is False and miss.error is None
    assert miss.key not in miss.answer and "pass key is" in miss.answer
    too_long = res.lanes["B"].lengths["60000"]
    assert too_long.found is None  # reported as an error, never as "not found"
    # the lane's /v1/models says max_model_len 40000: the 60K prompt is not sent, and the cell says why
    assert too_long.skipped is True and too_long.runs_count == 0
    assert "beyond the lane's context (40000 tokens, from /v1/models)" in too_long.error
    assert res.lanes["B"].error == too_long.error
