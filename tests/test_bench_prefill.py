"""Prefill ladder against the simulated lanes: Figure 4 recovered, prefix-cache hits labelled apart.

Rates measured at --time-scale X are scaled back to real time (x X).
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from conftest import sim_pair

from lanemon.config import LaneConfig
from lanemon.workloads.bench.run import UNSTABLE_SPREAD, BenchOptions, BenchRun

LADDER = [2000, 8000, 32000, 64000, 131072]


def run_bench(kind, sims, **kw):
    run = BenchRun(kind, [LaneConfig("A", sims[0].url), LaneConfig("B", sims[1].url)], BenchOptions(**kw))
    asyncio.run(run.run())
    return run.results()


def _truth_by_length(trace: list[dict], lengths: list[int]) -> dict[int, dict]:
    """For each asked length, the simulator's own record of the request whose prompt came closest to it."""
    done = [r for r in trace if r.get("status") == "ok" and r.get("prompt_tokens") and r.get("ttft_s")]
    return {n: min(done, key=lambda r: abs(r["prompt_tokens"] - n)) for n in lengths}


SHORT, SHORT_SCALE = [2000, 8000], 0.25
LONG = [32000, 64000, 131072]
"""The ladder in two runs, each at the speed-up its lengths allow.  A few ms of client and loopback overhead per
request would squeeze the 2K figures at high speed-ups (B's 2K TTFT is 0.57 s at real time); at 4x the overhead
stays within about 2 %.  From 32K on a TTFT is over 12 s at real time: the session's 20x lanes (``fast_sims``,
their prefix cache and trace cleared first) keep the overhead as small, and the 131K prompt takes 2.7 s instead
of 13.6 s (measured: the whole ladder at 4x 27.6 s; 2K-8K at 4x 6.0 s + 32K-131K at 20x 6.7 s)."""
assert SHORT + LONG == LADDER


def cleared(sim) -> float:
    """A shared simulated lane as if new, and its time scale: idle (a request an earlier test left running would
    share its prefill), no trace (the truth is looked up by prompt length), no prefix cache (a cold prefill must
    not be another test's cached prompt)."""
    deadline = time.monotonic() + 60
    while (info := httpx.get(sim.base + "/sim/info", timeout=30).json())["active"]:
        assert time.monotonic() < deadline, f"the shared simulated lane is still busy: {info}"
        time.sleep(0.05)
    sim.clear_trace()
    httpx.delete(sim.base + "/sim/cache", timeout=30).raise_for_status()
    return info["time_scale"]


@pytest.mark.slow
def test_cold_prefill_ladder_ratios_and_131k(fast_sims):
    """The model's figures are judged on the simulators' own trace (so a busy machine cannot move them);
    lanemon's figures are judged against that trace: never faster than the server, and close to it."""
    with sim_pair(SHORT_SCALE) as sims:
        res = run_bench("prefill", sims, lengths=SHORT, parallel_lanes=True, cache_check=False, seed=7)
        truth = {name: _truth_by_length(sim.trace(), SHORT) for name, sim in zip("AB", sims)}
    check_cold_ladder(res, truth, SHORT, SHORT_SCALE)
    assert res.config.lengths == SHORT and res.config.cache_check is False
    scale, scale_b = (cleared(sim) for sim in fast_sims)
    assert scale == scale_b == 0.05
    res = run_bench("prefill", fast_sims, lengths=LONG, parallel_lanes=True, cache_check=False, seed=7)
    truth = {name: _truth_by_length(sim.trace(), LONG) for name, sim in zip("AB", fast_sims)}
    check_cold_ladder(res, truth, LONG, scale)
    assert res.config.lengths == LONG and res.config.cache_check is False
    tb = truth["B"][131072]
    assert tb["prompt_tokens"] / tb["ttft_s"] * scale == pytest.approx(4600, rel=0.08)


