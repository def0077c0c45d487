"""``bench decode``: a level or category cell, a lane, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, Literal

from lanemon.results.common import BenchConfig, Energy, Num, Obj, Result, RunState, Slo


class DecodeCell(Energy):
    """A decode level (``levels.C``) or category (``categories.CAT``) cell."""

    aggregate_tok_s: Num = None
    steady_tok_s: Num = None
    steady_window_s: Num = None
    steady_reps: list[Num] | None = None
    steady_unstable: bool | None = None
    per_stream_tok_s: Num = None
    per_stream_tok_s_p50: Num = None
    ttft_p50_s: Num = None
    ttft_p90_s: Num = None
    ttft_p99_s: Num = None
    ttft_n: int | None = None
    ttft_max_s: Num = None
    ttft_p50_reps: list[Num] | None = None
    tpot_p50_s: Num = None
    ttfo_s: Num = None
    itl_p50_s: Num = None
    itl_per_token_p50_s: Num = None
    tokens_per_chunk: Num = None
    chunk_counts_estimated: bool | None = None
    reasoning_tokens: int | None = None
    reasoning_estimated: bool | None = None
    reasoning_split_estimated: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool | None = None
    requests: int | None = None
    errors: int | None = None
    truncated: int | None = None
    empty: int | None = None
    bursts: int | None = None
    client_bound: int | None = None
    starved_s: Num = None
    starved_share: Num = None
    unreliable: bool | None = None
    reps: list[Num] | None = None
    min: Num = None
    median: Num = None
    max: Num = None
    unstable: bool | None = None
    error: Any = None
    goodput: Slo | None = None


class DecodeLane(Result):
    levels: dict[str, DecodeCell] = {}
    categories: dict[str, DecodeCell] = {}
    server: Obj = None


class DecodeResult(RunState):
    """``bench decode --json`` (docs/JSON.md, "bench decode")."""

    bench: Literal["decode"]
    lanes: dict[str, DecodeLane]
    config: BenchConfig
    crossover: Obj = None
