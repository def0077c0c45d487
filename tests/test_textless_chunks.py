"""Tokens in chunks without text count where they arrived (issue 28, row 2 and 3).

A real vLLM streams chunks whose text is empty while the running ``usage.completion_tokens`` rises (a token
that decodes to nothing on its own: half a UTF-8 character, markup a parser holds back).  The scripted server
here replays such a stream byte for byte in vLLM's shape (role chunk with usage 0, one chunk per token, every
few tokens a text-less one, the finish chunk, [DONE]); the simulator's ``textless:K`` fault does the same on a
live lane.  Per-chunk counts must add up to usage, and steady state, ITL per token, tokens per chunk, the
export row and the cell figures agree.
"""

from __future__ import annotations

import asyncio
import json

from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import Clock, Event
from lanemon.measure import metrics
from lanemon.measure import stats as st
from lanemon.measure.records import COMPLETE, EMPTY, assemble
from lanemon.reports.export import request_rows
from lanemon.workloads.bench.run import token_figures
from scripted_server import DONE, ScriptedServer, sse, sse_head

CHAT = "/v1/chat/completions"
MODEL = "deepseek-v4.1-flash"
COMP = "/v1/completions"


def vllm_chat_stream(n_tokens: int, blank_every: int, gap: float = 0.004, prompt: int = 7) -> list:
    """What vLLM writes for a chat stream with continuous usage: every ``blank_every``-th token chunk has
    ``content: ""`` (its text comes with the next chunk); the last token rides on the finish chunk."""
    def u(ct):
        return {"prompt_tokens": prompt, "completion_tokens": ct, "total_tokens": prompt + ct}

    out: list = [sse_head(), sse({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                          "finish_reason": None}], "usage": u(0)})]
    held = ""
    for i in range(1, n_tokens + 1):
        text = f"w{i} "
        last = i == n_tokens
        blank = i % blank_every == 0 and not last
        content = "" if blank else held + text
        held = held + text if blank else ""
        out.append(gap)
        out.append(sse({"id": "c", "choices": [{"index": 0, "delta": {"content": content},
                                                "finish_reason": "length" if last else None}], "usage": u(i)}))
    out.append(sse({"id": "c", "choices": [], "usage": u(n_tokens)}))
    out.append(DONE)
    return out


async def _stream(url, endpoint="chat", n=1, extra=None, model="m"):
    events: list[Event] = []
    client = LaneClient(LaneConfig("X", url, model), clock=Clock(), emit=events.append, stall_timeout=10)
    client.continuous_usage = True
    try:
        recs = [await client.stream(endpoint, client.build_body(endpoint, prompt="hi", max_tokens=64, extra=extra))
                for _ in range(n)]
    finally:
        await client.aclose()
    return recs, events


def play(script, path=CHAT, endpoint="chat", n=1):
    with ScriptedServer({path: script}) as srv:
        return asyncio.run(_stream(srv.url, endpoint, n))


def test_textless_chunks_carry_their_tokens_and_add_up_to_usage():
    recs, events = play(vllm_chat_stream(32, blank_every=5))
    rec = recs[0]
    assert rec.outcome == COMPLETE
    assert rec.completion_tokens == 32
    assert rec.blank_chunks == 6  # tokens 5, 10, ..., 30
    assert len(rec.token_ns) == 32  # every chunk that carried a token, text or not
    assert sum(rec.chunk_tokens) == rec.completion_tokens
    assert rec.text == "".join(f"w{i} " for i in range(1, 33))  # the held-back text still arrives whole
    blanks = [e for e in events if e.kind == "token" and e.data.get("blank")]
    assert len(blanks) == 6 and all(e.data["text"] == "" and e.data["n"] == 1 for e in blanks)
    # replaying the recorded events gives the same record
    again = assemble(events)[-1]
    assert again.token_ns == rec.token_ns and again.chunk_tokens == rec.chunk_tokens


