"""Unit tests for the pure measurement code (metrics + timeline fold)."""

import math

import pytest

from lanemon.measure import metrics
from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.records import Assembler, assemble

MS = 1_000_000


def request_events(req="A-1", lane="A", sent=0, first_byte=5 * MS, tokens=(), usage=None, end=None, error=None,
                   reasoning=()):
    evs = [Event(sent, schema.REQUEST, lane, req, {"endpoint": "chat", "purpose": "probe"}),
           Event(first_byte, schema.FIRST_BYTE, lane, req, {"status": 200})]
    for t in reasoning:
        evs.append(Event(t, schema.TOKEN, lane, req, {"text": "hm", "reasoning": True}))
    for t in tokens:
        evs.append(Event(t, schema.TOKEN, lane, req, {"text": "x"}))
    if usage:
        evs.append(Event(evs[-1].t, schema.USAGE, lane, req, usage))
    if error:
        evs.append(Event(end, schema.ERROR, lane, req, error))
    else:
        evs.append(Event(end if end is not None else evs[-1].t, schema.DONE, lane, req, {"finish_reason": "stop"}))
    return evs


def test_ttft_is_first_token_not_first_byte():
    rec = assemble(request_events(tokens=[170 * MS, 180 * MS, 190 * MS], end=190 * MS))[0]
    m = metrics.request_metrics(rec)
    assert m.first_byte_s == pytest.approx(0.005)
    assert m.ttft_s == pytest.approx(0.170)
    assert m.itl_s == pytest.approx((0.010, 0.010))


def test_decode_rate_and_tpot_follow_the_definitions():
    # 11 tokens, first at 200 ms, then every 10 ms -> E2E 300 ms
    times = [200 * MS + i * 10 * MS for i in range(11)]
    rec = assemble(request_events(tokens=times, usage={"prompt_tokens": 50, "completion_tokens": 11}, end=times[-1]))[0]
    m = metrics.request_metrics(rec)
    assert m.output_tokens == 11 and not m.tokens_estimated
    assert m.e2e_s == pytest.approx(0.300)
    assert m.tpot_s == pytest.approx((0.300 - 0.200) / 10)
    assert m.decode_tok_s == pytest.approx(10 / 0.100)
    assert m.prefill_tok_s == pytest.approx(50 / 0.200)


def test_usage_beats_chunk_count_and_missing_usage_is_marked_estimated():
    times = [100 * MS, 110 * MS, 120 * MS]
    with_usage = assemble(request_events(tokens=times, usage={"completion_tokens": 9}))[0]
    without = assemble(request_events(tokens=times))[0]
    m1, m2 = metrics.request_metrics(with_usage), metrics.request_metrics(without)
    assert (m1.output_tokens, m1.tokens_estimated) == (9, False)
    assert (m2.output_tokens, m2.tokens_estimated) == (3, True)
    # with 9 tokens over the same 20 ms the decode rate is 8/0.02, not 2/0.02
    assert m1.decode_tok_s == pytest.approx(8 / 0.020)
    assert m2.decode_tok_s == pytest.approx(2 / 0.020)


def test_reasoning_tokens_are_kept_apart_and_ttfo_differs():
    rec = assemble(request_events(reasoning=[100 * MS, 110 * MS], tokens=[300 * MS, 310 * MS],
                                  usage={"completion_tokens": 4, "reasoning_tokens": 2}))[0]
    m = metrics.request_metrics(rec)
    assert m.ttft_s == pytest.approx(0.100)
    assert m.ttfo_s == pytest.approx(0.300)
    assert m.output_tokens == 2 and m.reasoning_tokens == 2


def test_errors_have_no_rates():
    rec = assemble(request_events(tokens=[100 * MS], error={"cls": "cut", "message": "x"}, end=150 * MS))[0]
    m = metrics.request_metrics(rec)
    assert not m.ok and m.error_cls == "cut"
    assert m.decode_tok_s is None and m.tpot_s is None


def test_percentile_matches_numpy_linear():
    xs = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert metrics.percentile(xs, 50) == 3.0
    assert metrics.percentile(xs, 90) == pytest.approx(4 + 0.6 * 6)  # numpy.percentile(xs, 90) = 7.6
    assert metrics.percentile(xs, 0) == 1.0 and metrics.percentile(xs, 100) == 10.0
    assert metrics.percentile([], 50) is None
    with pytest.raises(ValueError):
        metrics.percentile(xs, 101)


def test_summarize_ignores_missing_values():
    s = metrics.summarize([1.0, None, 3.0])
    assert (s.n, s.mean, s.p50, s.min, s.max) == (2, 2.0, 2.0, 1.0, 3.0)
    assert metrics.summarize([None]).n == 0


