"""Fault injection (sim/faults.py): every fault kind, seen through lanemon's client.

Each case starts an in-process simulator with one fault, sends one streaming
request with :class:`LaneClient` and checks what lanemon recorded: the error
class and the server's message (or, for the faults lanemon absorbs, a clean
``done``), and that the sim's ground-truth trace marks the fault.
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc

import httpx
import pytest

from lanemon.measure import metrics
from lanemon.config import LaneConfig
from lanemon.client import http as client_mod
from lanemon.client.http import LaneClient
from lanemon import events as schema
from lanemon.events import Clock
from lanemon.sim.faults import parse_fault
from lanemon.sim.server import SimThread

PROFILE = "sglang-native"


def run_one(faults, *, endpoint="chat", stall_timeout=None, max_tokens=12, model=None, requests=1):
    """Start a faulty sim, send ``requests`` streaming requests; (records, events, trace)."""
    with SimThread(PROFILE, time_scale=0.02, faults=faults) as sim:

        async def go():
            events = []
            client = LaneClient(LaneConfig("X", sim.base_url, model), clock=Clock(), emit=events.append,
                                stall_timeout=stall_timeout)
            try:
                recs = []
                for _ in range(requests):
                    body = client.build_body(endpoint, prompt="Tell a short story about a harbour.",
                                             max_tokens=max_tokens)
                    recs.append(await client.stream(endpoint, body))
                return recs, events
            finally:
                await client.aclose()

        recs, events = asyncio.run(go())
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    return recs, events, trace


# ---------------------------------------------------------------------------
# Spec syntax
# ---------------------------------------------------------------------------


def test_spec_syntax():
    f = parse_fault("drop:50@0.3")
    assert (f.kind, f.args, f.prob, f.every, str(f)) == ("drop", (50,), 0.3, None, "drop:50@0.3")
    assert parse_fault("http:503:text#5").args == (503, "text", None)
    assert parse_fault("http:503:text#5").every == 5
    assert parse_fault("http:429").args == (429, "json", 1)  # Retry-After: 1 by default
    assert parse_fault("http:429:json:7").args == (429, "json", 7)
    assert parse_fault("stall:2.5").args == (2.5, 1)
    assert parse_fault("malformed").args == ("json",)
    assert parse_fault("huge:100").args == (100.0,)
    for bad, words in [("nope", "unknown kind"), ("drop", "drop:N"), ("drop:x", "whole number"),
                       ("http:200", ">= 400"), ("stall:0", "> 0"), ("refuse@1.5", "<= 1"), ("refuse#0", ">= 1"),
                       ("malformed:weird", "mode"), ("models-change:3#2", "takes no"), ("nodone:1", "without")]:
        with pytest.raises(ValueError, match=words):
            parse_fault(bad)


def test_every_nth_and_probability_select_requests():
    recs, _, trace = run_one(["http:503#3"], requests=6, max_tokens=3)
    assert [r.ok for r in recs] == [True, True, False, True, True, False]
    assert [t.get("faults") for t in trace].count(["http:503#3"]) == 2
    recs, _, _ = run_one(["refuse@0.5"], requests=12, max_tokens=2)
    n_err = sum(not r.ok for r in recs)
    assert 0 < n_err < 12  # seeded: same every run


def test_the_cli_option_is_repeatable_and_bad_specs_are_usage_errors(capsys):
    from lanemon.cli.main import build_parser

    args = build_parser().parse_args(["sim", "--profile", PROFILE, "--fault", "drop:5", "--fault", "http:429#2"])
    assert [str(f) for f in args.fault] == ["drop:5", "http:429#2"]
    args = build_parser().parse_args(["demo", "--fault-b", "drop:50", "--stall-timeout", "3"])
    assert [str(f) for f in args.fault_b] == ["drop:50"] and args.stall_timeout == 3
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["sim", "--profile", PROFILE, "--fault", "drop:x"])
    assert exc.value.code == 2 and "whole number" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Each kind, through the client
# ---------------------------------------------------------------------------


HTTP_CASES = [
    ("http:400", 400, "Invalid request"),
    ("http:401", 401, "Incorrect API key"),
    ("http:404", 404, "does not exist"),
    ("http:413", 413, "Request too large"),
    ("http:429", 429, "Rate limit reached"),
    ("http:500", 500, "had an error"),
    ("http:503", 503, "overloaded"),
    ("http:503:text", 503, "503 Service Unavailable: The server is overloaded"),
    ("http:502:html", 502, "502 Bad Gateway"),
]


@pytest.mark.parametrize("spec, status, words", HTTP_CASES)
def test_http_errors_keep_status_and_the_servers_message(spec, status, words):
    (rec,), events, trace = run_one([spec])
    assert rec.error.cls == schema.ERR_HTTP and rec.error.status == status
    assert words in rec.error.message and rec.error.message.startswith(f"HTTP {status}: ")
    assert "<" not in rec.error.message  # an HTML page is reduced to its title
    assert [e.kind for e in events] == ["request", "first_byte", "error"]
    assert trace[-1]["faults"] == [spec] and trace[-1]["http_status"] == status
    if status == 429:
        assert rec.error.retry_after == "1" and "Retry-After: 1" in rec.error.message


@pytest.mark.parametrize(
    "spec, endpoint, cls, words, tokens",
    [
        ("refuse", "chat", schema.ERR_CONNECT, "closed the connection without a response", 0),
        ("drop:3", "chat", schema.ERR_CUT, "closed by the server mid-response", 3),
        ("drop:2", "completions", schema.ERR_CUT, "mid-response", 2),
        ("drop:0", "chat", schema.ERR_CUT, "mid-response", 0),
        ("malformed", "chat", schema.ERR_MALFORMED, "invalid JSON in SSE data", 1),
        ("malformed:line", "completions", schema.ERR_MALFORMED, "not an SSE line", 1),
        ("malformed:array", "chat", schema.ERR_MALFORMED, "not a JSON object", 1),
        ("malformed:nested", "chat", schema.ERR_MALFORMED, "invalid JSON", 1),  # orjson: depth > 1024
        ("huge:20", "chat", schema.ERR_MALFORMED, "SSE line longer than 16 MiB", 1),
    ],
)
def test_stream_faults_become_classified_errors(spec, endpoint, cls, words, tokens):
    (rec,), events, trace = run_one([spec], endpoint=endpoint)
    assert rec.error is not None and rec.error.cls == cls, rec.error
    assert words in rec.error.message
    assert len(rec.token_ns) == tokens  # tokens before the fault are kept
    assert sum(e.kind == schema.ERROR for e in events) == 1 and events[-1].kind == schema.ERROR
    if spec == "refuse":  # closed before any response: retried once on a new connection, visibly, then the error
        assert [e.kind for e in events] == ["request", schema.NOTE, "error"] and events[1].data.get("retry") is True
    assert trace[-1]["faults"] == [spec]
    assert metrics.request_metrics(rec).decode_tok_s is None or not rec.ok  # never a rate from a failure


def test_finish_reason_without_done_is_complete_with_a_note():
    # the sim's nodone fault drops only [DONE]: the finish_reason and usage came (issue 16: complete, noted)
    (rec,), events, trace = run_one(["nodone"])
    assert rec.outcome == "complete" and rec.error is None and len(rec.token_ns) == 12
    assert rec.notes == ["stream ended with a finish_reason but without [DONE]"]
    assert events[-1].kind == schema.DONE and trace[-1]["faults"] == ["nodone"]


def test_stall_beyond_the_stall_timeout_is_a_timeout():
    (rec,), _, trace = run_one(["stall:1"], stall_timeout=0.3)
    assert rec.error.cls == schema.ERR_TIMEOUT and "stall timeout" in rec.error.message
    assert len(rec.token_ns) == 1 and trace[-1]["faults"] == ["stall:1"]


def test_stall_shorter_than_the_timeout_continues():
    (rec,), _, _ = run_one(["stall:0.4:3"], stall_timeout=5)
    assert rec.ok and len(rec.token_ns) == 12
    gaps = [(b - a) / 1e9 for a, b in zip(rec.token_ns, rec.token_ns[1:])]
    assert max(gaps) >= 0.35 and gaps.index(max(gaps)) == 2  # the gap after the 3rd token


def test_invalid_utf8_in_a_token_becomes_replacement_characters():
    for endpoint in ("chat", "completions"):
        (rec,), events, trace = run_one(["badutf8"], endpoint=endpoint)
        assert rec.ok and rec.error is None
        assert "\ufffd" in rec.text and rec.text.count("\ufffd") >= 2
        assert trace[-1]["faults"] == ["badutf8"]
        m = metrics.request_metrics(rec)
        # the timing is still valid: a decode rate, unless the 12 chunks were read in one burst (50x speed)
        assert (m.decode_tok_s is not None) != ("burst" in m.flags)


def test_missing_usage_marks_tokens_estimated_not_an_error():
    (rec,), events, trace = run_one(["nousage"])
    assert rec.ok and not any(e.kind == schema.USAGE for e in events)
    m = metrics.request_metrics(rec)
    # a rate (estimated tokens), unless the sim wrote its 12 tokens faster than a client can tell apart
    assert m.tokens_estimated and (m.decode_tok_s is not None) != ("burst" in m.flags)
    assert trace[-1]["faults"] == ["nousage"]


def test_slow_headers_delay_first_byte_but_the_request_succeeds():
    (rec,), events, trace = run_one(["slowheaders:0.8"], stall_timeout=2)
    assert rec.ok and len(rec.token_ns) == 12
    t = {e.kind: e.t for e in events if e.kind in ("request", "first_byte")}
    assert (t["first_byte"] - t["request"]) / 1e9 >= 0.7
    assert trace[-1]["faults"] == ["slowheaders:0.8"]


def test_slow_headers_beyond_the_stall_timeout_time_out():
    (rec,), _, _ = run_one(["slowheaders:100"], stall_timeout=0.2)  # ~0.5 s a byte
    assert rec.error.cls == schema.ERR_TIMEOUT


def test_a_models_list_change_is_followed_and_logged():
    from lanemon.folds.dashboard import SessionState

    with SimThread(PROFILE, time_scale=0.02, faults=["models-change:2"]) as sim:

        async def go(model):
            events = []
            client = LaneClient(LaneConfig("X", sim.base_url, model), clock=Clock(), emit=events.append)
            recs = []
            try:
                for _ in range(4):
                    probe = await client.probe_models()
                    if probe.ok:
                        recs.append(await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=4)))
            finally:
                await client.aclose()
            return recs, events

        recs, events = asyncio.run(go(None))
        pinned_recs, pinned_events = asyncio.run(go("deepseek-v4.1-flash"))
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    assert all(r.ok for r in recs) and len(recs) == 4
    models = [e.data["model"] for e in events if e.kind == schema.PROBE]
    assert models == ["deepseek-v4.1-flash"] * 2 + ["deepseek-v4.1-flash-v2"] * 2
    state = SessionState()
    for e in events:
        state.apply(e)
    lane = state.lanes["X"]
    assert lane.model == "deepseek-v4.1-flash-v2" and lane.requests_ok == 4
    assert [(c, m) for _, c, m in lane.errors] == [("model", "model changed: deepseek-v4.1-flash -> "
                                                             "deepseek-v4.1-flash-v2")]
    # a pinned lane whose model went away is down, with the reason; no request is sent
    assert pinned_recs == []
    probes = [e.data for e in pinned_events if e.kind == schema.PROBE]
    assert not probes[-1]["ok"] and probes[-1]["cls"] == "model" and "not served here" in probes[-1]["message"]
    assert any("models-change:2" in (t.get("faults") or []) for t in trace)


def test_unpinned_request_for_the_old_model_after_the_change_is_a_404():
    with SimThread(PROFILE, time_scale=0.02, faults=["models-change:0"]) as sim:
        r = httpx.post(sim.base_url + "/chat/completions", timeout=10,
                       json={"model": "deepseek-v4.1-flash", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


# ---------------------------------------------------------------------------
# Bounded memory and pathological JSON
# ---------------------------------------------------------------------------


def test_a_100_mb_line_is_refused_with_bounded_memory():
    tracemalloc.start()
    try:
        t0 = time.monotonic()
        (rec,), _, trace = run_one(["huge:100"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rec.error.cls == schema.ERR_MALFORMED and "longer than 16 MiB" in rec.error.message
    assert peak < 40 * 2**20, f"peak {peak / 2**20:.1f} MiB for a 100 MiB line"  # the cap, not the line
    assert time.monotonic() - t0 < 20
    assert trace[-1]["faults"] == ["huge:100"] and trace[-1]["status"] == "cancelled"


def test_a_huge_line_under_the_cap_is_a_token():
    (rec,), _, _ = run_one(["huge:1"])
    assert rec.ok and len(rec.text) > 2**20


def test_line_reader_handles_cr_crlf_split_chunks_and_the_cap():
    async def lines_of(chunks, limit=client_mod.MAX_SSE_LINE):
        async def gen():
            for c in chunks:
                yield c

        resp = httpx.Response(200, content=gen())
        return [line async for line in client_mod.sse_lines(resp, limit)]

    chunks = [b"a\r", b"\nb\rc\n", b"d", b"e\r\n\r\n", b"tail"]
    assert asyncio.run(lines_of(chunks)) == [b"a", b"b", b"c", b"de", b"", b"tail"]
    # lines are bytes (orjson parses them directly); a character split across chunks stays whole
    assert asyncio.run(lines_of([b"\xe2\x82", b"\xac ok\n\xff\n"])) == ["\u20ac ok".encode(), b"\xff"]
    with pytest.raises(client_mod.SSELineTooLong):
        asyncio.run(lines_of([b"x" * 10, b"y" * 10, b"\n"], limit=15))
    assert asyncio.run(lines_of([b"x" * 10 + b"\n", b"y" * 5 + b"\n"], limit=10)) == [b"x" * 10, b"y" * 5]
