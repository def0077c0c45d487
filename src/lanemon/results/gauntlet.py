"""``gauntlet``: a turn of a rep, a lane's reps, the run's configuration, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from lanemon.results.common import Num, Result


class GauntletTool(Result):
    """The first tool call a turn made: the tool's name, the file it asked for (None when its arguments were
    malformed or the tool unknown) and whether the sandbox answered with a file of the chain."""

    name: str | None
    path: str | None
    ok: bool


class GauntletTurn(Result):
    """One request of a rep (``turns[rep][i]``): the transcript's prompt tokens, TTFT (its prefill) and the rest."""

    turn: int
    prompt_tokens: int | None
    cached_tokens: int | None
    ttft_s: Num
    decode_s: Num
    completion_tokens: int | None
    tool: GauntletTool | None
    calls: int
    error: str | None | UnsetType = UNSET
    """The request's error message, only on a failed request."""


class GauntletTurnMedian(Result):
    """One turn of a lane over its reps (``by_turn[i]``): the median of each figure over the reps that reached the
    turn (None where none has it); ``tool``: the turn made a tool call in some rep."""

    turn: int
    ttft_s: Num
    decode_s: Num
    prompt_tokens: Num
    completion_tokens: Num
    tool: bool


class GauntletLane(Result):
    """A lane's finished reps, one entry per rep in every per-rep list (``wall_s`` ... ``last_prompt_tokens``); the
    figures are the catalogue's ``gauntlet_*`` entries (measure/catalogue.py), computed in
    workloads/gauntlet/results.py."""

    model: str | None
    correct: int
    reps: int
    correct_per_rep: list[bool]
    tool_calls: list[int]
    wall_s: list[float]
    median_wall_s: Num
    malformed_calls: list[int]
    stopped: list[str | None]
    turns: list[list[GauntletTurn]]
    turn_count: list[int]
    """Per rep: its requests (turns)."""
    ttft_sum_s: list[float]
    """Per rep: the sum of its turns' TTFT (a turn without one adds nothing)."""
    decode_sum_s: list[float]
    """Per rep: the sum of its turns' decode seconds (TTFT -> end of stream)."""
    first_prompt_tokens: list[int | None]
    """Per rep: the prompt tokens of its first turn that has them."""
    last_prompt_tokens: list[int | None]
    """Per rep: the prompt tokens of its last turn that has them (the transcript at the end)."""
    median_ttft_sum_s: Num
    """The median over reps of ``ttft_sum_s``."""
    median_decode_sum_s: Num
    """The median over reps of ``decode_sum_s``."""
    ttft_share: Num
    """``median_ttft_sum_s`` / (``median_ttft_sum_s`` + ``median_decode_sum_s``): the share of a rep's request
    time spent before the first token (None when both are zero or unknown)."""
    by_turn: list[GauntletTurnMedian]
    """Per turn, in order: the median over reps."""


class GauntletConfigInfo(Result):
    """The run's configuration as its start mark recorded it (workloads/gauntlet/config.py
    ``GauntletConfig.public``).  A key the recording does not hold is left out; ``seed`` and ``time_scale`` are
    carried even as ``null`` (a live run's seed is drawn; ``time_scale`` is set for simulated lanes only)."""

    hops: int | None = None
    reps: int | None = None
    system_prompt_tokens: int | None = None
    max_turns: int | None = None
    stable_prompt: bool | None = None
    seed: int | None | UnsetType = UNSET
    max_tokens: int | None = None
    time_scale: Num | UnsetType = UNSET
    lanes: list[str] = []
    tool: str | None = None


class GauntletResult(Result):
    """``gauntlet --json`` (docs/JSON.md, "gauntlet")."""

    bench: Literal["gauntlet"]
    lanes: dict[str, GauntletLane]
    config: GauntletConfigInfo
    summary: str


def config_info(raw: object) -> GauntletConfigInfo:
    """The start mark's ``config`` (untrusted: a recording) as :class:`GauntletConfigInfo`: the keys it names,
    each of the right type; a key of the wrong type, or one this lanemon does not know, is left out."""
    if not isinstance(raw, Mapping):
        return GauntletConfigInfo()
    known = {k: v for k, v in raw.items() if k in GauntletConfigInfo.__struct_fields__}
    try:
        return msgspec.convert(known, GauntletConfigInfo, strict=False)
    except msgspec.ValidationError:  # keep every key that fits on its own
        good = {}
        for k, v in known.items():
            try:
                msgspec.convert({k: v}, GauntletConfigInfo, strict=False)
            except msgspec.ValidationError:
                continue
            good[k] = v
        return msgspec.convert(good, GauntletConfigInfo, strict=False)
