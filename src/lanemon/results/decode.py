"""``bench decode``: a level or category cell, a lane, the crossover, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

import msgspec

from lanemon.results.common import (UNSET, BenchConfig, CellGoodput, ClientLoadInfo, Energy, Num, Obj, Opt, Result,
                                    RunState)


class DecodeFigures(Energy, kw_only=True):
    """What a level cell and a category cell both carry (workloads/bench/decode.py): every key, always, except
    ``goodput`` (with ``--slo``) and the energy attached after (measure/views.py)."""

    ttft_p50_s: Num
    requests: int
    errors: int
    truncated: int
    empty: int
    bursts: int
    tokens_estimated: bool
    # workloads/bench/run.py token_figures
    ttfo_s: Num
    reasoning_tokens: int | None
    reasoning_estimated: bool
    reasoning_split_estimated: int
    tokens_per_chunk: Num
    itl_p50_s: Num
    itl_per_token_p50_s: Num
    chunk_counts_estimated: bool | None
    # run.py spread: the cell's headline figure over its reps
    reps: list[Num]
    min: Num
    median: Num
    max: Num
    unstable: bool
    error: str | None
    # run.py client_bound_figures
    client_bound: int
    starved_s: Num
    starved_share: Num
    unreliable: bool
    goodput: CellGoodput | None = None


class DecodeCell(DecodeFigures, kw_only=True):
    """A decode level (``levels.C``): the steady-state aggregate leads, the span (first send -> last end) beside
    it; ``reps`` / ``min`` / ``median`` / ``max`` are the span's."""

    steady_tok_s: Num
    steady_reps: list[Num]
    steady_min: Num = None
    """The lowest and highest of ``steady_reps`` (workloads/bench/run.spread, as ``min`` / ``max`` are the span's);
    left out of results made before they were carried."""
    steady_max: Num = None
    steady_window_s: Num
    steady_unstable: bool
    aggregate_tok_s: Num
    ttft_p50_reps: list[Num]
    ttft_p90_s: Num
    ttft_p99_s: Num
    ttft_n: int
    ttft_max_s: Num
    per_stream_tok_s_p50: Num
    output_tokens: int
    tpot_p50_s: Num | Opt = UNSET


class DecodeCategoryCell(DecodeFigures, kw_only=True):
    """A prompt category at C1 (``categories.CAT``): the median per-stream rate; ``reps`` its per-rep medians."""

    per_stream_tok_s: Num


class DecodeLane(Result, kw_only=True):
    levels: dict[str, DecodeCell]
    categories: dict[str, DecodeCategoryCell]
    server: Obj = None


class LevelView(msgspec.Struct, kw_only=True):
    """A level as the ladder's judgement reads it (workloads/bench/decode.py ``level_figure``, ``level_leads``),
    from a level's JSON that may hold other keys or lack some (a report's analysis, a hand-made dict)."""

    steady_tok_s: Num = None
    steady_reps: list[Num] | None = None
    aggregate_tok_s: Num = None
    reps: list[Num] | None = None
    unreliable: bool | None = None


class LaneLevels(msgspec.Struct, kw_only=True):
    """A lane's levels as :class:`LevelView` (the judgement of a decode result read back as JSON)."""

    levels: dict[str, LevelView] = {}


class LevelLead(Result, kw_only=True):
    """One level judged between two lanes (workloads/bench/decode.py ``level_leads``): the gap B / A - 1 on the
    figure named by ``basis`` (``steady`` or ``span``), the shared noise band, the leader (a lane, ``"tie"``
    inside the band, None when a cell ran while lanemon was starved).  ``ratio`` (best / runner-up) and
    ``pair`` (the two lanes judged) where several lanes were ranked (``judge_levels``)."""

    level: int
    a: float | int
    b: float | int
    gap: Num
    band: float
    band_from_reps: bool
    basis: str
    unreliable: bool
    leader: str | None
    ratio: Num | Opt = UNSET
    pair: list[str] | Opt = UNSET


class LeaderChange(Result, kw_only=True):
    leader_before: str
    leader_after: str
    between: list[int]


class Crossover(LeaderChange, kw_only=True):
    """Where leadership by the steady-state aggregate changes between the first two lanes: the first change,
    every change, and the per-level judgements it rests on."""

    compared: list[str]
    changes: list[LeaderChange]
    levels: list[LevelLead]


class CategoryRatios(Result, kw_only=True):
    """The first lane's per-stream decode rate over the second's, per prompt category at C1 (``A/B``; None where
    either has no figure): :func:`category_ratios`."""

    compared: list[str]
    by_category: dict[str, Num]


def category_ratios(lanes: dict[str, DecodeLane], a: str, b: str) -> CategoryRatios:
    """``a``'s per-stream decode tok/s over ``b``'s, per category of ``a`` (rounded to 3 places): the one
    definition every surface shows as the per-category ``A/B ratio``."""
    ca, cb = lanes[a].categories, lanes[b].categories
    by: dict[str, float | None] = {}
    for k, cell in ca.items():
        va, vb = cell.per_stream_tok_s, (cb[k].per_stream_tok_s if k in cb else None)
        by[k] = round(va / vb, 3) if va and vb else None
    return CategoryRatios(compared=[a, b], by_category=by)


class DecodeResult(RunState, kw_only=True):
    """``bench decode --json`` (docs/JSON.md, "bench decode")."""

    bench: Literal["decode"]
    lanes: dict[str, DecodeLane]
    crossover: Crossover | None
    client_load: ClientLoadInfo
    config: BenchConfig
    category_ratios: CategoryRatios | None = None
    """With two lanes or more whose first two ran categories: :func:`category_ratios` of the first two."""


def ratios_of(result: DecodeResult) -> CategoryRatios | None:
    """The result's per-category ratios; for a result made before they were carried, the same
    :func:`category_ratios` of its first two lanes (None with fewer than two lanes with categories)."""
    if result.category_ratios is not None:
        return result.category_ratios
    names = [n for n, lane in result.lanes.items() if lane.categories][:2]
    return category_ratios(result.lanes, names[0], names[1]) if len(names) == 2 and names == list(result.lanes)[:2] \
        else None


def with_category_ratios(result: DecodeResult) -> DecodeResult:
    """``result`` with its :attr:`~DecodeResult.category_ratios` (of its first two lanes, when both have
    categories), set in place."""
    names = list(result.lanes)
    if len(names) >= 2 and result.lanes[names[0]].categories and result.lanes[names[1]].categories:
        result.category_ratios = category_ratios(result.lanes, names[0], names[1])
    return result


__all__ = ["CategoryRatios", "Crossover", "DecodeCategoryCell", "DecodeCell", "DecodeFigures", "DecodeLane", "DecodeResult",
           "LaneLevels", "LeaderChange", "LevelLead", "LevelView", "UNSET", "category_ratios", "ratios_of",
           "with_category_ratios"]
