"""Where the time goes: a lane's own latency histograms beside lanemon's figures (pure).

An engine that exports vLLM's or SGLang's latency histograms says, for the
requests that *ended* between two ``/metrics`` scrapes, how long they queued,
how long prefill and decode took, and its own TTFT and end-to-end time.  Over
the same interval lanemon measured TTFT and E2E at the client.  The difference
is what neither side alone shows: HTTP, the API server, detokenising and the
network.

:func:`server_view` takes a run's events and one lane: the first and the last
successful ``server_metrics`` scrape of that lane bound the interval; the
server side is :func:`server_timings` over those two
scrapes; the client side is every request of that lane recorded as finished
between them (the same requests, up to the moment of a request's end at the
server vs at the client: a request whose end the client saw after the last
scrape is left out on both sides, give or take one request at the edges, which
the block reports as ``requests`` vs ``client_requests``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.metrics import request_metrics
from lanemon.measure.records import assemble

SERVER_KEYS = ("ttft_s", "queue_s", "prefill_s", "decode_s", "itl_s", "tpot_s", "e2e_s", "inference_s")


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits)


def server_timings(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The server's own view between two mapped scrapes: mean seconds per histogram (``ttft_s``,
    ``itl_s``, ``tpot_s``, ``e2e_s``, ``queue_s``, ``prefill_s``, ``decode_s``, ``inference_s``) over the
    requests that ended in between (deltas of ``_sum`` / ``_count``; a counter that went down was reset,
    so its new value is the increase), ``requests`` (the E2E count, else TTFT), and the token counter
    increases (``prompt_tokens``, ``generation_tokens``, ``prompt_tokens_computed``, ``prompt_tokens_hit``,
    ``preemptions``).  A histogram that did not move is None."""

    def inc(key: str) -> float | None:
        if key not in after:
            return None
        a, b = float(after[key]), float(before.get(key, 0.0))
        return a - b if a >= b else a

    out: dict[str, Any] = {}
    for key in ("ttft", "itl", "tpot", "e2e", "queue", "prefill", "decode", "inference"):
        n, total = inc(key + "_count"), inc(key + "_sum")
        out[key + "_s"] = total / n if n and total is not None else None
        if key in ("ttft", "e2e") and n is not None:
            out[key + "_count"] = int(n)
    out["requests"] = out.get("e2e_count", out.get("ttft_count"))
    for key in ("prompt_tokens", "generation_tokens", "prompt_tokens_computed", "prompt_tokens_hit", "preemptions"):
        v = inc(key + "_total")
        out[key] = int(v) if v is not None else None
    return out


def _num(x: Any) -> float:
    """A non-negative duration from a recording (anything else is 0: a file's bytes are untrusted)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 3600 else 0.0


def server_view(events: Iterable[Event], lane: str) -> dict[str, Any] | None:
    """The server-vs-client block of one lane (None without two histogram scrapes of it)."""
    events = list(events)
    scrapes = [ev for ev in events if ev.kind == schema.SERVER_METRICS and ev.lane == lane and ev.data.get("ok")
               and ("ttft_count" in ev.data or "e2e_count" in ev.data)]
    if len(scrapes) < 2:
        return None
    first, last = scrapes[0], scrapes[-1]
    timings = server_timings(first.data, last.data)
    if not timings.get("requests"):
        return None
    # from when the first scrape was sent (its snapshot is taken somewhere in its flight, and a request the
    # client saw end meanwhile was already counted by the server) to when the last one was answered
    # (``parse_s``: the time between reading a scrape and its event, the parse off the event loop)
    start = first.t - int((_num(first.data.get("parse_s")) + _num(first.data.get("latency_s"))) * 1e9)
    end = last.t - int(_num(last.data.get("parse_s")) * 1e9)
    recs = [r for r in assemble(e for e in events if e.lane == lane)
            if r.ok and r.end_ns is not None and start <= r.end_ns <= end]
    ms = [request_metrics(r) for r in recs]
    client_ttft = _mean([m.ttft_s for m in ms if m.ttft_s is not None])
    client_e2e = _mean([m.e2e_s for m in ms if m.e2e_s is not None])
    out: dict[str, Any] = {"engine": first.data.get("engine"), "interval_s": _r((last.t - first.t) / 1e9, 3),
                           "requests": timings["requests"], "client_requests": len(recs)}
    for key in SERVER_KEYS:
        out[key] = _r(timings.get(key))
    out["client_ttft_s"] = _r(client_ttft)
    out["client_e2e_s"] = _r(client_e2e)
    out["client_tpot_s"] = _r(_mean([m.tpot_s for m in ms if m.tpot_s is not None]))
    out["gap_ttft_s"] = _r(client_ttft - out["ttft_s"]) if client_ttft is not None and out["ttft_s"] is not None else None
    out["gap_e2e_s"] = _r(client_e2e - out["e2e_s"]) if client_e2e is not None and out["e2e_s"] is not None else None
    for key in ("prompt_tokens", "generation_tokens", "prompt_tokens_computed", "prompt_tokens_hit", "preemptions"):
        out[key] = timings.get(key)
    prompt = [r.prompt_tokens for r in recs]
    out["client_prompt_tokens"] = sum(prompt) if prompt and all(p is not None for p in prompt) else None
    gen = [m.generated_tokens for m in ms]
    out["client_generation_tokens"] = sum(gen) if gen and not any(m.tokens_estimated for m in ms) else None
    return out


def attach_server_views(result: dict[str, Any], events: Iterable[Event]) -> dict[str, Any]:
    """Add ``server`` (:func:`server_view`) to every lane of a bench result that has one (in place)."""
    lanes = result.get("lanes")
    if not isinstance(lanes, dict):
        return result
    events = list(events)
    if not any(ev.kind == schema.SERVER_METRICS for ev in events):
        return result
    for name, lane in lanes.items():
        if isinstance(lane, dict):
            view = server_view(events, name)
            if view is not None:
                lane["server"] = view
    return result
