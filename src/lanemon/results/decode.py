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


class DecodeResult(RunState, kw_only=True):
    """``bench decode --json`` (docs/JSON.md, "bench decode")."""

    bench: Literal["decode"]
    lanes: dict[str, DecodeLane]
    crossover: Crossover | None
    client_load: ClientLoadInfo
    config: BenchConfig


__all__ = ["Crossover", "DecodeCategoryCell", "DecodeCell", "DecodeFigures", "DecodeLane", "DecodeResult",
           "LaneLevels", "LeaderChange", "LevelLead", "LevelView", "UNSET"]
