"""Find the knee: raise concurrency until throughput stops growing or an SLO breaks.

``bench sweep`` runs the decode ladder's closed-loop cells (the same cells,
recorded the same way, so ``decode`` figures come out of a sweep recording too)
at levels 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64 (up to ``max_level``), on
each lane, and stops a lane at the first of:

* **the knee** -- the aggregate tok/s gained from the previous level, scaled to
  a doubling of C, is below ``knee_gain`` (default 10 %): more streams only add
  queueing.  The knee is the previous level;
* **an SLO breaks** -- with ``--slo ttft=S tpot=S e2e=S``: p90 TTFT, median TPOT
  or p90 E2E of the level's completed requests is over the target
  (:mod:`lanemon.measure.slo`).  The SLO holds up to the previous level;
* errors at a level (a lane that fails under load has no knee to find).

A level run while lanemon itself was starved (its decode cell is ``unreliable``:
client-bound requests) cannot tell a lane's knee from lanemon's own limit: the
result lists such levels and ``knee_reliable`` is false when the knee rests on one.

With reps, every level's aggregate is the median of the reps and carries their
min/max; the knee and the crossover between the first two lanes (decided on
the levels both ran, :func:`lanemon.workloads.bench.decode.crossover`) say
which levels they rest on.  :func:`sweep_results` recomputes all of it from the
events.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from lanemon.measure.records import reiterable
from lanemon.events import Event
from lanemon.measure.metrics import aggregate_tok_s, median, request_metrics
from lanemon.measure import slo as slo_mod
from lanemon.results.common import BenchConfig, as_result
from lanemon.results.decode import DecodeResult
from lanemon.results.sweep import SweepLane, SweepResult
from lanemon.workloads.bench import decode
from lanemon.workloads.bench.marks import PlannedCell
from lanemon.workloads.bench.run import each_lane, rnd

BENCH = "sweep"
LEVELS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64)
KNEE_GAIN = 0.10


def levels_up_to(max_level: int) -> list[int]:
    return [c for c in LEVELS if c <= max_level] or [1]


def gain_per_doubling(c0: int, agg0: float, c1: int, agg1: float) -> float:
    """Relative aggregate gain from level c0 to c1, scaled to a doubling of C (pure)."""
    if agg0 <= 0 or c1 <= c0:
        return 0.0
    return (agg1 / agg0) ** (1.0 / math.log2(c1 / c0)) - 1.0


def slo_breach(records, slo: dict[str, float] | None) -> str | None:
    """Which SLO target a level's requests break (p90 TTFT, median TPOT, p90 E2E of the completed ones:
    :mod:`lanemon.measure.slo`), or None."""
    if not slo:
        return None
    ms = [request_metrics(r) for r in records]
    if not any(m.ok for m in ms):
        return "no completed request"
    return slo_mod.evaluate(ms, slo, None).breach()


def stop_reason(levels: Sequence[int], aggs: Sequence[float | None], breach: str | None, errors: int,
                knee_gain: float) -> str | None:
    """Why a lane's sweep stops after its last level (pure), or None to go on."""
    if errors:
        return "errors"
    if breach:
        return "slo"
    if len(levels) >= 2 and aggs[-1] is not None and aggs[-2] is not None:
        if gain_per_doubling(levels[-2], aggs[-2], levels[-1], aggs[-1]) < knee_gain:
            return "knee"
    return None


def plan(lanes: Sequence[str], opts) -> list[PlannedCell]:
    """The most the sweep can run (it stops earlier at the knee)."""
    ncat = len(opts.selected().categories)
    return [PlannedCell(lane=lane, cell=decode.level_cell(lane, c, rep), part="level", level=c, rep=rep,
                        requests=decode.requests_for_level(c, ncat),
                        weight=float(decode.requests_for_level(c, ncat)))
            for lane in lanes for c in levels_up_to(opts.max_level) for rep in range(opts.reps)]


