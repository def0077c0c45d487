"""The engine's own view beside lanemon's: its latency histograms between two ``/metrics`` scrapes, and a lane's
server-vs-client block of a bench (measure/server.py; docs/SERVER_METRICS.md).

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from lanemon.results.common import Num, Result


class ServerTimings(Result, kw_only=True):
    """The server's own view between two mapped scrapes (measure/server.server_timings): mean seconds per
    histogram over the requests that ended in between (None: the histogram did not move, or the engine exports
    none), ``requests`` (the E2E count, else TTFT) and the token counters' increases."""

    ttft_s: Num = None
    itl_s: Num = None
    tpot_s: Num = None
    e2e_s: Num = None
    queue_s: Num = None
    prefill_s: Num = None
    decode_s: Num = None
    inference_s: Num = None
    ttft_count: int | None = None
    e2e_count: int | None = None
    requests: int | None = None
    prompt_tokens: int | None = None
    generation_tokens: int | None = None
    prompt_tokens_computed: int | None = None
    prompt_tokens_hit: int | None = None
    preemptions: int | None = None


class ServerReset(Result, kw_only=True):
    """An interval of a server view in which the engine restarted (left out on both sides)."""

    t_s: Num
    reason: str


class ServerView(Result, kw_only=True):
    """One lane's server-vs-client block of a bench (``server`` in a lane of ``bench decode/prefill/needles/load/
    sweep --json``; measure/server.server_view).  Every key is always carried (``null`` included) but
    ``reset_at`` / ``excluded_s``, carried only when the engine restarted."""

    engine: str | None
    interval_s: Num
    requests: int | None
    """What the engine counted over the compared intervals."""
    client_requests: int
    """What lanemon saw finish in the same intervals."""
    scrapes: int
    restarts: int
    reset_at: list[ServerReset] | None = None
    excluded_s: Num = None
    ttft_s: Num
    queue_s: Num
    prefill_s: Num
    decode_s: Num
    itl_s: Num
    tpot_s: Num
    e2e_s: Num
    inference_s: Num
    client_ttft_s: Num
    client_e2e_s: Num
    client_tpot_s: Num
    foreign_requests: int
    gap_reason: str | None
    """Why the gaps are withheld (null when they are not)."""
    gap_ttft_s: Num
    gap_e2e_s: Num
    prompt_tokens: int | None
    generation_tokens: int | None
    prompt_tokens_computed: int | None
    prompt_tokens_hit: int | None
    preemptions: int | None
    client_prompt_tokens: int | None
    client_generation_tokens: int | None
