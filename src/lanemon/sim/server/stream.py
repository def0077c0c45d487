"""The generation response: one job run through the lane scheduler and written as SSE chunks or one JSON body.

:class:`GenerationResponse` is an ASGI callable.  It asks the lane
(:class:`lanemon.sim.engine.Lane`) for token deadlines, writes each chunk when
its token is due, marks the write time in the ground-truth trace, and ends the
request's trace record (``ok``, ``cancelled`` when the client went away,
``aborted`` when the server shuts down).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Callable

import orjson

from .. import engine as eng
from .jobs import Job
from .logprobs import chat_lp_entry, completion_lp
from .state import ApiError, SimState

__all__ = ["GenerationResponse", "usage_block"]


def usage_block(job: Job, completion_tokens: int) -> dict:
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


def role_choice() -> dict:
    """The chat stream's first choice: the assistant role with empty content."""
    return {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}


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
        usage = usage_block(job, emitted) if job.continuous_usage else None
        out: list[tuple[bytes, bool]] = []
        if job.endpoint == "chat.completions":
            if i == 0:
                role = role_choice()
                out.append((self._chunk([role], usage_block(job, 0) if job.continuous_usage else None), False))
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
                lp = {"content": [chat_lp_entry(tok, i, job.logprobs_k)]}
            out.append((self._chunk([{"index": 0, "delta": {"content": tok}, "logprobs": lp,
                                      "finish_reason": None}], usage), True))
            return out
        # completions
        out.append((self._completion_chunk([job.pieces[i]], i, usage), True))
        return out

    def _group_chunks(self, i: int, emitted: int) -> list[tuple[bytes, bool]]:
        """Text replies with reasoning and/or coalesced chunks: one chunk per group of tokens, written
        when the group's last token is due (a group may carry reasoning *and* content)."""
        job = self.job
        if job.chunk_ends is not None and i not in job.chunk_ends and i < job.n_tokens - 1:
            return []
        start, self._chunk_start = self._chunk_start, i + 1
        usage = usage_block(job, emitted) if job.continuous_usage else None
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
                role = role_choice()
                out.append((self._chunk([role], usage_block(job, 0) if job.continuous_usage else None), False))
            delta: dict[str, Any] = {}
            if reasoning:
                delta["reasoning_content"] = reasoning
            if content:
                delta["content"] = "".join(content)
            lp = None
            if job.logprobs_k is not None and content:
                lp = {"content": [chat_lp_entry(job.pieces[j], j, job.logprobs_k) for j in content_idx]}
            out.append((self._chunk([{"index": 0, "delta": delta, "logprobs": lp, "finish_reason": None}], usage),
                        True))
            return out
        # completions (no reasoning there): the group's text in one chunk
        out.append((self._completion_chunk(content, start, usage), True))
        return out

    def _completion_chunk(self, tokens: list[str], start: int, usage: dict | None) -> bytes:
        """One completions chunk with *tokens* (the first at index *start*); the echoed prompt leads the first."""
        job = self.job
        text = "".join(tokens)
        lp = None
        if start == 0 and job.echo is not None:
            text = job.echo + text
        if job.logprobs_k is not None:
            lp = completion_lp(tokens, start, job.logprobs_k, len(job.echo or "") + self._offset)
            if start == 0 and job.echo is not None:
                lp = self._with_prompt_lp(lp)
        self._offset += sum(len(t) for t in tokens)
        return self._chunk([{"index": 0, "text": text, "logprobs": lp, "finish_reason": None}], usage)

    def _with_prompt_lp(self, lp: dict) -> dict:
        """The echoed prompt's logprobs (the first token has none) followed by *lp*'s."""
        job = self.job
        plp = completion_lp(job.echo_tokens, 0, job.logprobs_k, 0, prompt=True)
        for key in plp:
            plp[key].extend(lp[key])
        return plp

    async def _ticks(self):
        job = self.job
        return self.state.lane.run(job.rec, prompt_tokens=job.prompt_tokens, n_tokens=job.n_tokens,
                                   category=job.category)

    async def _each_token(self, disconnected: asyncio.Event, on_token: Callable) -> tuple[str, int]:
        """Run the job's token clock, calling ``await on_token(i, emitted)`` per token; returns the status
        (``ok``, ``cancelled`` when the client went away, ``aborted`` when the simulator shuts down) and how
        many tokens were emitted."""
        status, emitted = "ok", 0
        try:
            async with contextlib.aclosing(await self._ticks()) as ticks:
                async for i in ticks:
                    if disconnected.is_set():
                        status = "cancelled"
                        break
                    emitted = i + 1
                    await on_token(i, emitted)
        except eng.Closed:
            status = "aborted"
        except OSError:  # the client's socket went away while a chunk was written
            status = "cancelled"
        return status, emitted

    # -- streaming -----------------------------------------------------------
    async def _stream(self, send: Callable, disconnected: asyncio.Event) -> None:
        job, lane, rec = self.job, self.state.lane, self.job.rec
        await send({"type": "http.response.start", "status": 200,
                    "headers": self._headers(b"text/event-stream; charset=utf-8")})

        async def write(i: int, emitted: int) -> None:
            for data, carries in self._token_chunks(i, emitted):
                began = time.perf_counter()  # the token's time is when its write began (see mark_token)
                await send({"type": "http.response.body", "body": data, "more_body": True})
                lane.mark_token(rec, carries, began)

        status, emitted = await self._each_token(disconnected, write)
        rec["completion_tokens"] = emitted
        finish = job.finish_reason if status == "ok" else None
        try:
            if status != "cancelled":
                if job.n_tokens == 0 and status == "ok" and job.endpoint == "chat.completions":
                    role = role_choice()
                    await send({"type": "http.response.body", "body": self._chunk([role]), "more_body": True})
                if status == "ok":
                    usage = usage_block(job, emitted) if job.continuous_usage else None
                    if job.endpoint == "chat.completions":
                        fin = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}
                    else:
                        fin = {"index": 0, "text": "", "logprobs": None, "finish_reason": finish}
                    tail = self._chunk([fin], usage)
                    if job.include_usage:
                        tail += self._chunk([], usage_block(job, emitted))
                    tail += b"data: [DONE]\n\n"
                    await send({"type": "http.response.body", "body": tail, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            status = "cancelled"
        lane.finish(rec, status, finish)

    # -- non-streaming ---------------------------------------------------------
    async def _unary(self, send: Callable, disconnected: asyncio.Event) -> None:
        job, lane, rec = self.job, self.state.lane, self.job.rec

        async def mark(i: int, emitted: int) -> None:
            lane.mark_token(rec, True)

        status, emitted = await self._each_token(disconnected, mark)
        rec["completion_tokens"] = emitted
        if status != "ok":
            lane.finish(rec, status)
            if status == "aborted":
                body = ApiError(503, "the simulator is shutting down", None, "shutting_down",
                                "server_error").body()
                with contextlib.suppress(OSError):
                    await self._send_json(send, 503, body)
            return
        usage = usage_block(job, emitted)
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
                lp = {"content": [chat_lp_entry(t, i, job.logprobs_k) for i, t in enumerate(job.pieces)]}
            choice = {"index": 0, "message": message, "logprobs": lp, "finish_reason": job.finish_reason}
            obj = {"id": job.resp_id, "object": "chat.completion", "created": job.created, "model": job.model,
                   "choices": [choice], "usage": usage}
        else:
            text = "".join(job.pieces)
            lp = None
            if job.logprobs_k is not None:
                start = len(job.echo or "")
                lp = completion_lp(job.pieces, 0, job.logprobs_k, start)
                if job.echo is not None:
                    lp = self._with_prompt_lp(lp)
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

