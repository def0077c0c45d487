"""One outcome per request, checked usage, timing that ends at the last token (issue 16).

Every case is played by a scripted server written for these tests (tests/scripted_server.py): a real HTTP
server on loopback that writes the bytes a misbehaving lane writes.  Each test asserts the outcome class
and that no speed figure comes out of a request that is not a clean completion -- per request
(``request_metrics``), on the dashboard (``SessionState``) and in a race.
"""

from __future__ import annotations

import asyncio

import pytest

from lanemon import events as schema
from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import Clock, Event
from lanemon.folds.dashboard import SessionState
from lanemon.measure import metrics
from lanemon.measure.records import BURST, COMPLETE, EMPTY, ERROR, TRUNCATED, assemble, outcome_counts
from scripted_server import DONE, ScriptedServer, finish, sse, sse_head, tok, usage

CHAT = "/v1/chat/completions"
NS = 1_000_000_000


async def _run(url, body_extra=None, n=1):
    events: list[Event] = []
    client = LaneClient(LaneConfig("X", url, "m"), clock=Clock(), emit=events.append, stall_timeout=10)
    try:
        recs = []
        for _ in range(n):
            recs.append(await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=64,
                                                                      extra=body_extra)))
    finally:
        await client.aclose()
    return recs, events


def play(script, body_extra=None, n=1):
    with ScriptedServer({CHAT: script}) as srv:
        recs, events = asyncio.run(_run(srv.url, body_extra, n))
    return (recs[0] if n == 1 else recs), events


def dashboard(events) -> SessionState:
    state = SessionState()
    for ev in events:
        state.apply(ev)
    return state


def assert_no_speed(rec, events):
    """Neither the request's own figures nor the dashboard show a TTFT or a rate from it."""
    m = metrics.request_metrics(rec)
    assert not m.ok and m.decode_tok_s is None and m.tpot_s is None
    assert metrics.aggregate_tok_s([rec]) is None
    lane = dashboard(events).lanes["X"]
    assert lane.requests_ok == 0 and not lane.ttft_history and not lane.tps_history
    assert lane.last_ttft_s is None and lane.last_tps is None
    return lane


def paced(n, gap=0.02, last_finish="length"):
    """n content chunks ``gap`` s apart, the last one carrying the finish_reason."""
    out = []
    for i in range(n):
        out += [tok(f"t{i} ", finish=last_finish if i == n - 1 else None)]
        if i < n - 1:
            out.append(gap)
    return out


# -- bursts -------------------------------------------------------------------------------------------------
def test_one_write_burst_after_a_slow_first_token_is_complete_but_gives_no_decode_rate():
    # 0.3 s of nothing, then all 40 tokens, finish, usage and [DONE] in one write (a buffering proxy)
    body = b"".join(tok(f"w{i} ") for i in range(40)) + finish("stop") + usage(40) + DONE
    rec, events = play([sse_head(), 0.3, body])
    m = metrics.request_metrics(rec)
    assert rec.outcome == COMPLETE and rec.ok and BURST in rec.flags and BURST in m.flags
    assert m.ttft_s is not None and m.ttft_s >= 0.3  # the first token did come after 0.3 s
    assert m.decode_tok_s is None and m.tpot_s is None  # 40 tokens in one read: no rate (was 138,090 tok/s)
    assert rec.token_ns[-1] - rec.token_ns[0] < 50_000 * 39
    lane = dashboard(events).lanes["X"]
    assert lane.requests_ok == 1 and lane.bursts == 1 and not lane.tps_history and lane.last_tps is None
    assert list(lane.ttft_history) == [m.ttft_s]


def test_a_paced_stream_is_not_a_burst():
    rec, _ = play([sse_head(), *paced(8, 0.02), usage(8), DONE])
    m = metrics.request_metrics(rec)
    assert rec.outcome == COMPLETE and not m.flags and m.decode_tok_s is not None


