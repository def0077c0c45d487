"""``bench load``: a rep, a lane, the offered schedule, the whole result.

A key ``--json`` always prints (even as ``null``) is a field without a default; a key printed only sometimes has
one (``slo`` with ``--slo``, ``ttft_p50_s_by_turn`` with ``--turns``, the energy attached by measure/views.py).

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import BenchConfig, Energy, Num, Obj, Result, RunState, SloTarget


class LatencyPercentiles(Result, kw_only=True):
    """A latency's percentiles over a rep's completed requests (seconds; ``n`` the requests they rest on)."""

    p50: Num
    p90: Num
    p99: Num
    n: int
    max: Num


class SendLag(Result, kw_only=True):
    """How late lanemon sent the rep's requests against their schedule (seconds, every request)."""

    p50: Num
    p99: Num
    max: Num
    n: int


class LoadSlo(Result, kw_only=True):
    """A rep judged against ``--slo`` (:meth:`lanemon.measure.slo.SloResult.to_result`: every key, always)."""

    goodput_rps: Num
    good: int
    total: int
    share: Num
    duration_s: Num
    held: bool
    targets: dict[str, SloTarget]


class LostWorker(Result, kw_only=True):
    """A load host lost mid-rep (docs/WORKERS.md): the keys it was known by."""

    node: str | None = None
    host: str | None = None
    address: str | None = None
    why: str | None = None


class LoadRep(Energy, kw_only=True):
    """One rep of one lane over its measured window (docs/JSON.md, "bench load")."""

    cell: str
    requests: int
    measured: int
    ok: int
    errors: int
    truncated: int
    empty: int
    bursts: int
    offered_rate_rps: Num
    scheduled_rate_rps: Num
    sent_rate_rps: Num
    completed_rate_rps: Num
    completed_rate_reason: str | None
    completed_in_window: int | None
    served_tokens: Num
    measured_window_ns: list[int] | None
    output_tok_s: Num
    visible_tok_s: Num
    reasoning_tok_s: Num
    lane_behind: bool | None
    backlog_at_end: int | None
    ttft_early_s: Num
    ttft_late_s: Num
    ttft_s: LatencyPercentiles
    tpot_s: LatencyPercentiles
    e2e_s: LatencyPercentiles
    send_lag_s: SendLag
    client_behind: bool
    ttft_p50_s_by_turn: dict[str, Num] | None = None
    input_tokens_asked_p50: Num
    input_tokens_p50: Num
    output_tokens_asked_p50: Num
    output_tokens_p50: Num
    tokens_estimated: bool
    error: str | None
    slo: LoadSlo | None = None
    refused: int
    refused_error: str | None
    not_sent: int
    workers_lost: list[LostWorker]


class LoadLane(Result, kw_only=True):
    reps: list[LoadRep]
    offered_rate_rps: Num
    client_behind: bool
    lane_behind: bool
    slo_held: bool | None = None
    server: Obj = None


class Schedule(Result, kw_only=True):
    """The offered schedule every lane was given (workloads/bench/schedule.py)."""

    seed: int | None
    seed_drawn: bool
    same_for_every_lane: bool


class LoadResult(RunState, kw_only=True):
    """``bench load --json`` (docs/JSON.md, "bench load")."""

    bench: Literal["load"]
    lanes: dict[str, LoadLane]
    schedule: Schedule
    config: BenchConfig


__all__ = ["LatencyPercentiles", "LoadLane", "LoadRep", "LoadResult", "LoadSlo", "LostWorker", "Schedule", "SendLag"]
