"""The simulator as a real HTTP server on loopback, driven by the official openai client."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time

import httpx
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from lanemon.sim.server import SimThread
from lanemon.sim.tokenizer import count_tokens, tokenize

MODEL = "deepseek-v4.1-flash"
TS = 0.02  # time scale: 50x faster than the lanes


@pytest.fixture(scope="module")
def sim_a():
    with SimThread("tensorfold-exl3", time_scale=TS, seed=0) as sim:
        yield sim


@pytest.fixture(scope="module")
def sim_b():
    with SimThread("sglang-native", time_scale=TS, seed=0) as sim:
        yield sim


@pytest.fixture(scope="module")
def sim_a_full():
    with SimThread("tensorfold-exl3", time_scale=TS, seed=0, logprobs="full") as sim:
        yield sim


def client(sim) -> OpenAI:
    return OpenAI(base_url=sim.base_url, api_key="x", max_retries=0, timeout=20)


def trace(sim) -> list[dict]:
    r = httpx.get(sim.root_url + "/sim/trace", timeout=10)
    r.raise_for_status()
    return r.json()["requests"]


def trace_by_id(sim, rid: str) -> dict:
    recs = [r for r in trace(sim) if r["id"] == rid]
    assert len(recs) == 1, rid
    return recs[0]


def long_prompt(n_tokens: int, salt: str) -> str:
    base = (f"[{salt}] Lane notes: the prefill ladder ran at 2K, 8K, 32K and 64K tokens on both lanes; "
            "every needle was found, all runs.\n")
    pieces = tokenize(base * (n_tokens // 20 + 2))[:n_tokens]
    text = "".join(pieces)
    assert count_tokens(text) == n_tokens
    return text


# ---------------------------------------------------------------- basics


def test_models_health_info(sim_a, sim_b):
    ids_a = [m.id for m in client(sim_a).models.list()]
    ids_b = [m.id for m in client(sim_b).models.list()]
    assert ids_a == ["deepseek-v4.1-flash", "glm-5.3-flash"]
    assert ids_b == ["deepseek-v4.1-flash"]
    raw = httpx.get(sim_a.base_url + "/models").json()
    assert raw["object"] == "list"
    assert raw["data"][0]["owned_by"] == "lanemon-sim"
    assert raw["data"][0]["max_model_len"] == 1048576
    assert isinstance(raw["data"][0]["created"], int)
    assert httpx.get(sim_b.root_url + "/health").status_code == 200
    info = httpx.get(sim_b.root_url + "/sim/info").json()
    assert info["profile"] == "sglang-native" and info["lane"] == "B"
    assert info["time_scale"] == TS and info["seed"] == 0 and info["models"] == ids_b


def test_sync_chat_stream_with_usage(sim_a):
    stream = client(sim_a).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Write a Python function to chunk a list."}],
        stream=True, stream_options={"include_usage": True}, temperature=0, max_tokens=40,
    )
    chunks = list(stream)
    assert chunks[0].object == "chat.completion.chunk"
    first = chunks[0].choices[0].delta
    assert first.role == "assistant" and first.content == ""
    content = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["length"]
    fin_chunk = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert not fin_chunk.choices[0].delta.content  # finish chunk carries no token
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None
    text = "".join(content)
    assert usage.completion_tokens == len(content) == count_tokens(text) == 40
    assert usage.prompt_tokens == count_tokens("<|user|>\nWrite a Python function to chunk a list.\n") + 2
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert "def " in text or "python" in text


async def test_async_completions_stream_with_usage(sim_b):
    ac = AsyncOpenAI(base_url=sim_b.base_url, api_key="x", max_retries=0, timeout=20)
    try:
        stream = await ac.completions.create(
            model=MODEL, prompt="Tell me a short story about a lighthouse keeper.",
            stream=True, stream_options={"include_usage": True}, temperature=0, max_tokens=400,
        )
        pieces, finish, usage = [], None, None
        async for ch in stream:
            assert ch.object == "text_completion"
            if ch.choices:
                if ch.choices[0].text:
                    pieces.append(ch.choices[0].text)
                finish = ch.choices[0].finish_reason or finish
            if ch.usage is not None:
                usage = ch.usage
        text = "".join(pieces)
        assert usage.completion_tokens == len(pieces) == count_tokens(text)
        assert 40 <= len(pieces) <= 400
        assert finish in ("stop", "length")
        assert usage.prompt_tokens == count_tokens("Tell me a short story about a lighthouse keeper.")
    finally:
        await ac.close()


def test_continuous_usage_stats(sim_b):
    r = httpx.post(sim_b.base_url + "/completions", json={
        "model": MODEL, "prompt": "hello", "max_tokens": 5, "stream": True, "temperature": 0,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}}, timeout=10)
    events = [json.loads(line[6:]) for line in r.text.split("\n\n") if line.startswith("data: {")]
    token_events = [e for e in events if e["choices"] and e["choices"][0]["text"]]
    assert [e["usage"]["completion_tokens"] for e in token_events] == [1, 2, 3, 4, 5]
    assert all("usage" in e for e in events)


def test_non_streaming_chat_and_completions(sim_a, sim_b):
    r = client(sim_a).chat.completions.create(
        model="glm-5.3-flash", messages=[{"role": "user", "content": [{"type": "text", "text": "Solve 2x=4"}]}],
        temperature=0, max_completion_tokens=30,
    )
    assert r.object == "chat.completion" and r.model == "glm-5.3-flash"
    assert r.choices[0].message.role == "assistant"
    assert r.usage.completion_tokens == count_tokens(r.choices[0].message.content) == 30
    assert r.choices[0].finish_reason == "length"
    r2 = client(sim_b).completions.create(model=MODEL, prompt=["Summarize the write-up."], temperature=0)
    assert r2.object == "text_completion"
    assert r2.usage.completion_tokens == count_tokens(r2.choices[0].text) >= 50
    assert r2.choices[0].finish_reason == "stop"


def test_stop_sequence(sim_b):
    full = client(sim_b).completions.create(model=MODEL, prompt="Describe a harbour.", temperature=0)
    text = full.choices[0].text
    stop = text[20:26]
    cut = client(sim_b).completions.create(model=MODEL, prompt="Describe a harbour.", temperature=0, stop=[stop])
    assert cut.choices[0].text == text[: text.find(stop)]
    assert cut.choices[0].finish_reason == "stop"


def test_determinism(sim_a, sim_b):
    msgs = [{"role": "user", "content": "Explain why the sky is blue, step by step."}]

    def ask(sim, **kw):
        return client(sim).chat.completions.create(model=MODEL, messages=msgs, max_tokens=60, **kw)

    a1 = ask(sim_a, temperature=0).choices[0].message.content
    a2 = ask(sim_a, temperature=0, seed=5).choices[0].message.content
    b1 = ask(sim_b, temperature=0).choices[0].message.content
    b2 = ask(sim_b, temperature=0, seed=5).choices[0].message.content
    assert a1 == a2 and b1 == b2  # greedy: the request seed does not matter
    # the quantized lane A follows the native text for a documented number of words, then diverges
    from lanemon.sim.divergence import divergence_word
    from lanemon.sim.tokenizer import chat_prompt_text

    d = divergence_word(chat_prompt_text([("user", msgs[0]["content"])]), 0)
    if d < len(b1.split()):
        assert a1.split()[:d] == b1.split()[:d] and a1.split()[d] != b1.split()[d]
    else:  # the divergence lies beyond this 60-token window
        assert a1 == b1
    s1 = ask(sim_b, temperature=0.8, seed=7).choices[0].message.content
    s2 = ask(sim_b, temperature=0.8, seed=7).choices[0].message.content
    assert s1 == s2
    prompt = "Write about anything."
    outs = {client(sim_b).completions.create(model=MODEL, prompt=prompt, temperature=1.0).choices[0].text
            for _ in range(3)}
    assert len(outs) > 1


# ---------------------------------------------------------------- errors


def test_unknown_model_is_404(sim_a):
    with pytest.raises(openai.NotFoundError) as ei:
        client(sim_a).chat.completions.create(model="gpt-nope", messages=[{"role": "user", "content": "hi"}])
    assert ei.value.status_code == 404
    assert ei.value.body["code"] == "model_not_found"


def test_missing_model_means_first(sim_b):
    r = httpx.post(sim_b.base_url + "/completions", json={"prompt": "hi", "max_tokens": 3}, timeout=10)
    assert r.status_code == 200 and r.json()["model"] == MODEL


@pytest.mark.parametrize(
    "path,body",
    [
        ("/chat/completions", b"{not json"),
        ("/chat/completions", b"[1, 2]"),
        ("/chat/completions", json.dumps({"model": MODEL}).encode()),
        ("/completions", json.dumps({"model": MODEL}).encode()),
        ("/completions", json.dumps({"model": MODEL, "prompt": "x", "max_tokens": 0}).encode()),
        ("/completions", json.dumps({"model": MODEL, "prompt": "x", "max_tokens": "ten"}).encode()),
        ("/completions", json.dumps({"model": MODEL, "prompt": "x", "n": 2}).encode()),
        ("/chat/completions", json.dumps({"model": MODEL, "messages": "hi"}).encode()),
    ],
)
def test_invalid_body_is_400_json(sim_b, path, body):
    r = httpx.post(sim_b.base_url + path, content=body, headers={"content-type": "application/json"}, timeout=10)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["message"]
    assert set(err) == {"message", "type", "param", "code"}
    assert r.headers["x-sim-request-id"]


def test_openai_client_sees_bad_request(sim_a):
    with pytest.raises(openai.BadRequestError):
        client(sim_a).completions.create(model=MODEL, prompt="x", n=2)


def test_prompt_longer_than_context_is_400(sim_b):
    prompt = "\n" * (1_048_576 + 1)  # every newline is one token
    r = httpx.post(sim_b.base_url + "/completions", json={"model": MODEL, "prompt": prompt, "max_tokens": 1},
                   timeout=20)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "context_length_exceeded"


# ---------------------------------------------------------------- logprobs


def test_lane_a_rejects_logprobs(sim_a):
    with pytest.raises(openai.BadRequestError) as ei:
        client(sim_a).completions.create(model=MODEL, prompt="hi", logprobs=1, max_tokens=3)
    assert "logprobs are not supported" in ei.value.message
    with pytest.raises(openai.BadRequestError):
        client(sim_a).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                              logprobs=True, max_tokens=3)


def test_lane_b_rejects_prompt_logprobs_serves_generation_logprobs(sim_b):
    c = client(sim_b)
    with pytest.raises(openai.BadRequestError):
        c.completions.create(model=MODEL, prompt="hi there", echo=True, logprobs=1, max_tokens=3)
    r = c.completions.create(model=MODEL, prompt="hi there", logprobs=2, max_tokens=6, temperature=0)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == r.usage.completion_tokens == 6
    assert "".join(lp.tokens) == r.choices[0].text
    assert all(v < 0 for v in lp.token_logprobs)
    assert all(len(t) == 2 for t in lp.top_logprobs)
    chat = c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                     logprobs=True, top_logprobs=3, max_tokens=5, temperature=0)
    content = chat.choices[0].logprobs.content
    assert "".join(e.token for e in content) == chat.choices[0].message.content
    assert all(e.logprob < 0 and len(e.top_logprobs) == 3 for e in content)
    assert content[0].top_logprobs[0].token == content[0].token
    # streamed: one logprobs entry per content chunk
    stream = c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                       logprobs=True, top_logprobs=1, max_tokens=5, temperature=0, stream=True)
    entries = [ch.choices[0].logprobs.content[0] for ch in stream
               if ch.choices and ch.choices[0].delta.content]
    assert [e.logprob for e in entries] == [e.logprob for e in content]


def test_full_logprobs_override(sim_a_full):
    r = client(sim_a_full).completions.create(model=MODEL, prompt="one two three", echo=True, logprobs=1,
                                              max_tokens=4, temperature=0)
    lp = r.choices[0].logprobs
    n_prompt = count_tokens("one two three")
    assert r.choices[0].text.startswith("one two three")
    assert len(lp.tokens) == n_prompt + 4
    assert lp.token_logprobs[0] is None and all(v < 0 for v in lp.token_logprobs[1:])


# ---------------------------------------------------------------- tools

TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}, "encoding": {"type": "string"}, "max_bytes": {"type": "integer"}},
            "required": ["path", "encoding"]}}},
    {"type": "function", "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]


def test_tool_call_streamed_in_pieces(sim_b):
    stream = client(sim_b).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Use read_file to open the first file."}],
        tools=TOOLS, stream=True, stream_options={"include_usage": True}, temperature=0,
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(deltas) >= 3
    head = deltas[0]
    assert head.index == 0 and head.id and head.type == "function"
    assert head.function.name == "read_file" and head.function.arguments == ""
    arg_parts = [d.function.arguments for d in deltas[1:]]
    assert len(arg_parts) >= 2 and all(arg_parts)
    args = json.loads("".join(arg_parts))
    assert set(args) == {"path", "encoding"} and all(isinstance(v, str) and v for v in args.values())
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["tool_calls"]
    assert chunks[-1].usage.completion_tokens == count_tokens("read_file") + count_tokens("".join(arg_parts))


def test_tool_choice_forms(sim_a):
    c = client(sim_a)
    msgs = [{"role": "user", "content": "What now?"}]
    r = c.chat.completions.create(model=MODEL, messages=msgs, tools=TOOLS, temperature=0, max_tokens=20)
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason == "length"
    r = c.chat.completions.create(model=MODEL, messages=msgs, tools=TOOLS, tool_choice="required", temperature=0)
    tc = r.choices[0].message.tool_calls[0]
    assert r.choices[0].finish_reason == "tool_calls" and tc.function.name == "read_file"
    assert set(json.loads(tc.function.arguments)) == {"path", "encoding"}
    r = c.chat.completions.create(model=MODEL, messages=msgs, tools=TOOLS, temperature=0,
                                  tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert r.choices[0].message.tool_calls[0].function.name == "get_weather"
    # a follow-up turn carrying the tool result is accepted
    msgs2 = msgs + [{"role": "assistant", "content": None, "tool_calls": [tc.model_dump()]},
                    {"role": "tool", "tool_call_id": tc.id, "content": "file contents"}]
    r = c.chat.completions.create(model=MODEL, messages=msgs2, tools=TOOLS, temperature=0, max_tokens=10)
    assert r.choices[0].message.content


# ---------------------------------------------------------------- ground truth


def test_trace_matches_client():
    # its own lane at 5x speed: at 50x a token is due every 0.2 ms and sleep jitter on a busy
    # machine makes the pace measured from the write times meaningless
    ts = 0.2
    with SimThread("tensorfold-exl3", time_scale=ts, seed=0) as sim:
        _trace_matches_client(sim, ts)


def _trace_matches_client(sim_a, TS):
    c = client(sim_a)
    with c.chat.completions.with_streaming_response.create(
        model=MODEL, messages=[{"role": "user", "content": "Write an essay about rivers."}],
        stream=True, stream_options={"include_usage": True}, temperature=0, max_tokens=48,
    ) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        rid = resp.headers["x-sim-request-id"]
        t0 = time.perf_counter()
        first_token_at = None
        n_content, usage = 0, None
        for ch in resp.parse():
            if ch.choices and ch.choices[0].delta.content:
                n_content += 1
                if first_token_at is None:
                    first_token_at = time.perf_counter() - t0
            if ch.usage is not None:
                usage = ch.usage
    rec = trace_by_id(sim_a, rid)
    assert rec["status"] == "ok" and rec["finish_reason"] in ("stop", "length")
    assert rec["endpoint"] == "chat.completions" and rec["stream"] is True
    assert rec["category"] == "prose"
    assert rec["completion_tokens"] == usage.completion_tokens == n_content == len(rec["token_times_s"])
    assert rec["prompt_tokens"] == usage.prompt_tokens
    assert rec["cached_tokens"] == 0 and rec["active_at_start"] >= 1
    times = rec["token_times_s"]
    assert times[0] == rec["ttft_s"] and times == sorted(times) and times[-1] <= rec["e2e_s"]
    # the first token is never written before its scheduled time
    assert rec["ttft_s"] >= rec["scheduled_ttft_s"] - 1e-4
    assert rec["model_ttft_s"] == pytest.approx(0.17 * TS)
    # decode pace follows the prose C1 rate of lane A (88 tok/s), scaled
    decode_rate = (len(times) - 1) / (times[-1] - times[0]) * TS
    assert decode_rate == pytest.approx(88, rel=0.25)


def test_trace_clear_and_errors_recorded(sim_b):
    assert httpx.delete(sim_b.root_url + "/sim/trace").status_code == 200
    assert trace(sim_b) == []
    httpx.post(sim_b.base_url + "/completions", content=b"nope", timeout=10)
    recs = trace(sim_b)
    assert len(recs) == 1 and recs[0]["status"] == "error" and recs[0]["http_status"] == 400


def test_prefix_cache_lane_b(sim_b):
    httpx.delete(sim_b.root_url + "/sim/cache")
    prompt = long_prompt(2950, "cache-b")

    def once():
        raw = client(sim_b).completions.with_raw_response.create(
            model=MODEL, prompt=prompt, max_tokens=1, temperature=0)
        return raw.parse(), trace_by_id(sim_b, raw.headers["x-sim-request-id"])

    r1, t1 = once()
    r2, t2 = once()
    assert r1.usage.prompt_tokens == r2.usage.prompt_tokens == 2950
    assert r1.usage.prompt_tokens_details.cached_tokens == 0
    assert r2.usage.prompt_tokens_details.cached_tokens == 2949 == t2["cached_tokens"]
    assert t2["scheduled_ttft_s"] < t1["scheduled_ttft_s"] / 2
    # measured like the write-up: prompt tokens / TTFT, unscaled
    assert 2950 / (t1["model_ttft_s"] / TS) == pytest.approx(3654, rel=0.02)
    assert 2950 / (t2["model_ttft_s"] / TS) == pytest.approx(12542, rel=0.02)
    # a prompt sharing only the first blocks hits those blocks
    r3 = client(sim_b).completions.create(model=MODEL, prompt=prompt[:1500] + " something else entirely",
                                          max_tokens=1)
    assert r3.usage.prompt_tokens_details.cached_tokens % 256 == 0
    assert 0 < r3.usage.prompt_tokens_details.cached_tokens < 2949


def test_no_prefix_cache_lane_a(sim_a):
    prompt = long_prompt(2950, "cache-a")
    recs = []
    for _ in range(2):
        raw = client(sim_a).completions.with_raw_response.create(model=MODEL, prompt=prompt, max_tokens=1)
        assert raw.parse().usage.prompt_tokens_details.cached_tokens == 0
        recs.append(trace_by_id(sim_a, raw.headers["x-sim-request-id"]))
    assert recs[0]["model_ttft_s"] == pytest.approx(recs[1]["model_ttft_s"])
    assert recs[1]["cached_tokens"] == 0


async def test_queueing_beyond_16_streams():
    # at full speed a request of 60 tokens lasts ~0.8 s: long enough that all 20 are in before the first
    # 16 finish, even when the client is slow to send them on a loaded machine (at 0.2 s it was not, once)
    with SimThread("tensorfold-exl3", time_scale=1.0) as sim:
        ac = AsyncOpenAI(base_url=sim.base_url, api_key="x", max_retries=0, timeout=30)
        try:
            async def one(i):
                r = await ac.completions.create(model=MODEL, prompt=f"Hello number {i}", max_tokens=60)
                return r.usage.completion_tokens

            got = await asyncio.gather(*(one(i) for i in range(20)))
        finally:
            await ac.close()
        assert got == [60] * 20
        recs = trace(sim)
    assert len(recs) == 20 and all(r["status"] == "ok" for r in recs)
    assert max(r["active_at_start"] for r in recs) == 16
    queued = [r for r in recs if r["queued_s"] > 0.01]
    assert len(queued) >= 4
    for r in queued:  # queue time is part of the scheduled and the actual TTFT
        assert r["scheduled_ttft_s"] >= r["queued_s"] + r["model_ttft_s"] - 1e-6
        assert r["ttft_s"] >= r["queued_s"]


def test_stop_is_prompt_with_open_stream():
    sim = SimThread("sglang-native", time_scale=1.0).start()
    stream = client(sim).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Write a long story."}], stream=True, max_tokens=400)
    next(iter(stream))  # role chunk: the stream is open and decoding at real speed
    t = time.perf_counter()
    sim.stop()
    assert time.perf_counter() - t < 2.5
    with pytest.raises(Exception):
        httpx.get(sim.root_url + "/health", timeout=1)


# ---------------------------------------------------------------- subprocess CLI


def test_python_m_sim_announces_serves_and_stops_on_sigterm():
    proc = subprocess.Popen(
        [sys.executable, "-m", "lanemon.sim", "--profile", "sglang-native", "--port", "0", "--time-scale", "0.02"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("lanemon sim sglang-native listening on http://127.0.0.1:"), line
        base = line.rsplit(" ", 1)[1]
        assert base.endswith("/v1") and not base.endswith(":0/v1")
        r = httpx.get(base + "/models", timeout=10)
        assert r.status_code == 200 and r.json()["data"][0]["id"] == MODEL
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, -signal.SIGTERM)
    assert "Traceback" not in err, err


def test_python_m_sim_unknown_profile():
    proc = subprocess.run([sys.executable, "-m", "lanemon.sim", "--profile", "nope", "--port", "0"],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope" in lines[0]
