"""``bench sweep``: a lane (its decode levels, gain per doubling, knee), the whole result.

A key ``--json`` always prints (even as ``null``) is a field without a default; ``slo_held`` (with ``--slo``),
``server`` (a scraped lane) and ``not_run`` (an interrupted run) only sometimes.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import BenchConfig, Num, Obj, Result, RunState
from lanemon.results.decode import Crossover, DecodeCell


class SweepLane(Result, kw_only=True):
    """One lane of a sweep: its levels (decode cells), the gain per doubling and where it stopped."""

    levels: dict[str, DecodeCell]
    gain_per_doubling: dict[str, Num]
    stopped: str
    knee: int | None
    slo_holds_to: int | None
    slo_held: dict[str, bool] | None = None
    max_aggregate_tok_s: Num
    rests_on: list[int] | None
    unreliable_levels: list[int]
    knee_reliable: bool
    server: Obj = None


class SweepResult(RunState, kw_only=True):
    """``bench sweep --json`` (docs/JSON.md)."""

    bench: Literal["sweep"]
    lanes: dict[str, SweepLane]
    crossover: Crossover | None
    knee_gain: float
    slo: dict[str, float] | None
    config: BenchConfig