# -- no finish_reason ---------------------------------------------------------------------------------------
def test_done_without_finish_reason_is_truncated_like_an_interrupted_llama_cpp_python_stream():
    rec, events = play([sse_head(), tok("a "), 0.02, tok("b "), 0.02, tok("c "), usage(3), DONE])
    assert rec.outcome == TRUNCATED and rec.error is None and rec.finish_reason is None
    lane = assert_no_speed(rec, events)
    assert lane.requests_truncated == 1 and lane.requests_err == 0


def test_a_stream_cut_after_tokens_is_truncated():
    rec, events = play([sse_head(), tok("a "), 0.02, tok("b "), None])
    assert rec.outcome == TRUNCATED and rec.error.cls == schema.ERR_CUT
    assert assert_no_speed(rec, events).requests_truncated == 1


def test_finish_reason_and_usage_without_done_is_complete_with_a_note():
    rec, events = play([sse_head(), *paced(4, 0.02, last_finish="stop"), usage(4)])  # then the body ends
    assert rec.outcome == COMPLETE and rec.finish_reason == "stop" and rec.completion_tokens == 4
    assert rec.notes == ["stream ended with a finish_reason but without [DONE]"]
    done = [e for e in events if e.kind == schema.DONE]
    assert len(done) == 1 and done[0].data["note"] == rec.notes[0]
    assert metrics.request_metrics(rec).decode_tok_s is not None
    assert dashboard(events).lanes["X"].requests_ok == 1


# -- usage --------------------------------------------------------------------------------------------------
def test_usage_with_no_token_chunk_is_malformed_and_never_wins():
    rec, events = play([sse_head(), finish("stop"), usage(11), DONE])
    assert rec.outcome == ERROR and rec.error.cls == schema.ERR_MALFORMED
    assert "11 completion tokens but no token chunk" in rec.error.message
    assert assert_no_speed(rec, events).requests_err == 1


@pytest.mark.parametrize("value, words", [
    (-5, "negative"), (True, "not an integer"), (7.5, "not an integer"), ("12", "not an integer"),
    (10**9, "absurd"),
])
def test_bad_usage_counts_are_malformed(value, words):
    rec, events = play([sse_head(), tok("a "), 0.02, tok("b ", finish="stop"), usage(value), DONE])
    assert rec.outcome == ERROR and rec.error.cls == schema.ERR_MALFORMED and words in rec.error.message
    assert_no_speed(rec, events)


def test_negative_usage_cannot_make_a_negative_aggregate():
    good, _ = play([sse_head(), *paced(3), usage(3), DONE])
    bad, _ = play([sse_head(), *paced(3), usage(-400), DONE])
    assert metrics.aggregate_tok_s([good, bad]) == pytest.approx(metrics.aggregate_tok_s([good]))
    assert metrics.aggregate_tok_s([good, bad]) > 0