def test_steady_state_itl_tokens_per_chunk_export_and_cell_agree():
    recs, events = play(vllm_chat_stream(40, blank_every=4), n=3)
    rows = {r["req"]: r for r in request_rows(events)}
    for rec in recs:
        m = metrics.request_metrics(rec)
        assert m.ok and m.generated_tokens == 40 and m.chunks == 40
        assert not m.chunk_counts_estimated
        assert m.tokens_per_chunk == 1.0  # 40 tokens in 40 token-carrying chunks (10 of them text-less)
        assert len(m.itl_per_token_s) == 39  # one gap per chunk after the first, text-less chunks included
        row = rows[rec.req]
        assert row["tokens_per_chunk"] == m.tokens_per_chunk and row["chunks"] == 40
    cell = token_figures(recs)
    assert cell.tokens_per_chunk == 1.0 and cell.chunk_counts_estimated is False
    # steady state counts every token inside its window: with all three streams' tokens inside a window that
    # spans them, it is exactly their usage
    reqs = [{"sent_ns": r.sent_ns, "end_ns": r.end_ns, "token_ns": r.token_ns, "chunk_tokens": r.chunk_tokens,
             "generated": metrics.generated_tokens(r)[0]} for r in recs]
    ss = st.steady_state(reqs, 1)
    assert ss is not None
    inside = sum(1 for r in recs for t in r.token_ns if ss["start_ns"] <= t <= ss["end_ns"])
    assert ss["tokens"] == inside
    full = st.steady_state([dict(reqs[0])], 1)
    assert full["tokens"] == 40  # one request alone: its whole usage, not only the chunks with text


def test_completions_stream_with_textless_chunks():
    def u(ct):
        return {"prompt_tokens": 3, "completion_tokens": ct, "total_tokens": 3 + ct}
    script = [sse_head()]
    for i in range(1, 11):
        text = "" if i in (3, 7) else f"t{i}"
        script += [0.002, sse({"choices": [{"index": 0, "text": text, "finish_reason": "stop" if i == 10 else None}],
                               "usage": u(i)})]
    script += [DONE]
    recs, _ = play(script, COMP, "completions")
    rec = recs[0]
    assert rec.ok and len(rec.token_ns) == 10 and rec.blank_chunks == 2 and sum(rec.chunk_tokens) == 10


def test_logprobs_name_the_tokens_of_a_textless_chunk_without_usage():
    script = [sse_head(),
              sse({"choices": [{"index": 0, "delta": {"content": "a"}, "logprobs": {"content": [{"token": "a"}]}}]}),
              sse({"choices": [{"index": 0, "delta": {"content": ""},
                                "logprobs": {"content": [{"token": "\\xe2"}, {"token": "\\x80"}]}}]}),
              sse({"choices": [{"index": 0, "delta": {"content": "\u2014"}, "logprobs": {"content": [{"token": "x"}]},
                                "finish_reason": "stop"}]}),
              DONE]
    recs, events = play(script)
    rec = recs[0]
    assert rec.ok and len(rec.token_ns) == 3 and rec.blank_chunks == 1
    blank = [e for e in events if e.kind == "token" and e.data.get("blank")][0]
    assert blank.data["n"] == 2  # two tokens named by the logprobs


def test_role_chunk_and_usage_that_does_not_advance_are_no_tokens():
    def u(ct):
        return {"prompt_tokens": 3, "completion_tokens": ct}
    script = [sse_head(),
              sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}], "usage": u(0)}),
              sse({"choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": u(1)}),
              sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": u(1)}),
              DONE]
    recs, _ = play(script)
    assert len(recs[0].token_ns) == 1 and recs[0].blank_chunks == 0 and recs[0].ok


def test_a_reply_of_textless_chunks_only_is_empty():
    def u(ct):
        return {"prompt_tokens": 3, "completion_tokens": ct}
    script = [sse_head(),
              sse({"choices": [{"index": 0, "delta": {"content": ""}}], "usage": u(1)}),
              sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": u(2)}),
              DONE]
    recs, _ = play(script)
    assert recs[0].outcome == EMPTY and recs[0].blank_chunks == 2


def test_textless_chunk_while_reasoning_counts_as_reasoning():
    def u(ct):
        return {"prompt_tokens": 3, "completion_tokens": ct}
    script = [sse_head(),
              sse({"choices": [{"index": 0, "delta": {"reasoning_content": "think"}}], "usage": u(1)}),
              sse({"choices": [{"index": 0, "delta": {"content": ""}}], "usage": u(2)}),
              sse({"choices": [{"index": 0, "delta": {"reasoning_content": "more"}}], "usage": u(3)}),
              sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}], "usage": u(4)}),
              DONE]
    recs, _ = play(script)
    rec = recs[0]
    m = metrics.request_metrics(rec)
    assert rec.ok and m.reasoning_tokens == 3 and m.output_tokens == 1 and m.generated_tokens == 4


def test_json_of_the_replayed_stream_is_what_the_test_says():
    # the fixture is a vLLM-shaped stream: 17 of 129 chunks without text would be blank_every ~ 7.5
    script = vllm_chat_stream(128, blank_every=8, gap=0.0)
    payloads = [json.loads(p[6:]) for p in script if isinstance(p, bytes) and p.startswith(b"data: {")]
    blanks = [p for p in payloads if p["choices"] and p["choices"][0]["delta"].get("content") == ""
              and "role" not in p["choices"][0]["delta"]]
    assert len(blanks) == 15
    recs, _ = play(script)
    assert len(recs[0].token_ns) == 128 and recs[0].completion_tokens == 128