def check_cold_ladder(res, truth, lengths, scale) -> None:
    a, b = res.lanes["A"].lengths, res.lanes["B"].lengths
    for length in lengths:
        ca, cb = a[str(length)], b[str(length)]
        ta, tb = truth["A"][length], truth["B"][length]
        # calibrated against the lane's own usage count: within 3 % of the asked length, as the server counted
        assert ca.prompt_tokens == pytest.approx(length, rel=0.03) and ca.prompt_tokens == ta["prompt_tokens"]
        assert cb.prompt_tokens == pytest.approx(length, rel=0.03) and cb.prompt_tokens == tb["prompt_tokens"]
        true_a, true_b = ta["prompt_tokens"] / ta["ttft_s"], tb["prompt_tokens"] / tb["ttft_s"]
        assert 2300 <= true_a * scale <= 2750, (length, ta)  # the model: A flat 2.4-2.7K
        assert 1.3 <= true_b / true_a <= 2.0, (length, true_b / true_a)
        for measured, cell, true in ((ca, ca, true_a), (cb, cb, true_b)):
            # lanemon's TTFT holds all of the server's (send before arrival) plus loopback and client time:
            # never a faster prefill than the server's, and within 100 ms + 10 % of its TTFT on a busy machine
            ttft_true = cell.prompt_tokens / true
            assert measured.prefill_tok_s <= true * 1.001, (length, measured, true)
            assert cell.prompt_tokens / measured.prefill_tok_s <= ttft_true * 1.1 + 0.1, (length, measured, true)
        ratio = cb.prefill_tok_s / ca.prefill_tok_s
        assert res.ratios.by_length[str(length)] == pytest.approx(ratio, abs=0.001)
        assert ca.errors == cb.errors == 0 and ca.cache_hit_tok_s is None


def _cold_and_hit(trace: list[dict], n: int) -> tuple[dict, dict]:
    """B's own record of the cold prefill of an *n*-token prompt and of its repeat served from the prefix cache."""
    done = [r for r in trace if r.get("status") == "ok" and r.get("ttft_s")
            and r.get("prompt_tokens", 0) == pytest.approx(n, rel=0.03)]
    cold = [r for r in done if r.get("cached_tokens", 0) < r["prompt_tokens"] * 0.5]
    hit = [r for r in done if r.get("cached_tokens", 0) >= r["prompt_tokens"] * 0.97 - 1]
    assert cold and hit, (n, done)
    return cold[0], hit[-1]


OVERHEAD_S = 0.02
"""What an unstarved client adds to a TTFT on loopback (a few ms): above it lanemon was starved, its figures
are then held to the cold ladder's bound (100 ms + 10 %) and its cache-hit ratio is not judged."""


def test_repeat_on_b_is_a_prefix_cache_hit_never_prefill():
    """The model's figures are judged on the simulator's own trace (a busy machine cannot move them); lanemon's
    against that trace: the repeat labelled a cache hit, never a faster figure than the server's, and its
    cache-hit figure over 2x its cold prefill whenever lanemon added no more than an unstarved client's overhead
    (B's cache hit at 2,950 tokens is 47 ms at 5x: under heavy load lanemon's own ratio fell under 2)."""
    scale = 0.2  # B's cold 2,950-token TTFT is 0.16 s at 5x: a few ms of overhead stay within the tolerance
    with sim_pair(scale) as sims:
        res = run_bench("prefill", sims, lengths=[2950, 32000], parallel_lanes=True, seed=3)
        trace_b = sims[1].trace()
    a, b = res.lanes["A"].lengths, res.lanes["B"].lengths
    for n in ("2950", "32000"):
        assert a[n].cache_hit_tok_s is None and a[n].repeat_tok_s is not None  # TensorFold: no prefix cache
        assert b[n].cache_hit_tok_s is not None and b[n].repeat_cached_tokens >= int(n) * 0.97 - 1
        cold, hit = _cold_and_hit(trace_b, int(n))
        true_cold, true_hit = cold["prompt_tokens"] / cold["ttft_s"], hit["prompt_tokens"] / hit["ttft_s"]
        assert true_hit > 2 * true_cold, (n, cold, hit)  # the model: a cached prompt is no prefill
        slack = []
        for measured, true in ((b[n].prefill_tok_s, true_cold), (b[n].cache_hit_tok_s, true_hit)):
            # lanemon's TTFT holds the server's: never a faster figure, and within the cold ladder's bound
            assert measured <= true * 1.001, (n, measured, true)
            ttft, ttft_true = b[n].prompt_tokens / measured, b[n].prompt_tokens / true
            assert ttft <= ttft_true * 1.1 + 0.1, (n, measured, true)
            slack.append(ttft - ttft_true)
        if max(slack) <= OVERHEAD_S:
            assert b[n].cache_hit_tok_s > 2 * b[n].prefill_tok_s, (n, b[n], slack)
    # B's cold first run at 2,950 tokens prefills at 3,654 tok/s and a cached 32K prompt at 12,542 tok/s, on the
    # server's clock; lanemon's cold figure is never the cached repeat's (it is no faster than the cold request's)
    cold, _ = _cold_and_hit(trace_b, 2950)
    assert cold["prompt_tokens"] / cold["ttft_s"] * scale == pytest.approx(3654, rel=0.12)
    _, hit = _cold_and_hit(trace_b, 32000)
    assert hit["prompt_tokens"] / hit["ttft_s"] * scale == pytest.approx(12542, rel=0.10)