def test_aggregate_tok_s_is_total_tokens_over_wall_time():
    a = assemble(request_events("A-1", sent=0, tokens=[100 * MS, 500 * MS], usage={"completion_tokens": 40}))
    b = assemble(request_events("A-2", sent=100 * MS, tokens=[200 * MS, 1000 * MS], usage={"completion_tokens": 60}))
    failed = assemble(request_events("A-3", sent=0, tokens=[100 * MS], error={"cls": "http"}, end=2000 * MS))
    assert metrics.aggregate_tok_s(a + b + failed) == pytest.approx(100 / 1.0)
    assert metrics.aggregate_tok_s(failed) is None


def test_assembler_keeps_requests_apart_and_returns_on_finish():
    asm = Assembler()
    e1 = request_events("A-1", tokens=[10 * MS])
    e2 = request_events("B-1", lane="B", tokens=[20 * MS, 30 * MS])
    finished = []
    for ev in sorted(e1 + e2, key=lambda e: e.t):
        rec = asm.apply(ev)
        if rec:
            finished.append(rec)
    assert {r.req: len(r.token_ns) for r in finished} == {"A-1": 1, "B-1": 2}
    assert not asm.open
    assert math.isclose(finished[0].token_ns[0], 10 * MS) or math.isclose(finished[1].token_ns[0], 10 * MS)


def test_dashboard_state_does_not_count_lanemons_own_cancellations():
    from lanemon.folds.dashboard import SessionState

    st = SessionState([("A", "http://x/v1", None)])
    for ev in request_events("A-1", tokens=[100 * MS], error={"cls": "cancelled", "message": "cancelled"}, end=150 * MS):
        st.apply(ev)
    for ev in request_events("A-2", tokens=[100 * MS], error={"cls": "cut", "message": "cut"}, end=150 * MS):
        st.apply(ev)
    lane = st.lanes["A"]
    # a stream cut after a token is truncated: counted apart from errors, listed with the errors
    assert lane.requests_err == 0 and lane.requests_truncated == 1 and [e[1] for e in lane.errors] == ["truncated"]
    for ev in request_events("A-3", tokens=[], error={"cls": "cut", "message": "cut"}, end=150 * MS):
        st.apply(ev)
    assert lane.requests_err == 1 and [e[1] for e in lane.errors] == ["truncated", "cut"]
    assert lane.in_flight == 0


def test_an_impossible_per_stream_rate_is_a_burst_not_a_figure():
    """100 chunks read 60 us apart (16,000 tok/s) pass the mean-gap burst rule but no lane decodes that fast."""
    from lanemon.measure.metrics import MAX_STREAM_TOK_S, request_metrics
    from lanemon.measure.records import BURST, RequestRecord

    rec = RequestRecord(lane="A", req="r1")
    rec.sent_ns = 0
    rec.token_ns = [300_000_000 + i * 62_000 for i in range(100)]
    rec.end_ns = rec.token_ns[-1] + 1000
    rec.finish_reason = "stop"
    rec.completion_tokens = 100
    m = request_metrics(rec)
    assert BURST in m.flags and m.decode_tok_s is None and m.tpot_s is None
    assert m.ttft_s == 0.3  # the first token's time stands
    # a fast but possible stream (2,000 tok/s) keeps its figure
    rec.token_ns = [300_000_000 + i * 500_000 for i in range(100)]
    rec.end_ns = rec.token_ns[-1] + 1000
    m = request_metrics(rec)
    assert BURST not in m.flags and 1_900 < m.decode_tok_s < 2_100 < MAX_STREAM_TOK_S


def test_a_bench_cell_counts_an_impossible_rate_as_a_burst():
    """A cell's ``bursts`` counts every complete request whose rate was withheld as a burst: the read-in-one-go
    rule (mean gap < 50 us) and the impossible-rate rule (over MAX_STREAM_TOK_S) alike -- else a cell shows no
    per-stream rate and no reason for it (seen beside four CPU hogs: 12 tokens read 60-90 us apart)."""
    from lanemon.measure.metrics import request_metrics
    from lanemon.measure.records import RequestRecord
    from lanemon.workloads.bench.run import outcome_figures

    def rec(req, gap_ns):
        r = RequestRecord(lane="slowhdr", req=req)
        r.sent_ns = 0
        r.token_ns = [250_000_000 + i * gap_ns for i in range(12)]
        r.end_ns = r.token_ns[-1] + 1000
        r.finish_reason, r.completion_tokens = "stop", 12
        return r

    fast, paced, lumped = rec("r1", 70_000), rec("r2", 20_000_000), rec("r3", 10_000)
    assert not fast.burst and request_metrics(fast).decode_tok_s is None  # between the two rules
    assert request_metrics(paced).decode_tok_s and lumped.burst
    assert outcome_figures([fast, paced, lumped]).bursts == 2
    assert outcome_figures([paced]).bursts == 0
