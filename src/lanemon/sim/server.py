"""OpenAI-compatible HTTP server of the simulator (Starlette + uvicorn).

* :func:`create_app` — the ASGI app of one lane.
* :class:`SimThread` — the app served by uvicorn in a daemon thread with its
  own event loop (used by ``lanemon demo`` and the tests).
* :func:`run` — blocking foreground serve (``lanemon sim`` and
  ``python -m lanemon.sim``); SIGINT/SIGTERM end it cleanly.

Never imports ``textual``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import math
import os
import random
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from . import engine as eng
from . import divergence
from . import metrics_endpoint
from .options import add_arguments, run_args
from . import logprobs as sim_logprobs
from .profiles import Profile, get_profile
from .needle import needle_reply
from .text import generate, make_rng
from . import thinking as sim_thinking
from .tokenizer import chat_prompt_text, chat_prompt_tokens, tokenize
from .agent import AGENTS
from .tools import ToolCall, decide_reply, split_arguments

__all__ = ["create_app", "SimThread", "run", "main", "SimState"]

_MAX_TOP_LOGPROBS = 20


# ---------------------------------------------------------------------------
# State, errors
# ---------------------------------------------------------------------------


@dataclass
class SimState:
    profile: Profile
    time_scale: float
    seed: int
    logprobs: str
    lane: eng.Lane
    needle_miss: bool = False
    agent: str = "chain"  # scripted gauntlet agent policy (sim/agent.py)
    qeval: Any = None  # QevalResponder: answers qeval task prompts (sim/qeval_responder.py)
    thinking: bool = False  # chat replies think first (reasoning_content) unless the request says not to
    reasoning_tokens: int = sim_thinking.DEFAULT_REASONING_TOKENS  # reasoning budget at effort "medium"
    tokens_per_chunk: int = 1  # tokens coalesced into one streamed chunk (after the first token)
    spec_accept: tuple[int, int] | None = None  # speculative decoding: tokens per chunk drawn from lo..hi
    usage: str = "continuous"  # continuous | final (continuous_usage_stats -> 400) | none (never usage)
    created: int = field(default_factory=lambda: int(time.time()))
    _entropy: random.Random = field(default_factory=lambda: random.Random(os.urandom(16)))


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 type_: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type_

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def _json(data: Any, status: int = 200, headers: dict | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, headers=headers, media_type="application/json")


# ---------------------------------------------------------------------------
# Request parsing / validation
# ---------------------------------------------------------------------------


def _opt_int(body: dict, key: str, *, lo: int | None = None, hi: int | None = None) -> int | None:
    v = body.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise ApiError(400, f"'{key}' must be an integer", key)
    if lo is not None and v < lo:
        raise ApiError(400, f"'{key}' must be >= {lo}, got {v}", key)
    if hi is not None and v > hi:
        raise ApiError(400, f"'{key}' must be <= {hi}, got {v}", key)
    return v


def _opt_bool(body: dict, key: str) -> bool:
    v = body.get(key)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise ApiError(400, f"'{key}' must be a boolean", key)
    return v


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                out.append(part["text"])
            else:
                raise ApiError(400, f"{where}: only text content parts are supported", "messages")
        return "".join(out)
    raise ApiError(400, f"{where}: content must be a string or a list of text parts", "messages")


@dataclass
class Job:
    """Everything one generation request needs after validation."""

    endpoint: str  # "completions" | "chat.completions"
    stream: bool
    model: str
    rec: dict
    prompt_tokens: list[str]
    category: str
    pieces: list[str]  # output tokens (text replies)
    finish_reason: str
    reasoning_pieces: list[str] = field(default_factory=list)  # thinking tokens, streamed before ``pieces``
    chunk_ends: frozenset[int] | None = None  # token indices that end a streamed chunk (None: every token)
    tool_call: ToolCall | None = None
    tool_groups: list[list[str]] = field(default_factory=list)
    name_tokens: int = 0
    tool_tail: int = 0  # tool-call markup tokens decoded after the arguments, never streamed
    include_usage: bool = False
    continuous_usage: bool = False
    logprobs_k: int | None = None  # None: no logprobs; k: top-k alternatives
    echo: str | None = None
    echo_tokens: list[str] = field(default_factory=list)
    resp_id: str = ""
    created: int = 0

    @property
    def n_tokens(self) -> int:
        if self.tool_call is not None:
            return self.name_tokens + sum(len(g) for g in self.tool_groups) + self.tool_tail
        return len(self.reasoning_pieces) + len(self.pieces)


def _common(state: SimState, body: dict, endpoint: str) -> dict:
    p = state.profile
    model = body.get("model")
    if model is None or model == "":
        model = p.models[0]
    if not isinstance(model, str):
        raise ApiError(400, "'model' must be a string", "model")
    if model not in p.models:
        raise ApiError(404, f"The model `{model}` does not exist.", "model", "model_not_found")
    n = _opt_int(body, "n")
    if n is not None and n != 1:
        raise ApiError(400, "only n=1 is supported", "n")
    stream = _opt_bool(body, "stream")
    if endpoint == "chat.completions" and body.get("max_completion_tokens") is not None:
        max_tokens = _opt_int(body, "max_completion_tokens", lo=1)
    else:
        max_tokens = _opt_int(body, "max_tokens", lo=1)
    temp = body.get("temperature")
    if temp is not None:
        if isinstance(temp, bool) or not isinstance(temp, (int, float)) or not math.isfinite(temp) or temp < 0:
            raise ApiError(400, "'temperature' must be a number >= 0", "temperature")
    else:
        temp = p.default_temperature
    seed = _opt_int(body, "seed")
    stop = body.get("stop")
    if stop is None:
        stops: list[str] = []
    elif isinstance(stop, str):
        stops = [stop]
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = list(stop)
    else:
        raise ApiError(400, "'stop' must be a string or a list of strings", "stop")
    stops = [s for s in stops if s]
    so = body.get("stream_options")
    if so is not None and not isinstance(so, dict):
        raise ApiError(400, "'stream_options' must be an object", "stream_options")
    so = so or {}
    if state.usage == "none":
        so = {}  # a server that never reports usage
    elif state.usage == "final" and so.get("continuous_usage_stats"):
        raise ApiError(400, "stream_options.continuous_usage_stats is not supported by this server",
                       "stream_options")
    return {
        "model": model,
        "stream": stream,
        "max_tokens": max_tokens,
        "temperature": float(temp),
        "seed": seed,
        "stops": stops,
        "include_usage": bool(so.get("include_usage")),
        "continuous_usage": bool(so.get("continuous_usage_stats")),
    }


def _make_rng(state: SimState, gen_prompt: str, c: dict) -> random.Random:
    if c["temperature"] == 0:
        return make_rng(gen_prompt, f"{state.seed}")  # greedy: the request seed does not matter
    if c["seed"] is not None:
        return make_rng(gen_prompt, f"{state.seed}:{c['seed']}:{c['temperature']}")
    return random.Random(state._entropy.getrandbits(128))


def _apply_stop(text: str, finish: str, stops: list[str]) -> tuple[str, str]:
    cut = min((i for s in stops if (i := text.find(s)) >= 0), default=-1)
    if cut >= 0:
        return text[:cut], "stop"
    return text, finish


def _check_context(p: Profile, n_prompt: int, param: str) -> None:
    if n_prompt > p.context_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {p.context_len} tokens. However, your prompt "
            f"has {n_prompt} tokens. Please reduce the length of the prompt.",
            param,
            "context_length_exceeded",
        )


def _logprobs_reject() -> ApiError:
    return ApiError(400, "logprobs are not supported by this endpoint", "logprobs", "logprobs_not_supported")


def _needle_override(state: SimState, question: str, text: str, finish: str, category: str,
                     c: dict) -> tuple[str, str, str]:
    """Needle questions (:mod:`lanemon.sim.needle`) are answered from the prompt.

    Returns ``(text, finish_reason, decode category)``: the reply replaces the
    generated text and decodes at the ``extraction`` rate; any other prompt is
    passed through unchanged.
    """
    answer = needle_reply(question, state.needle_miss)
    if answer is None:
        return text, finish, category
    pieces = tokenize(answer)
    if c["max_tokens"] is not None and len(pieces) > c["max_tokens"]:
        return "".join(pieces[: c["max_tokens"]]), "length", "extraction"
    return answer, "stop", "extraction"


def _chunking(state: SimState, job: Job) -> None:
    """Coalesce a text reply's tokens into chunks: the first token alone, then ``tokens_per_chunk``
    tokens each, or a speculative-decoding acceptance length drawn from ``spec_accept`` per step."""
    n = job.n_tokens
    if job.tool_call is not None or n <= 1 or (state.tokens_per_chunk <= 1 and state.spec_accept is None):
        return
    rng = random.Random(f"{state.seed}:{job.rec['id']}:chunks")
    ends = {0}
    i = 0
    while i < n - 1:
        if state.spec_accept is not None:
            step = rng.randint(*state.spec_accept)
        else:
            step = state.tokens_per_chunk
        i = min(n - 1, i + max(1, step))
        ends.add(i)
    job.chunk_ends = frozenset(ends)


def _apply_thinking(state: SimState, job: Job, body: dict, prompt_text: str, max_tokens: int | None) -> None:
    """Think first (chat text replies): reasoning tokens count against ``max_tokens``."""
    on, scale = sim_thinking.thinking_switch(body, state.thinking)
    if not on or job.tool_call is not None:
        return
    budget = max(1, round(state.reasoning_tokens * scale))
    if max_tokens is not None:
        budget = min(budget, max_tokens)
    rng = make_rng(prompt_text, f"{state.seed}:thinking")
    job.reasoning_pieces = sim_thinking.reasoning_pieces(prompt_text, rng, budget)
    if max_tokens is not None and len(job.reasoning_pieces) + len(job.pieces) > max_tokens:
        job.pieces = job.pieces[: max_tokens - len(job.reasoning_pieces)]
        job.finish_reason = "length"
    job.rec["reasoning_tokens"] = len(job.reasoning_pieces)


def build_completion_job(state: SimState, body: dict, rec: dict) -> Job:
    p = state.profile
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if prompt is None:
        raise ApiError(400, "'prompt' is required", "prompt")
    if not isinstance(prompt, str):
        raise ApiError(400, "'prompt' must be a string or a list of one string", "prompt")
    c = _common(state, body, "completions")
    lp = body.get("logprobs")
    if isinstance(lp, bool):
        lp = int(lp) if lp else None
    if lp is not None and not isinstance(lp, int):
        raise ApiError(400, "'logprobs' must be an integer", "logprobs")
    echo = _opt_bool(body, "echo")
    prompt_lp = body.get("prompt_logprobs")
    if lp is not None or prompt_lp is not None:
        if state.logprobs == "reject":
            raise _logprobs_reject()
        if state.logprobs == "no_prompt" and (echo and lp is not None or prompt_lp is not None):
            raise ApiError(400, "prompt logprobs are not supported by this server (echo with logprobs)",
                           "echo", "prompt_logprobs_not_supported")
        if lp is not None and not 0 <= lp <= _MAX_TOP_LOGPROBS:
            raise ApiError(400, f"'logprobs' must be between 0 and {_MAX_TOP_LOGPROBS}", "logprobs")
    ptoks = tokenize(prompt)
    _check_context(p, len(ptoks), "prompt")
    category = eng.classify(prompt)
    rng = _make_rng(state, prompt, c)
    text, finish = generate(prompt, state.seed, category, c["max_tokens"], rng)
    text, finish = divergence.apply(state.profile.name, prompt, state.seed, text, finish,
                                    temperature=c["temperature"], category=category, max_tokens=c["max_tokens"])
    text, finish = _apply_stop(text, finish, c["stops"])
    text, finish, category = _needle_override(state, prompt, text, finish, category, c)
    job = Job(
        endpoint="completions", stream=c["stream"], model=c["model"], rec=rec, prompt_tokens=ptoks,
        category=category, pieces=tokenize(text), finish_reason=finish,
        include_usage=c["include_usage"], continuous_usage=c["continuous_usage"], logprobs_k=lp,
        echo=prompt if echo else None, echo_tokens=ptoks if echo else [],
        resp_id=f"cmpl-{uuid.uuid4().hex}", created=int(time.time()),
    )
    _chunking(state, job)
    return job


def build_chat_job(state: SimState, body: dict, rec: dict) -> Job:
    p = state.profile
    msgs = body.get("messages")
    if msgs is None:
        raise ApiError(400, "'messages' is required", "messages")
    if not isinstance(msgs, list) or not msgs:
        raise ApiError(400, "'messages' must be a non-empty list", "messages")
    pairs: list[tuple[str, str]] = []
    last_user = ""
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ApiError(400, f"messages[{i}] must be an object with a 'role'", "messages")
        text = _content_text(m.get("content"), f"messages[{i}]")
        if m.get("tool_calls"):
            text += "".join(
                f"<tool_call>{(tc.get('function') or {}).get('name', '')}"
                f"{(tc.get('function') or {}).get('arguments', '')}</tool_call>"
                for tc in m["tool_calls"] if isinstance(tc, dict)
            )
        pairs.append((m["role"], text))
        if m["role"] == "user":
            last_user = text
    c = _common(state, body, "chat.completions")
    want_lp = _opt_bool(body, "logprobs")
    top = _opt_int(body, "top_logprobs", lo=0, hi=_MAX_TOP_LOGPROBS)
    if want_lp and state.logprobs == "reject":
        raise _logprobs_reject()
    if body.get("prompt_logprobs") is not None and state.logprobs != "full":
        raise ApiError(400, "prompt logprobs are not supported by this server", "prompt_logprobs",
                       "prompt_logprobs_not_supported")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise ApiError(400, "'tools' must be a list", "tools")
    rendered = chat_prompt_text(pairs)
    ptoks = chat_prompt_tokens(rendered)
    _check_context(p, len(ptoks), "messages")
    category = eng.classify(last_user or rendered)
    rng = _make_rng(state, rendered, c)
    job = Job(
        endpoint="chat.completions", stream=c["stream"], model=c["model"], rec=rec, prompt_tokens=ptoks,
        category=category, pieces=[], finish_reason="stop",
        include_usage=c["include_usage"], continuous_usage=c["continuous_usage"],
        logprobs_k=(top or 0) if want_lp else None,
        resp_id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()),
    )
    tc = decide_reply(msgs, tools, body.get("tool_choice"), rng, last_user, state.agent)
    if isinstance(tc, str):  # the scripted gauntlet agent answers in text (sim/agent.py)
        job.pieces = tokenize(tc)
        job.category = "extraction"
        _chunking(state, job)
        return job
    if tc is not None:
        job.tool_call = tc
        job.name_tokens = max(1, len(tokenize(tc.name)))
        job.tool_groups = split_arguments(tc.arguments)
        job.tool_tail = tc.tail_tokens
        job.finish_reason = "tool_calls"
        job.category = "extraction"  # short structured output
        return job
    text, finish = generate(rendered, state.seed, category, c["max_tokens"], rng)
    text, finish = divergence.apply(state.profile.name, rendered, state.seed, text, finish,
                                    temperature=c["temperature"], category=category, max_tokens=c["max_tokens"])
    text, finish = _apply_stop(text, finish, c["stops"])
    text, finish, job.category = _needle_override(state, last_user or rendered, text, finish, category, c)
    if state.qeval is not None and (qa := state.qeval.reply(last_user, c["max_tokens"])) is not None:
        text, finish = qa  # a qeval task prompt: only the text changes (sim/qeval_responder.py)
    job.pieces = tokenize(text)
    job.finish_reason = finish
    _apply_thinking(state, job, body, rendered, c["max_tokens"])
    _chunking(state, job)
    return job


# ---------------------------------------------------------------------------
# Made-up logprobs
# ---------------------------------------------------------------------------


def _token_logprobs(token: str, index: int, k: int) -> tuple[float, list[tuple[str, float]]]:
    """Deterministic made-up (logprob, top-k alternatives) for one token (see sim/logprobs.py)."""
    return sim_logprobs.token_logprobs(token, index, k)


def _chat_lp_entry(token: str, index: int, k: int) -> dict:
    lp, top = _token_logprobs(token, index, k)
    b = list(token.encode("utf-8"))
    return {
        "token": token, "logprob": lp, "bytes": b,
        "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))} for t, v in top],
    }


def _completion_lp(tokens: list[str], start_index: int, k: int, offset: int, prompt: bool = False) -> dict:
    out = {"text_offset": [], "token_logprobs": [], "tokens": [], "top_logprobs": []}
    for j, tok in enumerate(tokens):
        if prompt and j == 0 and start_index == 0:
            lp, top = None, None
        else:
            lp, top = _token_logprobs(tok, start_index + j, max(1, k))
            top = {t: v for t, v in top[: max(1, k)]} if k else {tok: lp}
        out["text_offset"].append(offset)
        out["token_logprobs"].append(lp)
        out["tokens"].append(tok)
        out["top_logprobs"].append(top)
        offset += len(tok)
    return out


# ---------------------------------------------------------------------------
# The generation response (ASGI callable)
# ---------------------------------------------------------------------------


def _usage(job: Job, completion_tokens: int) -> dict:
    pt = len(job.prompt_tokens)
    out = {
        "prompt_tokens": pt,
        "completion_tokens": completion_tokens,
        "total_tokens": pt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": job.rec.get("cached_tokens") or 0},
    }
    if job.reasoning_pieces:
        out["completion_tokens_details"] = {"reasoning_tokens": min(completion_tokens, len(job.reasoning_pieces))}
    return out


class GenerationResponse:
    """Runs one job through the lane scheduler and writes the response."""

    def __init__(self, state: SimState, job: Job) -> None:
        self.state = state
        self.job = job
        self._offset = 0  # characters of completion text streamed so far
        self._chunk_start = 0  # first token index of the chunk being built (coalesced chunks)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        job = self.job
        disconnected = asyncio.Event()

        async def watch() -> None:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    disconnected.set()
                    return

        watcher = asyncio.create_task(watch())
        try:
            if job.stream:
                await self._stream(send, disconnected)
            else:
                await self._unary(send, disconnected)
        finally:
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher

    # -- helpers -----------------------------------------------------------
    def _headers(self, content_type: bytes) -> list[tuple[bytes, bytes]]:
        return [
            (b"content-type", content_type),
            (b"cache-control", b"no-cache"),
            (b"x-sim-request-id", self.job.rec["id"].encode()),
        ]

    def _chunk(self, choices: list, usage: dict | None = None) -> bytes:
        job = self.job
        obj = {
            "id": job.resp_id,
            "object": "chat.completion.chunk" if job.endpoint == "chat.completions" else "text_completion",
            "created": job.created,
            "model": job.model,
            "choices": choices,
        }
        if usage is not None:
            obj["usage"] = usage
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    def _token_chunks(self, i: int, emitted: int) -> list[tuple[bytes, bool]]:
        """Chunks to write when token *i* is ready: [(bytes, carries_token)]."""
        job = self.job
        if job.tool_call is None and (job.chunk_ends is not None or job.reasoning_pieces):
            return self._group_chunks(i, emitted)
        usage = _usage(job, emitted) if job.continuous_usage else None
        out: list[tuple[bytes, bool]] = []
        if job.endpoint == "chat.completions":
            if i == 0:
                role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                        "finish_reason": None}
                out.append((self._chunk([role], _usage(job, 0) if job.continuous_usage else None), False))
            if job.tool_call is not None:
                tc = job.tool_call
                if i == job.name_tokens - 1:
                    delta = {"tool_calls": [{"index": 0, "id": tc.id, "type": "function",
                                             "function": {"name": tc.name, "arguments": ""}}]}
                    out.append((self._chunk([{"index": 0, "delta": delta, "logprobs": None,
                                              "finish_reason": None}], usage), True))
                else:
                    j = i - job.name_tokens
                    acc = 0
                    for g in job.tool_groups:
                        acc += len(g)
                        if j == acc - 1 and g:
                            delta = {"tool_calls": [{"index": 0, "function": {"arguments": "".join(g)}}]}
                            out.append((self._chunk([{"index": 0, "delta": delta, "logprobs": None,
                                                      "finish_reason": None}], usage), True))
                            break
                return out
            tok = job.pieces[i]
            lp = None
            if job.logprobs_k is not None:
                lp = {"content": [_chat_lp_entry(tok, i, job.logprobs_k)]}
            out.append((self._chunk([{"index": 0, "delta": {"content": tok}, "logprobs": lp,
                                      "finish_reason": None}], usage), True))
            return out
        # completions
        tok = job.pieces[i]
        text = tok
        lp = None
        if i == 0 and job.echo is not None:
            text = job.echo + tok
        if job.logprobs_k is not None:
            off = len(job.echo or "") + self._offset
            lp = _completion_lp([tok], i, job.logprobs_k, off)
            if i == 0 and job.echo is not None:
                plp = _completion_lp(job.echo_tokens, 0, job.logprobs_k, 0, prompt=True)
                for key in plp:
                    plp[key].extend(lp[key])
                lp = plp
        self._offset += len(tok)
        out.append((self._chunk([{"index": 0, "text": text, "logprobs": lp, "finish_reason": None}], usage),
                    True))
        return out

    def _group_chunks(self, i: int, emitted: int) -> list[tuple[bytes, bool]]:
        """Text replies with reasoning and/or coalesced chunks: one chunk per group of tokens, written
        when the group's last token is due (a group may carry reasoning *and* content)."""
        job = self.job
        if job.chunk_ends is not None and i not in job.chunk_ends and i < job.n_tokens - 1:
            return []
        start, self._chunk_start = self._chunk_start, i + 1
        usage = _usage(job, emitted) if job.continuous_usage else None
        nr = len(job.reasoning_pieces)
        idx = range(start, i + 1)
        reasoning = "".join(job.reasoning_pieces[j] for j in idx if j < nr)
        content_idx = [j - nr for j in idx if j >= nr]
        content = [job.pieces[j] for j in content_idx]
        out: list[tuple[bytes, bool]] = []
        rec = job.rec
        rec["chunk_tokens"].append(len(idx))
        if content and rec.get("ttfo_s") is None:
            rec["ttfo_s"] = time.perf_counter() - rec["_t0"]
        if job.endpoint == "chat.completions":
            if start == 0:
                role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                        "finish_reason": None}
                out.append((self._chunk([role], _usage(job, 0) if job.continuous_usage else None), False))
            delta: dict[str, Any] = {}
            if reasoning:
                delta["reasoning_content"] = reasoning
            if content:
                delta["content"] = "".join(content)
            lp = None
            if job.logprobs_k is not None and content:
                lp = {"content": [_chat_lp_entry(job.pieces[j], j, job.logprobs_k) for j in content_idx]}
            out.append((self._chunk([{"index": 0, "delta": delta, "logprobs": lp, "finish_reason": None}], usage),
                        True))
            return out
        # completions (no reasoning there): the group's text in one chunk
        text = "".join(content)
        lp = None
        if start == 0 and job.echo is not None:
            text = job.echo + text
        if job.logprobs_k is not None:
            off = len(job.echo or "") + self._offset
            lp = _completion_lp(content, start, job.logprobs_k, off)
            if start == 0 and job.echo is not None:
                plp = _completion_lp(job.echo_tokens, 0, job.logprobs_k, 0, prompt=True)
                for key in plp:
                    plp[key].extend(lp[key])
                lp = plp
        self._offset += sum(len(t) for t in content)
        out.append((self._chunk([{"index": 0, "text": text, "logprobs": lp, "finish_reason": None}], usage), True))
        return out

    async def _ticks(self):
        job = self.job
        return self.state.lane.run(job.rec, prompt_tokens=job.prompt_tokens, n_tokens=job.n_tokens,
                                   category=job.category)

    # -- streaming -----------------------------------------------------------
    async def _stream(self, send: Callable, disconnected: asyncio.Event) -> None:
        job, lane, rec = self.job, self.state.lane, self.job.rec
        await send({"type": "http.response.start", "status": 200,
                    "headers": self._headers(b"text/event-stream; charset=utf-8")})
        status = "ok"
        emitted = 0
        try:
            async with contextlib.aclosing(await self._ticks()) as ticks:
                async for i in ticks:
                    if disconnected.is_set():
                        status = "cancelled"
                        break
                    emitted = i + 1
                    for data, carries in self._token_chunks(i, emitted):
                        await send({"type": "http.response.body", "body": data, "more_body": True})
                        lane.mark_token(rec, carries)
        except eng.Closed:
            status = "aborted"
        except OSError:
            status = "cancelled"
        rec["completion_tokens"] = emitted
        finish = job.finish_reason if status == "ok" else None
        try:
            if status != "cancelled":
                if job.n_tokens == 0 and status == "ok" and job.endpoint == "chat.completions":
                    role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                            "finish_reason": None}
                    await send({"type": "http.response.body", "body": self._chunk([role]), "more_body": True})
                if status == "ok":
                    usage = _usage(job, emitted) if job.continuous_usage else None
                    if job.endpoint == "chat.completions":
                        fin = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}
                    else:
                        fin = {"index": 0, "text": "", "logprobs": None, "finish_reason": finish}
                    tail = self._chunk([fin], usage)
                    if job.include_usage:
                        tail += self._chunk([], _usage(job, emitted))
                    tail += b"data: [DONE]\n\n"
                    await send({"type": "http.response.body", "body": tail, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            status = "cancelled"
        lane.finish(rec, status, finish)

    # -- non-streaming ---------------------------------------------------------
    async def _unary(self, send: Callable, disconnected: asyncio.Event) -> None:
        job, lane, rec = self.job, self.state.lane, self.job.rec
        status = "ok"
        emitted = 0
        try:
            async with contextlib.aclosing(await self._ticks()) as ticks:
                async for i in ticks:
                    if disconnected.is_set():
                        status = "cancelled"
                        break
                    emitted = i + 1
                    lane.mark_token(rec, True)
        except eng.Closed:
            status = "aborted"
        rec["completion_tokens"] = emitted
        if status != "ok":
            lane.finish(rec, status)
            if status == "aborted":
                body = ApiError(503, "the simulator is shutting down", None, "shutting_down",
                                "server_error").body()
                with contextlib.suppress(OSError):
                    await self._send_json(send, 503, body)
            return
        usage = _usage(job, emitted)
        if job.endpoint == "chat.completions":
            if job.tool_call is not None:
                tc = job.tool_call
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": tc.arguments}}]}
            else:
                message = {"role": "assistant", "content": "".join(job.pieces)}
                if job.reasoning_pieces:
                    message["reasoning_content"] = "".join(job.reasoning_pieces)
            lp = None
            if job.logprobs_k is not None and job.tool_call is None:
                lp = {"content": [_chat_lp_entry(t, i, job.logprobs_k) for i, t in enumerate(job.pieces)]}
            choice = {"index": 0, "message": message, "logprobs": lp, "finish_reason": job.finish_reason}
            obj = {"id": job.resp_id, "object": "chat.completion", "created": job.created, "model": job.model,
                   "choices": [choice], "usage": usage}
        else:
            text = "".join(job.pieces)
            lp = None
            if job.logprobs_k is not None:
                start = len(job.echo or "")
                lp = _completion_lp(job.pieces, 0, job.logprobs_k, start)
                if job.echo is not None:
                    plp = _completion_lp(job.echo_tokens, 0, job.logprobs_k, 0, prompt=True)
                    for key in plp:
                        plp[key].extend(lp[key])
                    lp = plp
            if job.echo is not None:
                text = job.echo + text
            choice = {"index": 0, "text": text, "logprobs": lp, "finish_reason": job.finish_reason}
            obj = {"id": job.resp_id, "object": "text_completion", "created": job.created, "model": job.model,
                   "choices": [choice], "usage": usage}
        try:
            await self._send_json(send, 200, obj)
            lane.finish(rec, "ok", job.finish_reason)
        except OSError:
            lane.finish(rec, "cancelled")

    async def _send_json(self, send: Callable, status: int, obj: dict) -> None:
        data = orjson.dumps(obj)
        await send({"type": "http.response.start", "status": status,
                    "headers": self._headers(b"application/json") + [(b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data, "more_body": False})


# ---------------------------------------------------------------------------
# App
# ---------------------------------------------------------------------------


_T0_KEY = "lanemon.sim.t0"


class _ArrivalStamp:
    """ASGI middleware: stamp the request's arrival time as early as possible."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            scope[_T0_KEY] = time.perf_counter()
        await self.app(scope, receive, send)


def create_app(profile_name: str, *, time_scale: float = 1.0, seed: int = 0, logprobs: str | None = None,
               needle_miss: bool = False, context_len: int | None = None, agent: str = "chain",
               qeval_misses: Any = None, thinking: bool = False,
               reasoning_tokens: int = sim_thinking.DEFAULT_REASONING_TOKENS, tokens_per_chunk: int = 1,
               spec_accept: tuple[int, int] | None = None, usage: str = "continuous", faults: Any = None):
    """The Starlette app simulating lane *profile_name*.

    *time_scale* multiplies every simulated duration (0.02 runs 50x faster);
    *seed* makes generated text reproducible; *logprobs* overrides the
    profile's logprobs mode (``"reject" | "no_prompt" | "full"``);
    *needle_miss* makes the lane answer needle questions with a wrong key;
    *context_len* overrides the profile's context length (tokens);
    *agent* picks the scripted gauntlet agent (``chain``, ``traversal``, ``malformed``, ``loop``; sim/agent.py);
    *thinking* makes chat replies reason first (*reasoning_tokens* at effort medium; sim/thinking.py);
    *tokens_per_chunk* coalesces K tokens per streamed chunk, *spec_accept* ``(lo, hi)`` draws each
    chunk's size like a speculative decoder's acceptance length; *usage* is ``continuous`` (honour
    ``continuous_usage_stats``), ``final`` (reject it with HTTP 400) or ``none`` (never send usage);
    *faults* is a list of fault specs (``"drop:50@0.3"``; sim/faults.py, docs/FAULTS.md).
    """
    if isinstance(tokens_per_chunk, bool) or not isinstance(tokens_per_chunk, int) or tokens_per_chunk < 1:
        raise ValueError(f"tokens_per_chunk must be a positive integer, got {tokens_per_chunk!r}")
    if spec_accept is not None:
        lo, hi = spec_accept
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"spec_accept must be (lo, hi) with 1 <= lo <= hi, got {spec_accept!r}")
        spec_accept = (lo, hi)
    if usage not in ("continuous", "final", "none"):
        raise ValueError(f"usage must be continuous, final or none, got {usage!r}")
    if isinstance(reasoning_tokens, bool) or not isinstance(reasoning_tokens, int) or reasoning_tokens < 1:
        raise ValueError(f"reasoning_tokens must be a positive integer, got {reasoning_tokens!r}")
    profile = get_profile(profile_name)
    if context_len is not None:
        if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 1:
            raise ValueError(f"context_len must be a positive integer, got {context_len!r}")
        profile = dataclasses.replace(profile, context_len=context_len)
    if not (isinstance(time_scale, (int, float)) and time_scale > 0 and math.isfinite(time_scale)):
        raise ValueError(f"time_scale must be a positive number, got {time_scale!r}")
    mode = logprobs or profile.logprobs
    if mode not in ("reject", "no_prompt", "full"):
        raise ValueError(f"logprobs mode must be reject, no_prompt or full, got {mode!r}")
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {', '.join(AGENTS)}, got {agent!r}")
    state = SimState(profile=profile, time_scale=float(time_scale), seed=int(seed), logprobs=mode,
                     lane=eng.Lane(profile, float(time_scale)), needle_miss=bool(needle_miss), agent=agent,
                     thinking=bool(thinking), reasoning_tokens=reasoning_tokens, tokens_per_chunk=tokens_per_chunk,
                     spec_accept=spec_accept, usage=usage)
    from .qeval_responder import QevalResponder  # qeval_misses: task ids answered wrong (None = default four)

    state.qeval = QevalResponder(qeval_misses)

    async def generation(request: Request, endpoint: str):
        sim_logprobs.current_noise.set(sim_logprobs.LANE_NOISE.get(profile.name, 0.0))
        t0 = request.scope.get(_T0_KEY) or time.perf_counter()
        rec = state.lane.new_record(endpoint, False, t0)
        try:
            raw = await request.body()
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise ApiError(400, "request body is not valid JSON", None, "invalid_json") from None
            if not isinstance(body, dict):
                raise ApiError(400, "request body must be a JSON object", None, "invalid_json")
            rec["stream"] = bool(body.get("stream") is True)
            if endpoint == "completions":
                job = build_completion_job(state, body, rec)
            else:
                job = build_chat_job(state, body, rec)
        except ApiError as e:
            rec["http_status"] = e.status
            rec["error"] = e.message
            state.lane.finish(rec, "error")
            return _json(e.body(), e.status, {"x-sim-request-id": rec["id"]})
        rec["model"] = job.model
        return GenerationResponse(state, job)

    async def completions(request: Request):
        return await generation(request, "completions")

    async def chat_completions(request: Request):
        return await generation(request, "chat.completions")

    async def models(request: Request):
        return _json({"object": "list", "data": [
            {"id": m, "object": "model", "created": state.created, "owned_by": "lanemon-sim",
             "max_model_len": profile.context_len} for m in profile.models]})

    async def model_one(request: Request):
        mid = request.path_params["model"]
        if mid not in profile.models:
            return _json(ApiError(404, f"The model `{mid}` does not exist.", "model", "model_not_found").body(), 404)
        return _json({"id": mid, "object": "model", "created": state.created, "owned_by": "lanemon-sim",
                      "max_model_len": profile.context_len})

    async def health(request: Request):
        return _json({"status": "ok"})

    async def info(request: Request):
        return _json({
            "profile": profile.name, "lane": profile.lane, "engine": profile.engine,
            "time_scale": state.time_scale, "seed": state.seed, "models": list(profile.models),
            "prefix_cache": profile.prefix_cache, "logprobs": state.logprobs,
            "max_parallel": profile.max_parallel, "context_len": profile.context_len,
            "active": state.lane.active, "decoding": state.lane.decoding, "needle_miss": state.needle_miss, "agent": state.agent,
            "thinking": state.thinking, "reasoning_tokens": state.reasoning_tokens,
            "tokens_per_chunk": state.tokens_per_chunk,
            "spec_accept": list(state.spec_accept) if state.spec_accept else None, "usage": state.usage,
        })

    async def trace(request: Request):
        if request.method == "DELETE":
            state.lane.clear_trace()
            return _json({"cleared": True})
        return _json({"time_scale": state.time_scale, "profile": profile.name,
                      "requests": state.lane.trace_snapshot()})

    async def cache(request: Request):
        state.lane.cache.clear()
        return _json({"cleared": True})

    async def not_found(request: Request, exc: Exception):
        return _json(ApiError(404, f"no route for {request.url.path}", None, "not_found").body(), 404)

    async def bad_method(request: Request, exc: Exception):
        return _json(ApiError(405, f"method {request.method} not allowed", None, "method_not_allowed").body(), 405)

    app = Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model_one, methods=["GET"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/sim/info", info, methods=["GET"]),
            Route("/sim/trace", trace, methods=["GET", "DELETE"]),
            Route("/sim/cache", cache, methods=["DELETE"]),
            *metrics_endpoint.routes(state),  # GET /metrics in the profile's engine naming
        ],
        exception_handlers={404: not_found, 405: bad_method},
        middleware=[Middleware(_ArrivalStamp)],
    )
    app.state.sim = state
    if faults:  # fault injection (sim/faults.py, docs/FAULTS.md): the outermost ASGI layer
        from .faults import FaultMiddleware

        return FaultMiddleware(app, faults, sim=state, seed=int(seed))
    return app


# ---------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _config(app) -> "uvicorn.Config":  # noqa: F821
    import uvicorn

    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                          timeout_graceful_shutdown=1, loop="asyncio", http="auto", ws="none")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class _QuietServer:
    """Factory for a uvicorn.Server subclass with our own signal handling."""

    @staticmethod
    def make(config, on_signal: Callable[[], None] | None):
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[override]
                if on_signal is None or threading.current_thread() is not threading.main_thread():
                    yield
                    return

                def handler(sig, frame):
                    if self.should_exit:
                        self.force_exit = True
                    self.should_exit = True
                    on_signal()

                sigs = [signal.SIGINT, signal.SIGTERM]
                old = {s: signal.signal(s, handler) for s in sigs}
                try:
                    yield
                finally:
                    for s, h in old.items():
                        signal.signal(s, h)

            def install_signal_handlers(self) -> None:  # uvicorn < 0.29
                pass

        return Server(config)


class SimThread:
    """One simulated lane served by uvicorn in a daemon thread.

    >>> with SimThread("sglang-native", time_scale=0.05) as sim:
    ...     client = OpenAI(base_url=sim.base_url, api_key="x")
    """

    def __init__(self, profile_name: str, *, host: str = "127.0.0.1", port: int = 0, time_scale: float = 1.0,
                 seed: int = 0, logprobs: str | None = None, needle_miss: bool = False,
                 context_len: int | None = None, agent: str = "chain", qeval_misses: Any = None,
                 **sim_kw: Any) -> None:
        self.profile_name = profile_name
        self.host = host
        self._req_port = port
        self.app = create_app(profile_name, time_scale=time_scale, seed=seed, logprobs=logprobs,
                              needle_miss=needle_miss, context_len=context_len, agent=agent,
                              qeval_misses=qeval_misses, **sim_kw)
        self.state: SimState = self.app.state.sim
        self.port: int | None = None
        self._sock: socket.socket | None = None
        self._server = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("SimThread not started")
        return f"http://{_url_host(self.host)}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return self.base_url[: -len("/v1")]

    def start(self, timeout: float = 10.0) -> "SimThread":
        if self._thread is not None:
            return self
        self._sock = _bind(self.host, self._req_port)
        self.port = self._sock.getsockname()[1]
        self._server = _QuietServer.make(_config(self.app), None)

        def target() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._server.serve(sockets=[self._sock]))
            except BaseException as e:  # pragma: no cover - reported by start()
                self._error = e
            finally:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=target, name=f"lanemon-sim-{self.profile_name}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"sim server failed to start: {self._error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("sim server did not start in time")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 3.0) -> None:
        if self._thread is None:
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.state.lane.close)
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive() and self._server is not None:
            self._server.force_exit = True
            self._thread.join(1.0)
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._thread = None

    def __enter__(self) -> "SimThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run(profile_name: str, *, host: str = "127.0.0.1", port: int = 8001, time_scale: float = 1.0, seed: int = 0,
        announce: Callable[[str], Any] = print, logprobs: str | None = None, needle_miss: bool = False,
        context_len: int | None = None, agent: str = "chain", qeval_misses: Any = None, **sim_kw: Any) -> None:
    """Serve lane *profile_name* in the foreground until SIGINT/SIGTERM (``sim_kw``: the thinking,
    chunking and usage options of :func:`create_app`)."""
    app = create_app(profile_name, time_scale=time_scale, seed=seed, logprobs=logprobs,
                     needle_miss=needle_miss, context_len=context_len, agent=agent, qeval_misses=qeval_misses,
                     **sim_kw)
    state: SimState = app.state.sim
    sock = _bind(host, port)
    real_port = sock.getsockname()[1]

    def on_signal() -> None:
        state.lane.close()

    server = _QuietServer.make(_config(app), on_signal)
    announce(f"lanemon sim {profile_name} listening on http://{_url_host(host)}:{real_port}/v1")
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        with contextlib.suppress(OSError):
            sock.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m lanemon.sim`` entry point."""
    ap = argparse.ArgumentParser(prog="python -m lanemon.sim",
                                 description="Run an OpenAI-compatible simulated LLM serving lane.")
    add_arguments(ap)
    return run_args(ap.parse_args(argv), "lanemon sim")