def test_reps_keep_every_value(fast_sims):
    """Every rep's value is kept, each against the simulator's own record of that request, and ``unstable`` says
    whether lanemon's figures spread (its rule).  At 20x speed a 4K prefill is ~80 ms, so a busy machine (or the
    simulator's own first request of a length, ~10 ms slower in its trace) can make them spread: the flag is
    judged against its rule, never assumed false."""
    for sim in fast_sims:
        sim.clear_trace()
    res = run_bench("prefill", fast_sims, lengths=[4000], reps=3, cache_check=False, parallel_lanes=True)
    for lane, sim in zip(("A", "B"), fast_sims):
        c = res.lanes[lane].lengths["4000"]
        assert len(c.reps) == 3 and None not in c.reps and c.min <= c.median <= c.max
        assert c.unstable == ((c.max - c.min) / c.median > UNSTABLE_SPREAD)
        true = [r["prompt_tokens"] / r["ttft_s"] for r in sim.trace()
                if r.get("status") == "ok" and r.get("ttft_s") and abs(r.get("prompt_tokens", 0) - 4000) < 200]
        assert len(true) == 3, true  # the three reps, as the server counted them (the calibration is shorter)
        for rep, (measured, server) in enumerate(zip(c.reps, true)):
            # lanemon's TTFT holds the server's: never a faster prefill than the server's own for that request
            # (within 2 %: lanemon counts the prompt from usage, the trace at arrival)
            assert measured <= server * 1.02, (lane, rep, c.reps, true)


def test_a_lane_whose_usage_no_tokenizer_gives_keeps_the_estimate_and_bounded_prompts():
    """A lane that says 5 prompt tokens whatever it is sent (tests/hostile_server.py) made the calibrated ratio
    5/8,000 tokens per character: a 2,000-token cell was sent as 3.2 million characters."""
    from hostile_server import HostileLane, HostileServer

    lane = HostileLane("s", unauthorized_every=0, stream_error_every=0, escapes=False, echo_in_tokens=False)
    with HostileServer(lane) as srv:
        run = BenchRun("prefill", [LaneConfig("A", f"http://127.0.0.1:{srv.port}/v1")],
                       BenchOptions(lengths=[2000], cache_check=False, max_context=8192))
        asyncio.run(run.run())
        sent = [len(r.body) for r in srv.requests if r.path.endswith("/completions")]
    ends = [e.data for e in run.events if e.data.get("part") == "calibrate" and e.data.get("phase") == "end"]
    assert ends and ends[0]["tokens_per_char"] is None and "not a possible ratio" in ends[0]["warning"], ends
    assert sent and max(sent) < 40_000, sent  # 2,000 tokens at the typical 4 characters each, not megabytes
