"""``bench prefill``: a prompt length, a lane, the ratios between lanes, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import BenchConfig, CellGoodput, Num, Obj, Result, RunState, Spread


class PrefillCell(Spread, kw_only=True):
    """A prompt length (``lengths.N``; docs/JSON.md, "bench prefill"): every key, always (a length beyond the
    context too, ``skipped`` with its ``error``), except ``goodput`` (with ``--slo``) and the energy attached
    after (measure/views.py).  ``reps`` / ``min`` / ``median`` / ``max``: the cold prefill tok/s over the reps."""

    prompt_tokens: int | None
    prefill_tok_s: Num
    ttft_s: Num
    cache_hit_tok_s: Num
    repeat_tok_s: Num
    repeat_cached_tokens: int | None
    cache_hit_source: str | None
    tokens_estimated: bool
    requests: int
    errors: int
    truncated: int
    empty: int
    bursts: int
    error: str | None
    skipped: bool | None = None
    goodput: CellGoodput | None = None


class PrefillLane(Result, kw_only=True):
    """A lane's lengths and its calibration (tokens per character, where the counts came from, its context)."""

    lengths: dict[str, PrefillCell]
    tokens_per_char: Num
    tokens_counted_from: str | None
    calibration_prompt_tokens: int | None
    max_context: int | None
    max_context_source: str | None
    error: str | None
    server: Obj = None


class PrefillRatios(Result, kw_only=True):
    """The second lane's cold prefill over the first's, per length (None where either has no figure)."""

    compared: list[str]
    by_length: dict[str, Num]


def prefill_ratios(lanes: dict[str, PrefillLane], a: str, b: str) -> PrefillRatios:
    """The second lane's cold prefill over the first's (``b / a``, rounded to 3 places), per length of the first:
    the one definition of ``ratios`` (the bench's result, the live fold, a result made before it was carried)."""
    la, lb = lanes[a].lengths, lanes[b].lengths
    by_length: dict[str, float | None] = {}
    for k in la:
        va, vb = la[k].prefill_tok_s, (lb[k].prefill_tok_s if k in lb else None)
        by_length[k] = round(vb / va, 3) if va and vb else None
    return PrefillRatios(compared=[a, b], by_length=by_length)


class PrefillResult(RunState, kw_only=True):
    """``bench prefill --json`` (docs/JSON.md, "bench prefill")."""

    bench: Literal["prefill"]
    lanes: dict[str, PrefillLane]
    config: BenchConfig
    ratios: PrefillRatios | None = None


def ratios_of(result: PrefillResult) -> PrefillRatios | None:
    """The result's ``ratios``; for a result made before they were carried, :func:`prefill_ratios` of its first
    two lanes with lengths (None with fewer)."""
    if result.ratios is not None:
        return result.ratios
    names = [n for n, lane in result.lanes.items() if lane.lengths][:2]
    return prefill_ratios(result.lanes, names[0], names[1]) if len(names) == 2 else None
