"""Why a request's usage block cannot be true (pure): the judgement :func:`~lanemon.measure.records.finish` passes
on a record that just ended (a bad usage block makes the request a ``malformed`` error, docs/METRICS.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lanemon.measure.records import RequestRecord

MAX_TOKENS_PER_CHUNK = 256
"""More completion tokens than this per token chunk is absurd usage (coalescing servers and speculative
decoding put a handful, not hundreds, in one chunk)."""


def _bad_count(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return f"usage.{key} is {value!r}, not an integer"
    if value < 0:
        return f"usage.{key} is negative ({value})"
    return None


def usage_problem(rec: RequestRecord) -> str | None:
    """Why ``rec``'s usage cannot be true, or None: bad values (from the stream), a token count with no
    token chunk, more tokens than the chunks could carry, reasoning or cached counts above their totals."""
    if rec.usage_problem:
        return rec.usage_problem
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"):
        bad = _bad_count(key, getattr(rec, key))
        if bad:
            return bad
    for n in rec.chunk_tokens:
        bad = _bad_count("completion_tokens (running count)", n)
        if bad:
            return bad.replace("is negative", "went down by")
    ct = rec.completion_tokens
    chunks = len(rec.token_ns)
    if ct is not None:
        if ct > 0 and chunks == 0:
            return f"usage says {ct} completion tokens but no token chunk arrived"
        # reasoning the lane counted but did not stream (hidden reasoning) came in no chunk
        hidden = rec.reasoning_tokens if rec.reasoning_tokens is not None and not rec.reasoning_chunks else 0
        if ct - hidden > MAX_TOKENS_PER_CHUNK * chunks:
            return f"usage says {ct} completion tokens for {chunks} token chunks (absurd)"
        if rec.reasoning_tokens is not None and rec.reasoning_tokens > ct:
            return f"usage says {rec.reasoning_tokens} reasoning tokens of {ct} completion tokens"
    if rec.cached_tokens is not None and rec.prompt_tokens is not None and rec.cached_tokens > rec.prompt_tokens:
        return f"usage says {rec.cached_tokens} cached of {rec.prompt_tokens} prompt tokens"
    return None
