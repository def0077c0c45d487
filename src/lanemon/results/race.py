"""``lanemon race``: one lane in one race, a race, a lane over every race, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring.  Built by
:func:`lanemon.workloads.race.race_results` (from events alone); docs/JSON.md ("race") says what every key means."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, UnsetType

from lanemon.results.common import Num, Result
from lanemon.results.counters import EngineCounters

TIE_S = 0.0005
"""End-to-end gaps below this (it rounds to 0 ms) are a tie: which end was read first is chance.  Read by the race
itself (:mod:`lanemon.workloads.race`) and by every surface that words a race's margins."""


class RaceEnergy(Result):
    """Energy and cost of a lane in one race, or over its races (docs/GPU.md): the keys of
    :func:`lanemon.measure.energy.energy_of`, every one always carried (null with its reason where the lane has no
    GPU telemetry or no ``cost_per_hour``)."""

    gpu_power_w_mean: Num
    energy_j: Num
    energy_uncertainty_j: Num
    energy_source: str | None
    energy_reason: str | None
    energy_note: str | None
    energy_update_s: Num
    energy_dropped: int | None
    energy_window_s: Num
    tokens_per_joule: Num
    tokens_per_joule_uncertainty: Num
    tokens_per_joule_reason: str | None
    usd_per_1m_output_tokens: Num
    cost_reason: str | None


ENERGY_FIELDS = RaceEnergy.__struct_fields__
"""The energy keys (:data:`lanemon.measure.energy.ENERGY_KEYS`)."""

NO_ENERGY: dict[str, None] = dict.fromkeys(ENERGY_FIELDS)
"""A race lane before its energy is known (the race screen's live view: it shows no energy)."""


class RaceError(Result):
    """Why a lane has no figures in a race: the client's error class (``connect``, ``timeout``, ``http``, ...) or
    ``truncated`` / ``empty`` / ``missing`` / ``unfinished``, and the message."""

    cls: str
    message: str


class RaceLane(RaceEnergy):
    """One lane in one race (docs/JSON.md, "race"): figures only for a complete request."""

    outcome: str | None
    flags: list[str]
    ttft_s: Num
    ttfo_s: Num
    decode_tok_s: Num
    output_tokens: int | None
    generated_tokens: int | None
    reasoning_tokens: int | None
    reasoning_estimated: bool | None
    tokens_estimated: bool | None
    tokens_per_chunk: Num
    chunk_counts_estimated: bool | None
    total_s: Num
    finish_rank: int | None
    error: RaceError | None
    text: str
    reasoning_text: str
    meets_slo: bool | None = None
    """With ``--slo`` only."""
    behind_s: Num = None
    """E2E minus the winner's (the lane that finished first) in this race; left out for the winner, a lane without
    an E2E and a race without a winner (workloads/race.race_json)."""
    behind_ratio: Num = None
    """E2E over the winner's (>= 1 unless the winner was sent sooner); left out as ``behind_s`` is."""
    engine_counters: EngineCounters | None | UnsetType = UNSET
    """The engine's own counters over the race (docs/GPU.md): absent when the lane has no ``/metrics``, null when
    no scrape pair brackets the race."""


class RaceMargin(Result):
    """The winner against the runner-up (all null with fewer than two finishers)."""

    runner_up: str | None
    total_s_delta: Num
    total_s_ratio: Num
    ttft_s_ratio: Num


class RaceLeader(Result):
    """Who won one thing, the runner-up and the ratio (>= 1: how many times better)."""

    lane: str | None
    runner_up: str | None
    ratio: Num


class RaceWinners(Result):
    """Who won what, named apart; ``tokens``: every complete lane's generated tokens (output + reasoning)."""

    end_to_end: RaceLeader
    ttft: RaceLeader
    decode: RaceLeader
    tokens: dict[str, int]


class Race(Result):
    """One race (``races[]``)."""

    race: int
    prompt: str
    prompt_id: str | None
    category: str | None
    endpoint: str | None
    max_tokens: int | None
    lanes: dict[str, RaceLane]
    winner: str | None
    margin: RaceMargin
    winners: RaceWinners
    verdict: str


class RaceGoodput(Result):
    """A lane's goodput over its races against ``--slo`` (METRICS.md, "goodput")."""

    rate_rps: Num
    share: Num
    good: int
    total: int


class RaceSummary(RaceEnergy):
    """A lane over every race: medians of the finished races where it did not error (docs/JSON.md, "race")."""

    ttft_s: Num
    ttfo_s: Num
    decode_tok_s: Num
    output_tokens: Num
    reasoning_tokens: Num
    tokens_per_chunk: Num
    total_s: Num
    wins: int
    races_ok: int
    outcomes: dict[str, int]
    bursts: int
    goodput: RaceGoodput | None = None
    """With ``--slo`` only."""


class RaceResult(Result):
    """``lanemon race --json`` (docs/JSON.md, "race")."""

    bench: Literal["race"]
    races: list[Race]
    lanes: dict[str, RaceSummary]
    lanes_stat: str
    slo: dict[str, float] | None = None
    """With ``--slo`` only: the targets (seconds)."""
