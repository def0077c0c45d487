"""Measurement arithmetic: pure functions, no IO, unit-tested.

Definitions follow vLLM ``bench serve`` (see docs/METRICS.md):

* TTFT -- request sent to the first token-carrying chunk (reasoning included).
  Not the first byte, not the role-only first chunk.
* TTFO -- request sent to the first non-reasoning output chunk.
* ITL -- gaps between successive token-carrying chunks.
* TPOT -- (E2E - TTFT) / (output_tokens - 1).
* decode tok/s per stream -- (output_tokens - 1) / (E2E - TTFT).
* aggregate tok/s -- total output tokens / wall time.
* Token counts come from the server's usage block; without one, chunks are
  counted and the figure is marked ``estimated``.

All times in the returned objects are seconds (floats); inputs are integer
nanoseconds from the session clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lanemon.timeline import RequestRecord

NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    ok: bool
    ttft_s: float | None
    ttfo_s: float | None
    first_byte_s: float | None
    e2e_s: float | None
    output_tokens: int
    tokens_estimated: bool
    chunks: int
    tpot_s: float | None
    decode_tok_s: float | None
    itl_s: tuple[float, ...]
    prompt_tokens: int | None
    cached_tokens: int | None
    reasoning_tokens: int | None
    error_cls: str | None = None
    tokens_per_chunk: float | None = None
    """Generated tokens per token-carrying chunk (1.0 unless the server coalesces)."""
    itl_per_token_s: tuple[float, ...] = ()
    """Each inter-chunk gap divided by the tokens its chunk carried (needs per-chunk counts)."""

    @property
    def prefill_tok_s(self) -> float | None:
        """prompt tokens / TTFT (meaningful for 1-token replies on cold prompts)."""
        if self.prompt_tokens and self.ttft_s:
            return self.prompt_tokens / self.ttft_s
        return None


def _s(a: int | None, b: int | None) -> float | None:
    if a is None or b is None:
        return None
    return (b - a) / NS


def output_tokens(rec: RequestRecord) -> tuple[int, bool]:
    """(tokens, estimated): usage when the server sent it, else a chunk count."""
    if rec.completion_tokens is not None:
        total = rec.completion_tokens
        if rec.reasoning_tokens:
            # usage counts reasoning inside completion_tokens; keep it apart
            total = max(0, total - rec.reasoning_tokens)
        return total, False
    return len(rec.token_ns) - rec.reasoning_chunks, True


def request_metrics(rec: RequestRecord) -> RequestMetrics:
    ttft = _s(rec.sent_ns, rec.token_ns[0]) if rec.token_ns else None
    ttfo = _s(rec.sent_ns, rec.first_content_ns)
    e2e = _s(rec.sent_ns, rec.end_ns)
    out_tokens, estimated = output_tokens(rec)
    # decode rates count every generated token (reasoning included)
    generated = rec.completion_tokens if rec.completion_tokens is not None else len(rec.token_ns)
    tpot = decode = None
    if rec.ok and ttft is not None and e2e is not None and generated > 1 and e2e > ttft:
        tpot = (e2e - ttft) / (generated - 1)
        decode = (generated - 1) / (e2e - ttft)
    itl = tuple((b - a) / NS for a, b in zip(rec.token_ns, rec.token_ns[1:]))
    per_token: tuple[float, ...] = ()
    counts = rec.chunk_tokens[1:]
    if itl and all(isinstance(n, int) and n > 0 for n in counts):
        per_token = tuple(gap / n for gap, n in zip(itl, counts))  # type: ignore[operator]
    chunks = len(rec.token_ns)
    return RequestMetrics(
        ok=rec.ok,
        ttft_s=ttft,
        ttfo_s=ttfo,
        first_byte_s=_s(rec.sent_ns, rec.first_byte_ns),
        e2e_s=e2e,
        output_tokens=out_tokens,
        tokens_estimated=estimated,
        chunks=len(rec.token_ns),
        tpot_s=tpot,
        decode_tok_s=decode,
        itl_s=itl,
        prompt_tokens=rec.prompt_tokens,
        cached_tokens=rec.cached_tokens,
        reasoning_tokens=rec.reasoning_tokens,
        error_cls=(rec.error or {}).get("cls") if rec.error else None,
        tokens_per_chunk=(generated / chunks) if chunks and rec.completion_tokens is not None else None,
        itl_per_token_s=per_token,
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation (numpy's default)."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(xs[lo])
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    min: float | None
    max: float | None


def summarize(values: Iterable[float | None]) -> Summary:
    """mean/p50/p90/p99/min/max over the non-None values."""
    xs = [v for v in values if v is not None]
    if not xs:
        return Summary(0, None, None, None, None, None, None)
    return Summary(
        n=len(xs),
        mean=sum(xs) / len(xs),
        p50=percentile(xs, 50),
        p90=percentile(xs, 90),
        p99=percentile(xs, 99),
        min=min(xs),
        max=max(xs),
    )


def aggregate_tok_s(records: Sequence[RequestRecord]) -> float | None:
    """Total output tokens of the completed requests / wall time from first send to last end."""
    done = [r for r in records if r.ok and r.sent_ns is not None]
    if not done:
        return None
    start = min(r.sent_ns for r in done)  # type: ignore[type-var]
    end = max(r.end_ns for r in done)  # type: ignore[type-var]
    if end <= start:
        return None
    tokens = sum(output_tokens(r)[0] for r in done)
    return tokens / ((end - start) / NS)


SLO_KEYS = ("ttft", "tpot", "e2e")


def parse_slo(items: Sequence[str]) -> dict[str, float]:
    """``["ttft=0.5", "tpot=0.05", "e2e=10"]`` -> {"ttft": 0.5, ...} (seconds); ValueError on bad input."""
    slo: dict[str, float] = {}
    for item in items:
        for part in item.replace(",", " ").split():
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in SLO_KEYS:
                raise ValueError(f"SLO {part!r}: expected ttft=S, tpot=S or e2e=S (seconds)")
            try:
                seconds = float(value.rstrip("s"))
            except ValueError:
                raise ValueError(f"SLO {part!r}: {value!r} is not a number of seconds") from None
            if not seconds > 0:
                raise ValueError(f"SLO {part!r}: must be positive")
            slo[key] = seconds
    return slo


def meets_slo(m: RequestMetrics, slo: dict[str, float]) -> bool:
    """A completed request within every given target (a missing figure fails its target)."""
    if not m.ok:
        return False
    for key, limit in slo.items():
        value = {"ttft": m.ttft_s, "tpot": m.tpot_s, "e2e": m.e2e_s}[key]
        if value is None:
            if key == "tpot" and m.output_tokens <= 1:
                continue  # TPOT is undefined for a one-token reply: it cannot miss
            return False
        if value > limit:
            return False
    return True


def goodput(records: Sequence[RequestRecord], slo: dict[str, float]) -> dict[str, float | int | None]:
    """Requests meeting every SLO: count, share of all requests (errors included), and rate per second
    of wall time from the first send to the last end."""
    total = len(records)
    good = sum(1 for r in records if meets_slo(request_metrics(r), slo))
    starts = [r.sent_ns for r in records if r.sent_ns is not None]
    ends = [r.end_ns for r in records if r.end_ns is not None]
    wall = (max(ends) - min(starts)) / NS if starts and ends and max(ends) > min(starts) else None
    return {
        "good": good,
        "total": total,
        "share": good / total if total else None,
        "rate_rps": good / wall if wall else None,
        "slo": dict(slo),
    }
