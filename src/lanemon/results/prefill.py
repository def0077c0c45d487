"""``bench prefill``: a prompt length, a lane, the ratios between lanes, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, Literal

from lanemon.results.common import BenchConfig, Num, Obj, Result, RunState, Slo, Spread


class PrefillCell(Spread):
    """A prompt length (``lengths.N``; docs/JSON.md, "bench prefill")."""

    prompt_tokens: int | None = None
    prefill_tok_s: Num = None
    ttft_s: Num = None
    cache_hit_tok_s: Num = None
    repeat_tok_s: Num = None
    repeat_cached_tokens: int | None = None
    cache_hit_source: str | None = None
    tokens_estimated: bool | None = None
    requests: int | None = None
    errors: int | None = None
    truncated: int | None = None
    empty: int | None = None
    bursts: int | None = None
    error: Any = None
    skipped: bool | None = None
    goodput: Slo | None = None


class PrefillLane(Result):
    lengths: dict[str, PrefillCell] = {}
    tokens_per_char: Num = None
    tokens_counted_from: str | None = None
    calibration_prompt_tokens: int | None = None
    max_context: int | None = None
    max_context_source: str | None = None
    error: Any = None
    server: Obj = None


class PrefillRatios(Result):
    compared: list[str] = []
    by_length: dict[str, Num] = {}


class PrefillResult(RunState):
    """``bench prefill --json`` (docs/JSON.md, "bench prefill")."""

    bench: Literal["prefill"]
    lanes: dict[str, PrefillLane]
    config: BenchConfig
    ratios: PrefillRatios | None = None
