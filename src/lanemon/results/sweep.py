"""``bench sweep``: a lane (its decode levels, gain per doubling, knee), the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import BenchConfig, Num, Obj, Result, RunState
from lanemon.results.decode import DecodeCell


class SweepLane(Result):
    """One lane of a sweep: its levels (decode cells), the gain per doubling and where it stopped."""

    levels: dict[str, DecodeCell] = {}
    gain_per_doubling: dict[str, Num] = {}
    knee: int | None = None
    knee_reliable: bool | None = None
    rests_on: list[int | None] | None = None
    max_aggregate_tok_s: Num = None
    stopped: str | None = None
    slo_held: dict[str, bool] | None = None
    slo_holds_to: int | None = None
    unreliable_levels: list[int] = []
    server: Obj = None


class SweepResult(RunState):
    """``bench sweep --json`` (docs/JSON.md)."""

    bench: Literal["sweep"]
    lanes: dict[str, SweepLane]
    config: BenchConfig
    knee_gain: Num = None
    slo: dict[str, float] | None = None
    crossover: Obj = None