# -- the simulator: fault textless:K on a live lane, checked against its own trace ------------------------------
def test_simulator_textless_fault_and_lanemon_counts_every_token_of_the_trace():
    import httpx

    from lanemon.sim.server import SimThread

    with SimThread("tensorfold-exl3", time_scale=0.02, faults=["textless:4"]) as sim:
        recs, events = asyncio.run(_stream(sim.base_url, "completions", n=2, model=MODEL))
        recs_chat, _ = asyncio.run(_stream(sim.base_url, "chat", n=1, model=MODEL))
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    truth = {t["id"]: t for t in trace}
    for rec in recs + recs_chat:
        assert rec.ok
        t = truth[rec.server_request_id]
        assert rec.completion_tokens == t["completion_tokens"] == sum(rec.chunk_tokens)
        # one chunk per token, text-less ones included (+1 when text held back rides on the finish chunk)
        assert len(rec.token_ns) - t["completion_tokens"] in (0, 1)
        assert len(rec.token_ns) - rec.blank_chunks == len(rec.text_parts)
        assert rec.blank_chunks >= (t["completion_tokens"] - 2) // 4 >= 1
        assert "textless:4" in t.get("faults", [])
    assert any(e.kind == "token" and e.data.get("blank") for e in events)


def test_fault_specs_of_the_two_new_kinds():
    import pytest

    from lanemon.sim.fault_spec import parse_fault

    assert parse_fault("textless:4").args == (4,)
    assert parse_fault("restart#20").every == 20
    for bad in ("textless", "textless:1", "textless:x", "restart:3"):
        with pytest.raises(ValueError):
            parse_fault(bad)


def test_restart_fault_makes_every_counter_fall_and_count_again():
    from prometheus_client.parser import text_string_to_metric_families

    import httpx

    from lanemon.sim.server import SimThread

    def gen_total(sim):
        text = httpx.get(sim.root_url + "/metrics", timeout=10).text
        return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
                if s.name in ("vllm:generation_tokens_total", "vllm:e2e_request_latency_seconds_count")}

    with SimThread("tensorfold-exl3", time_scale=0.02, faults=["restart#3"]) as sim:
        with httpx.Client(timeout=30) as c:
            for i in range(2):
                c.post(sim.base_url + "/completions", json={"model": MODEL, "prompt": f"p{i}", "max_tokens": 5})
            before = gen_total(sim)
            c.post(sim.base_url + "/completions", json={"model": MODEL, "prompt": "p3", "max_tokens": 5})
            after = gen_total(sim)
    assert before["vllm:e2e_request_latency_seconds_count"] == 2 and before["vllm:generation_tokens_total"] == 10
    # the third request restarted the engine first: only it is counted now
    assert after["vllm:e2e_request_latency_seconds_count"] == 1 and after["vllm:generation_tokens_total"] == 5


def test_decode_steady_state_counts_textless_tokens_against_the_trace():
    """Issue 28 row 2: C1 steady_tok_s read 618.5 below aggregate_tok_s 659.0 on the same run (961 of 1,024 tokens
    counted).  With every third chunk text-less, the steady window's tokens are every token the lane generated."""
    import subprocess
    import sys

    import httpx

    from lanemon.sim.server import SimThread

    with SimThread("tensorfold-exl3", time_scale=0.05, faults=["textless:3"]) as sim:
        cmd = [sys.executable, "-m", "lanemon", "bench", "decode", "--lane", f"A={sim.base_url}", "--levels", "1",
               "--categories", "coding", "--no-categories", "--max-tokens", "64", "--reps", "1", "--json",
               "--no-record"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    assert out.returncode == 0, out.stderr[-2000:]
    cell = json.loads(out.stdout)["lanes"]["A"]["levels"]["1"]
    bench = [t for t in trace if t["status"] == "ok" and t["completion_tokens"] > 1]
    assert any("textless:3" in t.get("faults", []) for t in bench)
    assert cell["output_tokens"] == sum(t["completion_tokens"] for t in bench)
    # C1: the steady window is the level's span minus the gaps between requests, so it can only read higher
    assert cell["steady_tok_s"] >= cell["aggregate_tok_s"] * 0.99, cell
    assert cell["tokens_per_chunk"] == 1.0  # every token in its own chunk, a third of them without text
