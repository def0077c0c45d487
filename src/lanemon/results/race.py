"""``lanemon race``: one lane in one race, a race, a lane over every race, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, Literal

from lanemon.results.common import Energy, Num, Obj, Result, Slo


class RaceLane(Energy):
    """One lane in one race (docs/JSON.md, "race")."""

    outcome: str | None = None
    flags: list[str] = []
    ttft_s: Num = None
    ttfo_s: Num = None
    decode_tok_s: Num = None
    generated_tokens: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool | None = None
    reasoning_tokens: int | None = None
    reasoning_estimated: bool | None = None
    reasoning_split_estimated: int | None = None
    reasoning_text: str | None = None
    tokens_per_chunk: Num = None
    chunk_counts_estimated: bool | None = None
    total_s: Num = None
    finish_rank: int | None = None
    error: Any = None
    text: str | None = None
    meets_slo: bool | None = None


class Race(Result):
    race: int
    lanes: dict[str, RaceLane]
    prompt: str | None = None
    prompt_id: str | None = None
    category: str | None = None
    endpoint: str | None = None
    max_tokens: int | None = None
    winner: str | None = None
    margin: Obj = None
    winners: Obj = None
    verdict: str | None = None


class RaceSummary(Energy):
    """A lane over every race: medians of the finished races (docs/JSON.md, "race")."""

    ttft_s: Num = None
    ttfo_s: Num = None
    decode_tok_s: Num = None
    output_tokens: Num = None
    reasoning_tokens: Num = None
    tokens_per_chunk: Num = None
    total_s: Num = None
    wins: int | None = None
    races_ok: int | None = None
    bursts: int | None = None
    outcomes: dict[str, int] = {}
    goodput: Slo | None = None


class RaceResult(Result):
    """``lanemon race --json`` (docs/JSON.md, "race")."""

    bench: Literal["race"]
    races: list[Race]
    lanes: dict[str, RaceSummary]
    lanes_stat: str | None = None
    slo: dict[str, float] | None = None
