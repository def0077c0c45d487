"""lanemon's client measures the simulator's ground truth (``/sim/trace``) correctly.

Both lanes run as real subprocesses on loopback at time_scale 0.5 (2x faster).
Every timing expectation is against the simulator's own trace of the same
request, with an allowance for what lanemon measured about itself while the
request ran (``client_load`` events: loop lag and run-queue wait), so the
tests hold on a busy machine (four CPU hogs beside them).  The absolute
accuracy on an idle machine (TTFT within a few ms, decode within a few
percent) is measured by ``bench/accuracy.py``; the write-up's figures are
checked against the simulator's model, which does not depend on timing.
"""

from __future__ import annotations

import asyncio

import pytest

from conftest import sim_pair
from lanemon.client.http import LaneClient
from lanemon.client.loadwatch import LoadWatch
from lanemon.config import LaneConfig
from lanemon.events import Clock
from lanemon.measure.load import client_load
from lanemon.measure.metrics import NS, median, request_metrics

SCALE = 0.5
SIM_STAMP_SLACK = 0.02
"""How late the simulator may stamp its own trace when it is descheduled (CPU hogs): lanemon cannot see the
simulator's stalls, only its own.  The idle-machine accuracy (about 1 ms) is bench/accuracy.py's to measure."""
PROMPTS = [
    "Write a Python function that reverses a linked list.",
    "Write a Python function that parses an ISO date.",
    "Implement binary search in Python.",
    "Write a Python function that counts words in a file.",
    "Write a Python class for an LRU cache.",
]


async def measure(url: str, n_tokens: int = 64):
    clock, events = Clock(), []
    client = LaneClient(LaneConfig("X", url), clock=clock, emit=lambda ev: None)
    watch = LoadWatch(clock, events.append)
    watch.start()
    out = []
    try:
        await client.probe_models()
        # warm-up: the first stream on a fresh client pays one-off costs that are not the lane's
        await client.stream("chat", client.build_body("chat", prompt="warm up", max_tokens=4))
        for prompt in PROMPTS:
            body = client.build_body("chat", prompt=prompt, max_tokens=n_tokens, extra={"temperature": 0})
            out.append(await client.stream("chat", body))
        await asyncio.sleep(0.6)  # one more load window, so the last request is covered
    finally:
        await watch.stop()
        await client.aclose()
    return out, client_load(events)


@pytest.fixture(scope="module")
def measured():
    with sim_pair(SCALE) as (a, b):
        results = {}
        for name, sim in (("A", a), ("B", b)):
            sim.clear_trace()
            recs, load = asyncio.run(measure(sim.url))
            trace = {t["id"]: t for t in sim.trace()}
            results[name] = (recs, [trace[r.server_request_id] for r in recs], load)
        yield results


@pytest.mark.parametrize("lane", ["A", "B"])
def test_ttft_matches_ground_truth(measured, lane):
    recs, trace, load = measured[lane]
    assert len(trace) == len(recs) == len(PROMPTS) and load.windows >= 2
    for rec, tr in zip(recs, trace):
        m = request_metrics(rec)
        assert rec.ok and m.output_tokens == tr["completion_tokens"] and not m.tokens_estimated
        gap, end_gap = m.ttft_s - tr["ttft_s"], m.e2e_s - tr["e2e_s"]
        stall = load.worst_stall_s(rec.sent_ns, rec.end_ns)
        # never less than the server's own figure (the client's TTFT also holds loopback and the server's
        # parsing, which it cannot see)...
        # (the simulator stamps its trace right after the write: descheduled there, it stamps a few ms late)
        assert gap >= -SIM_STAMP_SLACK, (gap, tr)
        # ...and that sending part is in the end-to-end gap too: the two gaps differ only by how late lanemon
        # read the first chunk against the last, within the stalls it measured in itself (1 ms on an idle box)
        assert abs(gap - end_gap) <= 0.003 + SIM_STAMP_SLACK + 2 * stall, (gap, end_gap, stall)


@pytest.mark.parametrize("lane", ["A", "B"])
def test_decode_rate_matches_ground_truth(measured, lane):
    recs, trace, load = measured[lane]
    for rec, tr in zip(recs, trace):
        times = tr["token_times_s"]
        truth = times[-1] - times[0]
        got = (rec.token_ns[-1] - rec.token_ns[0]) / NS
        stall = load.worst_stall_s(rec.sent_ns, rec.end_ns)
        # the first and the last chunk may each be read up to one measured stall late
        assert abs(got - truth) <= 0.04 * truth + 0.001 + SIM_STAMP_SLACK + 2 * stall, (got, truth, stall)
        if stall < 0.002:  # lanemon was not held up: the rate itself within a few percent
            m = request_metrics(rec)
            assert m.decode_tok_s == pytest.approx((len(times) - 1) / truth, rel=0.04)


def test_c1_ttft_ratio_and_rates_of_the_model_match_the_writeup(measured):
    """The simulator's model (timing-free: its scheduled TTFT, its profile's rates) is the write-up's, and
    lanemon's C1 medians are the trace's medians within the stalls it measured."""
    from lanemon.sim import engine
    from lanemon.sim.profiles import PROFILES

    model = {lane: median([t["model_ttft_s"] for t in measured[lane][1]]) / SCALE for lane in ("A", "B")}
    assert model["A"] == pytest.approx(0.17, abs=0.02)
    assert model["B"] == pytest.approx(0.22, abs=0.02)
    assert model["B"] / model["A"] == pytest.approx(0.22 / 0.17, rel=0.1)
    assert engine.per_stream_rate(PROFILES["tensorfold-exl3"], "coding", 1) == 148
    assert engine.per_stream_rate(PROFILES["sglang-native"], "coding", 1) == 134
    for lane in ("A", "B"):
        recs, trace, load = measured[lane]
        worst = max(load.worst_stall_s(r.sent_ns, r.end_ns) for r in recs)
        ours = median([request_metrics(r).ttft_s for r in recs])
        theirs = median([t["ttft_s"] for t in trace])
        ends = median([request_metrics(r).e2e_s - t["e2e_s"] for r, t in zip(recs, trace)])
        assert ours - theirs >= -SIM_STAMP_SLACK
        assert abs((ours - theirs) - ends) <= 0.003 + SIM_STAMP_SLACK + 2 * worst