async def run(h, opts) -> None:
    pset = opts.selected()
    order = pset.interleaved()
    ncat = len(pset.categories)

    async def one_lane(lane: str) -> None:
        done: list[int] = []
        aggs: list[float | None] = []
        for level in levels_up_to(opts.max_level):
            recs_by_rep = [await decode.run_level(h, lane, level, rep, order, ncat, opts) for rep in range(opts.reps)]
            per_rep = [aggregate_tok_s(recs) for recs in recs_by_rep]
            done.append(level)
            aggs.append(median([x for x in per_rep if x is not None]))
            flat = [r for recs in recs_by_rep for r in recs]
            reason = stop_reason(done, aggs, slo_breach(flat, opts.slo), sum(not r.ok for r in flat),
                                 opts.knee_gain)
            if reason:
                h.mark("sweep", lane=lane, bench=BENCH, phase="stop", reason=reason, level=level)
                return
        h.mark("sweep", lane=lane, bench=BENCH, phase="stop", reason="max_level", level=done[-1] if done else None)

    await each_lane(h, opts, one_lane)


def sweep_results(events: Iterable[Event], *, in_progress: bool = False) -> SweepResult:
    """The ``bench sweep`` result (``--json``): the decode figures of every level run, plus each lane's knee."""
    events = reiterable(events)
    raw: dict[str, object] = {}
    stops: dict[str, object] = {}
    for ev in events:
        if ev.kind != "mark" or ev.data.get("bench") != BENCH:
            continue
        if ev.data.get("label") == "bench" and ev.data.get("phase") == "start":
            raw = dict(ev.data.get("config") or {})
        elif ev.data.get("label") == "sweep" and ev.lane:
            stops[ev.lane] = ev.data.get("reason")
    config = as_result(raw, BenchConfig)  # the start mark's, read back (a recording's: untrusted)
    knee_gain = float(config.knee_gain or KNEE_GAIN)
    slo = config.slo or None
    # the levels' goodput judged on it (as_result: decode_results may still return its JSON)
    dec = as_result(decode.decode_results(events, in_progress=in_progress, slo=slo), DecodeResult)
    lanes: dict[str, SweepLane] = {}
    for lane, d in dec.lanes.items():
        levels = sorted(int(k) for k in d.levels)
        cells = [d.levels[str(c)] for c in levels]
        aggs = [c.aggregate_tok_s for c in cells]
        gains = [None] + [rnd(gain_per_doubling(levels[i - 1], aggs[i - 1], levels[i], aggs[i]), 4)
                          if aggs[i - 1] and aggs[i] is not None else None for i in range(1, len(levels))]
        reason = stops.get(lane)
        reason = reason if isinstance(reason, str) else None
        knee = levels[-2] if reason == "knee" and len(levels) >= 2 else None
        slo_ok = (levels[-2] if len(levels) >= 2 else None) if reason == "slo" else (levels[-1] if levels else None)
        unreliable = [c for c, cell in zip(levels, cells) if cell.unreliable]
        rests_on = [levels[-2], levels[-1]] if knee else None
        lanes[lane] = SweepLane(
            levels=dict(d.levels),
            gain_per_doubling=dict(zip((str(c) for c in levels), gains)),
            stopped=reason or ("running" if in_progress else "cut"),
            knee=knee,
            slo_holds_to=slo_ok if slo else None,
            slo_held={str(c): bool(cell.goodput and cell.goodput.held) for c, cell in zip(levels, cells)}
            if slo else None,
            max_aggregate_tok_s=max((a for a in aggs if a is not None), default=None),
            rests_on=rests_on,
            unreliable_levels=unreliable,
            knee_reliable=bool(knee) and not any(c in unreliable for c in rests_on or ()),
        )
    return SweepResult(bench=BENCH, lanes=lanes, crossover=dec.crossover, knee_gain=knee_gain, slo=slo,
                       interrupted=dec.interrupted, cut=dec.cut, not_run=dec.not_run, config=config)


results = sweep_results
