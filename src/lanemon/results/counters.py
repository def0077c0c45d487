"""What the engine did during one run (a bench cell, a load rep, a race, a session): its ``/metrics`` counters as
increases between the run's edges (measure/counters.py; docs/GPU.md, "Run-scoped engine counters").

``engine_counters`` in a cell, rep or race of ``--json``; ``session_counters`` in a lane of the report's
environment.  A figure is carried only where the engine exports it (left out otherwise; ``null`` where it
exported something that was not a number), so every field but the window's own defaults to unset.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from lanemon.results.base import Result

Count = int | float | None | UnsetType
"""A counter's increase: whole where it is whole (``_int``), left out where the engine does not export it."""


class RankCounters(Result, kw_only=True):
    """One data-parallel rank's increases (``ranks`` of :class:`EngineCounters`)."""

    generation_tokens: Count = UNSET
    prompt_tokens: Count = UNSET
    prefix_hits: Count = UNSET
    prefix_queries: Count = UNSET
    preemptions: Count = UNSET
    requests: Count = UNSET
    spec_draft_tokens: Count = UNSET
    spec_accepted_tokens: Count = UNSET


class EngineCounters(Result, kw_only=True):
    """The run-scoped figures between two scrapes (or summed over a run's reps); ``withheld`` (and no figures)
    when the engine restarted during the run."""

    engine: str | None | UnsetType = UNSET
    prefix_queries: Count = UNSET
    prefix_hits: Count = UNSET
    preemptions: Count = UNSET
    spec_drafts: Count = UNSET
    spec_draft_tokens: Count = UNSET
    spec_accepted_tokens: Count = UNSET
    requests: Count = UNSET
    prompt_tokens: Count = UNSET
    generation_tokens: Count = UNSET
    prefix_hit_rate: float | UnsetType = UNSET
    """Prefix-cache hit tokens / queried tokens (0..1)."""
    spec_acceptance_rate: float | UnsetType = UNSET
    """Accepted / draft tokens (0..1)."""
    spec_mean_accepted: float | UnsetType = UNSET
    """Accepted tokens per draft."""
    spec_accept_length: float | UnsetType = UNSET
    """SGLang's gauge: the mean accept length at the end."""
    requests_by_finish: dict[str, int | float | None] | UnsetType = UNSET
    ranks: dict[str, RankCounters] | UnsetType = UNSET
    rank_imbalance: float | None | UnsetType = UNSET
    """Max / mean of the ranks' generated tokens (1.0 is even)."""
    lora_adapters: list[str] | UnsetType = UNSET
    between_s: float | UnsetType = UNSET
    """Seconds from the first scrape to the last."""
    restarts: int | UnsetType = UNSET
    restart_t: int | UnsetType = UNSET
    """Session time (ns) of the last restart."""
    restart_reason: str | None | UnsetType = UNSET
    excluded_s: float | UnsetType = UNSET
    """Seconds left out around the restarts."""
    withheld: str | UnsetType = UNSET
    """Why the run has no figures (the engine restarted during it)."""
