"""Measurement arithmetic: pure functions, no IO, unit-tested.

Definitions follow vLLM ``bench serve`` (see docs/METRICS.md):

* TTFT -- request sent to the first token-carrying chunk (reasoning included).
  Not the first byte, not the role-only first chunk.
* TTFO -- request sent to the first non-reasoning output chunk.
* ITL -- gaps between successive token-carrying chunks.
* TPOT -- (last token - first token) / (output_tokens - 1): it ends at the last
  token-carrying chunk, not at ``[DONE]`` or a late usage chunk.
* decode tok/s per stream -- its inverse.
* aggregate tok/s -- total output tokens / wall time.
* Only *complete* requests (``RequestRecord.outcome``) get TPOT and decode
  figures; a burst (chunks read in one go) gets neither, and its ITLs are
  left out of every aggregate.
* Token counts come from the server's usage block; without one, chunks are
  counted and the figure is marked ``estimated``.

All times in the returned objects are seconds (floats); inputs are integer
nanoseconds from the session clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lanemon.measure.records import BURST, RequestRecord, is_burst

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
    """The token counts are counted chunks (the lane sent no usage block).  With usage, only the split between
    reasoning and answer can be estimated: ``reasoning_estimated`` (then ``output_tokens`` is too)."""
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
    """Each inter-chunk gap divided by the tokens its chunk carried (per-chunk counts from continuous
    usage; else divided by the average tokens per chunk, and ``chunk_counts_estimated``)."""
    generated_tokens: int = 0
    """Every generated token: output + reasoning (what decode rates count)."""
    reasoning_estimated: bool = False
    """``reasoning_tokens`` is a count of reasoning chunks (the server did not say)."""
    chunk_counts_estimated: bool = True
    """Tokens per chunk are not known chunk by chunk (no continuous usage): ``itl_per_token_s`` uses
    the average and ``tokens_per_chunk`` is that average (None when there is no usage at all)."""
    outcome: str | None = None
    """``complete`` / ``truncated`` / ``empty`` / ``error`` (measure/records.py); None while streaming."""
    flags: frozenset[str] = frozenset()
    """``burst`` / ``client_bound``: the request's timings are not the lane's speed."""
    decode_span_s: float | None = None
    """First to last token-carrying chunk, or to the finish_reason chunk when later (what TPOT and decode
    divide by; :func:`decode_end_ns`)."""

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


def _chunk_counts(rec: RequestRecord) -> list[int] | None:
    """Tokens in each chunk when the server said so for every chunk (continuous usage), else None."""
    counts = rec.chunk_tokens
    if counts and all(isinstance(n, int) and n > 0 for n in counts):
        return counts  # type: ignore[return-value]
    return None


def generated_tokens(rec: RequestRecord) -> tuple[int, bool]:
    """(every generated token incl. reasoning, estimated): usage when sent, else a chunk count."""
    if rec.completion_tokens is not None:
        return rec.completion_tokens, False
    return len(rec.token_ns), True


def reasoning_tokens(rec: RequestRecord) -> tuple[int | None, bool]:
    """(reasoning tokens, estimated): ``completion_tokens_details.reasoning_tokens`` when sent; else the
    per-chunk counts of the reasoning chunks (continuous usage; a chunk carrying reasoning and answer split by
    its usage, else by its text: then estimated, ``RequestRecord.split_chunks``); else a count of reasoning
    chunks (estimated).  None when the request streamed no reasoning and the server said nothing."""
    if rec.reasoning_tokens is not None:
        return rec.reasoning_tokens, False
    if not rec.reasoning_chunks:
        return None, False
    if rec.reasoning_n and rec.completion_tokens is not None:
        return rec.reasoning_n, rec.split_chunks > 0
    return rec.reasoning_chunks, True


def output_tokens(rec: RequestRecord) -> tuple[int, bool]:
    """(output tokens without reasoning, estimated): usage when the server sent it, else a chunk count."""
    if rec.completion_tokens is not None:
        reasoning, est = reasoning_tokens(rec)
        # usage counts reasoning inside completion_tokens; keep it apart
        return max(0, rec.completion_tokens - (reasoning or 0)), est
    return len(rec.token_ns) - rec.reasoning_chunks, True


def decode_end_ns(rec: RequestRecord) -> int | None:
    """Where decode ends: the last token-carrying chunk -- or the chunk carrying the ``finish_reason``
    when that came later but before ``[DONE]`` (a tool parser holds back a call's closing tokens and
    sends no chunk for them; the lane finished generating when it said so).  Never ``[DONE]`` itself,
    nor a usage chunk sent after the last token."""
    if not rec.token_ns:
        return None
    last = rec.token_ns[-1]
    fin = rec.finish_ns
    if fin is not None and last < fin <= (rec.end_ns if rec.end_ns is not None else fin):
        return fin
    return last


MAX_STREAM_TOK_S = 10_000.0
"""No lane decodes one stream faster than this (the fastest single-stream decode served today is a few
thousand tok/s): a higher figure is a burst the client read late (e.g. 100 chunks in 6 ms), flagged, never
shown as the lane's speed."""


