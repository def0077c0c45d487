"""Request validation and job building: a request body in, a :class:`Job` (or an :class:`ApiError`) out.

What a lane *says* is decided here, from the model-side modules: generated text
(``text``), the quantized lane's divergence (``divergence``), stop strings, needle
answers (``needle``), qeval answers (``qeval_responder``), tool calls and the
scripted gauntlet agent (``agent``, ``tools``), thinking (``thinking``) and how
tokens are grouped into streamed chunks.  No IO: the streaming writer
(:mod:`.stream`) times and writes what the job holds.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import divergence
from .. import engine as eng
from .. import thinking as sim_thinking
from ..agent import decide_reply
from ..needle import needle_reply
from ..profiles import Profile
from ..text import generate, make_rng
from ..tokenizer import chat_prompt_text, chat_prompt_tokens, tokenize
from ..tools import ToolCall, split_arguments
from .state import ApiError, SimState

__all__ = ["Job", "build_completion_job", "build_chat_job", "MAX_TOP_LOGPROBS"]

MAX_TOP_LOGPROBS = 20


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
        if lp is not None and not 0 <= lp <= MAX_TOP_LOGPROBS:
            raise ApiError(400, f"'logprobs' must be between 0 and {MAX_TOP_LOGPROBS}", "logprobs")
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
    top = _opt_int(body, "top_logprobs", lo=0, hi=MAX_TOP_LOGPROBS)
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
