"""``bench load``: a rep, a lane, the offered schedule, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, Literal

from lanemon.results.common import BenchConfig, Energy, Num, Obj, Percentiles, Result, RunState, Slo


class LoadRep(Energy):
    """One rep of one lane over its measured window (docs/JSON.md, "bench load")."""

    cell: str | None = None
    requests: int | None = None
    measured: int | None = None
    ok: int | None = None
    errors: int | None = None
    truncated: int | None = None
    empty: int | None = None
    bursts: int | None = None
    error: Any = None
    refused: int | None = None
    refused_error: str | None = None
    workers_lost: list[dict[str, Any]] = []
    not_sent: int | None = None
    offered_rate_rps: Num = None
    scheduled_rate_rps: Num = None
    sent_rate_rps: Num = None
    completed_rate_rps: Num = None
    completed_in_window: int | None = None
    completed_rate_reason: str | None = None
    served_tokens: Num = None
    measured_window_ns: list[int] | None = None
    output_tok_s: Num = None
    visible_tok_s: Num = None
    reasoning_tok_s: Num = None
    lane_behind: bool | None = None
    backlog_at_end: int | None = None
    client_behind: bool | None = None
    ttft_early_s: Num = None
    ttft_late_s: Num = None
    ttft_s: Percentiles | None = None
    tpot_s: Percentiles | None = None
    e2e_s: Percentiles | None = None
    send_lag_s: Percentiles | None = None
    input_tokens_asked_p50: Num = None
    input_tokens_p50: Num = None
    output_tokens_asked_p50: Num = None
    output_tokens_p50: Num = None
    tokens_estimated: bool | None = None
    slo: Slo | None = None
    ttft_p50_s_by_turn: dict[str, Num] | None = None


class LoadLane(Result):
    reps: list[LoadRep] = []
    offered_rate_rps: Num = None
    client_behind: bool | None = None
    lane_behind: bool | None = None
    slo_held: bool | None = None
    server: Obj = None


class Schedule(Result):
    """The offered schedule every lane was given (workloads/bench/schedule.py)."""

    seed: int | None = None
    seed_drawn: bool = False
    same_for_every_lane: bool = False


class LoadResult(RunState):
    """``bench load --json`` (docs/JSON.md, "bench load")."""

    bench: Literal["load"]
    lanes: dict[str, LoadLane]
    config: BenchConfig
    schedule: Schedule | None = None