def request_metrics(rec: RequestRecord) -> RequestMetrics:
    """Per-request figures.  TTFT, TTFO and E2E are given for any request that has them (a row of
    the request list); TPOT, decode and ITLs only for a complete request that was not a burst.
    Aggregates take :attr:`RequestMetrics.ok` (complete) requests only."""
    ttft = _s(rec.sent_ns, rec.token_ns[0]) if rec.token_ns else None
    ttfo = _s(rec.sent_ns, rec.first_content_ns)
    e2e = _s(rec.sent_ns, rec.end_ns)
    out_tokens, _ = output_tokens(rec)
    reasoning, reasoning_est = reasoning_tokens(rec)
    # decode rates count every generated token (reasoning included)
    generated, gen_est = generated_tokens(rec)
    counts = _chunk_counts(rec) if not gen_est else None
    # tokens that arrived after the first chunk (a coalescing server may put several in the first)
    first = counts[0] if counts else 1
    flags = set(rec.flags)
    if rec.finished and is_burst(rec.token_ns):
        flags.add(BURST)
    burst = BURST in flags
    span = _s(rec.token_ns[0], decode_end_ns(rec)) if len(rec.token_ns) >= 2 else None
    ok = rec.ok
    tpot = decode = None
    # first -> last token-carrying chunk: not [DONE], not a usage chunk sent after the last token
    if ok and not burst and span is not None and span > 0 and generated > first:
        tpot = span / (generated - first)
        decode = (generated - first) / span
        if decode > MAX_STREAM_TOK_S:  # gaps that collapsed less than the burst rule needs, still impossible
            flags.add(BURST)
            tpot = decode = None
    # the raw gaps, even of a burst (export rows); aggregates leave bursts out (``BURST in m.flags``)
    itl = tuple((b - a) / NS for a, b in zip(rec.token_ns, rec.token_ns[1:]))
    chunks = len(rec.token_ns)
    tpc: float | None = None
    per_token: tuple[float, ...] = ()
    if counts:
        tpc = sum(counts) / chunks
        per_token = tuple(gap / n for gap, n in zip(itl, counts[1:]))
    elif chunks and not gen_est:
        tpc = generated / chunks
        per_token = tuple(gap / tpc for gap in itl) if tpc > 0 else ()
    return RequestMetrics(
        ok=ok,
        ttft_s=ttft,
        ttfo_s=ttfo,
        first_byte_s=_s(rec.sent_ns, rec.first_byte_ns),
        e2e_s=e2e,
        output_tokens=out_tokens,
        tokens_estimated=gen_est,
        chunks=chunks,
        tpot_s=tpot,
        decode_tok_s=decode,
        itl_s=itl,
        prompt_tokens=rec.prompt_tokens,
        cached_tokens=rec.cached_tokens,
        reasoning_tokens=reasoning,
        error_cls=rec.error.cls if rec.error is not None else None,
        tokens_per_chunk=tpc,
        itl_per_token_s=per_token,
        generated_tokens=generated,
        reasoning_estimated=reasoning_est,
        chunk_counts_estimated=counts is None,
        outcome=rec.outcome,
        flags=frozenset(flags),
        decode_span_s=span,
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


TAIL_MIN_SAMPLES = {90: 10, 99: 100}
"""The fewest samples a percentile rests on: a p99 needs 100 (one sample in a hundred above it), a p90 ten.
Below that the interpolated figure is a guess between the largest values; tables, charts and reports show the
largest sample instead, labelled ``max`` with the count (docs/METRICS.md, "percentiles")."""


def tail_ok(q: int, n: int | None) -> bool:
    """Whether a ``q``-th percentile over ``n`` samples stands (:data:`TAIL_MIN_SAMPLES`)."""
    return n is not None and n >= TAIL_MIN_SAMPLES.get(q, 1)


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
    """Total generated tokens (output + reasoning) of the completed requests / wall time from first
    send to last end."""
    done = [r for r in records if r.ok and r.sent_ns is not None]
    if not done:
        return None
    start = min(r.sent_ns for r in done)  # type: ignore[type-var]
    end = max(r.end_ns for r in done)  # type: ignore[type-var]
    if end <= start:
        return None
    tokens = sum(generated_tokens(r)[0] for r in done)  # every generated token, reasoning included
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
            if not 0 < seconds < float("inf"):
                raise ValueError(f"SLO {part!r}: must be a positive, finite number of seconds")
            slo[key] = seconds
    return slo


def meets_slo(m: RequestMetrics, slo: dict[str, float]) -> bool:
    """A completed request within every given target (a missing figure fails its target)."""
    if not m.ok:
        return False
    for key, limit in slo.items():
        value = {"ttft": m.ttft_s, "tpot": m.tpot_s, "e2e": m.e2e_s}[key]
        if value is None:
            if key == "tpot" and m.generated_tokens <= 1:
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


def round_or_none(value: float | None, digits: int = 4) -> float | None:
    """``value`` rounded to ``digits`` as a float (results JSON); ``None`` stays ``None``."""
    if value is None:
        return None
    return round(float(value), digits)