def test_zero_token_reply_is_empty():
    rec, events = play([sse_head(), sse({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
                        finish("stop"), usage(0), DONE])
    assert rec.outcome == EMPTY and rec.error is None
    lane = assert_no_speed(rec, events)
    assert lane.requests_empty == 1 and lane.requests_err == 0
    assert metrics.request_metrics(rec).ttft_s is None


def test_non_string_content_never_raises():
    odd = [sse({"choices": [{"index": 0, "delta": {"content": c}}]}) for c in (5, ["x"], {"a": 1}, None, True)]
    rec, events = play([sse_head(), *odd, finish("stop"), DONE])
    assert rec.outcome == EMPTY and rec.text == ""
    assert_no_speed(rec, events)


# -- timing -------------------------------------------------------------------------------------------------
def test_a_usage_chunk_one_second_after_the_last_token_does_not_slow_the_decode_rate():
    rec, _ = play([sse_head(), *paced(10, 0.02), 1.0, usage(10), DONE])
    m = metrics.request_metrics(rec)
    assert rec.outcome == COMPLETE
    span = (rec.token_ns[-1] - rec.token_ns[0]) / NS
    assert m.decode_tok_s == pytest.approx(9 / span) and m.tpot_s == pytest.approx(span / 9)
    assert m.e2e_s - m.ttft_s >= 1.0  # E2E still runs to [DONE]
    assert m.decode_tok_s > 2 * 9 / (m.e2e_s - m.ttft_s)  # what it was when decode ran to [DONE]


def test_tokens_held_back_until_the_finish_chunk_count_to_the_finish():
    # a tool parser: 2 chunks, then the lane generates the rest with no chunk and says "tool_calls" later
    rec, _ = play([sse_head(), tok("a"), 0.02, tok("b"), 0.2, finish("tool_calls"), usage(20), DONE])
    m = metrics.request_metrics(rec)
    assert rec.outcome == COMPLETE and rec.finish_ns is not None and rec.finish_ns > rec.token_ns[-1]
    assert m.decode_span_s == pytest.approx((rec.finish_ns - rec.token_ns[0]) / NS)
    assert m.decode_tok_s == pytest.approx(19 / m.decode_span_s)


def test_multi_line_data_field_is_joined_as_the_sse_spec_says():
    split = (b'data: {"choices":[{"index":0,\ndata: "delta":{"content":"hello"},\n'
             b'data: "finish_reason":"stop"}]}\n\n')
    rec, events = play([sse_head(), tok("say "), 0.02, split, usage(2), DONE])
    assert rec.outcome == COMPLETE and rec.text == "say hello" and rec.finish_reason == "stop"
    assert metrics.request_metrics(rec).decode_tok_s is not None


def test_several_choices_in_one_stream_are_refused_never_merged():
    two = [sse({"choices": [{"index": i, "delta": {"content": f"c{i}"}, "finish_reason": None}]}) for i in (0, 1)]
    rec, events = play([sse_head(), *two, finish("stop"), DONE])
    assert rec.outcome == ERROR and "n > 1" in rec.error.message and rec.text == "c0"
    assert_no_speed(rec, events)
    both = sse({"choices": [{"index": i, "delta": {"content": "x"}, "finish_reason": None} for i in (0, 1)]})
    rec, events = play([sse_head(), both, finish("stop"), DONE])
    assert rec.outcome == ERROR and "n > 1" in rec.error.message and not rec.token_ns


def test_n_above_one_is_refused_before_sending():
    rec, events = play([sse_head(), tok("a", finish="stop"), DONE], body_extra={"n": 2})
    assert rec.outcome == ERROR and "n > 1" in rec.error.message
    assert [e.kind for e in events] == ["request", "error"]


# -- counting -----------------------------------------------------------------------------------------------
def test_every_request_has_exactly_one_outcome_and_counts_show_them_apart():
    scripts = {
        COMPLETE: [sse_head(), *paced(3), usage(3), DONE],
        TRUNCATED: [sse_head(), tok("a"), DONE],
        EMPTY: [sse_head(), finish("stop"), DONE],
        ERROR: [sse_head(), finish("stop"), usage(11), DONE],
    }
    events = []
    recs = []
    for script in scripts.values():
        rec, evs = play(script)
        recs.append(rec)
        events += evs
    assert [r.outcome for r in recs] == list(scripts)
    assert outcome_counts(recs) == {COMPLETE: 1, TRUNCATED: 1, EMPTY: 1, ERROR: 1}
    assert outcome_counts(assemble(events)) == outcome_counts(recs)  # a replay judges them the same
    lane = dashboard(events).lanes["X"]
    assert (lane.requests_ok, lane.requests_truncated, lane.requests_empty, lane.requests_err) == (1, 1, 1, 1)
    assert len(lane.ttft_history) == 1 and len(lane.tps_history) == 1


# -- bench cells ----------------------------------------------------------------------------------------------
def _records(specs):
    """Records from synthetic events: (tokens, step_ns, finish, usage) per request, all sent at t=0."""
    evs = []
    for i, (tokens, step, fin, used) in enumerate(specs):
        req = f"X-{i}"
        evs += [Event(0, schema.REQUEST, "X", req, {"endpoint": "chat"}),
                Event(1_000_000, schema.FIRST_BYTE, "X", req, {"status": 200})]
        t = 100_000_000
        for _ in range(tokens):
            evs.append(Event(t, schema.TOKEN, "X", req, {"text": "w"}))
            t += step
        if used is not None:
            evs.append(Event(t, schema.USAGE, "X", req, {"completion_tokens": used}))
        evs.append(Event(t, schema.DONE, "X", req, {"finish_reason": fin}))
    return assemble(evs)


def test_a_decode_cell_counts_truncated_empty_and_bursts_apart_and_takes_no_figure_from_them():
    from lanemon.workloads.bench.decode import _category_result, _level_result

    good = (20, 10_000_000, "length", 20)
    recs = _records([good, good, (20, 10_000_000, None, 20), (0, 0, "stop", 0), (20, 1_000, "length", 20),
                     (3, 10_000_000, "stop", -4)])
    assert [r.outcome for r in recs] == [COMPLETE, COMPLETE, TRUNCATED, EMPTY, COMPLETE, ERROR]
    cell = _level_result({0: recs}, level=6)
    assert (cell.truncated, cell.empty, cell.bursts, cell.errors, cell.requests) == (1, 1, 1, 3, 6)
    assert cell.aggregate_tok_s is None and cell.steady_tok_s is None  # an unclean rep gives no throughput
    assert cell.per_stream_tok_s_p50 == pytest.approx(19 / 0.19)  # the two paced streams only, not the burst
    assert cell.itl_p50_s == pytest.approx(0.01)
    cat = _category_result({0: recs})
    assert (cat.truncated, cat.empty, cat.bursts) == (1, 1, 1)
    assert cat.per_stream_tok_s == pytest.approx(19 / 0.19)
    clean = _level_result({0: [r for r in recs if r.ok]}, level=3)
    assert clean.aggregate_tok_s is not None and clean.bursts == 1 and clean.errors == 0


def test_export_rows_carry_the_outcome_and_flags():
    from lanemon.reports.export import request_rows, to_csv

    good = (5, 10_000_000, "stop", 5)
    specs = [good, (5, 10_000_000, None, 5), (0, 0, "stop", 0), (5, 1_000, "stop", 5)]
    events = []
    for i, (tokens, step, fin, used) in enumerate(specs):
        for rec_ev in _spec_events(i, tokens, step, fin, used):
            events.append(rec_ev)
    rows = request_rows(events)
    assert [r["outcome"] for r in rows] == [COMPLETE, TRUNCATED, EMPTY, COMPLETE]
    assert [r["flags"] for r in rows] == [[], [], [], [BURST]]
    assert rows[0]["decode_tok_s"] is not None and rows[1]["decode_tok_s"] is None and rows[3]["decode_tok_s"] is None
    assert len(rows[3]["itl_s"]) == 4  # the raw gaps stay in the row
    text = to_csv(rows)
    header, *lines = text.splitlines()
    assert "outcome" in header.split(",") and lines[1].count("truncated") == 1 and ",burst," in lines[3]


def _spec_events(i, tokens, step, fin, used):
    req = f"X-{i}"
    evs = [Event(i, schema.REQUEST, "X", req, {"endpoint": "chat"})]
    t = 100_000_000
    for _ in range(tokens):
        evs.append(Event(t, schema.TOKEN, "X", req, {"text": "w"}))
        t += step
    evs.append(Event(t, schema.USAGE, "X", req, {"completion_tokens": used}))
    evs.append(Event(t, schema.DONE, "X", req, {"finish_reason": fin}))
    return evs


def test_hidden_reasoning_counted_in_usage_is_not_absurd():
    # a lane that thinks without streaming its reasoning: 3000 reasoning tokens, 5 answer chunks
    u = sse({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3005,
                                      "completion_tokens_details": {"reasoning_tokens": 3000}}})
    rec, _ = play([sse_head(), *paced(5, 0.01), u, DONE])
    assert rec.outcome == COMPLETE and rec.reasoning_tokens == 3000
    rec, _ = play([sse_head(), *paced(5, 0.01), usage(3005), DONE])  # the same count with no reasoning said
    assert rec.outcome == ERROR and "absurd" in rec.error.message
