"""Decode ladder: aggregate decode throughput by concurrency, per-category C1 rates.

For each lane (one after another; all at once with ``parallel_lanes``), for
each level C and rep: C workers run a *closed loop* -- each pulls the next
prompt from the selected set (interleaved by category: coding-01, prose-01,
..., math-01, coding-02, ...; starting at ``rep x categories``) and sends it as
soon as its previous request ended -- until the level has run
:func:`requests_for_level` requests: C x the number of categories (every
category C times; each worker runs about one request per category), so the
drain at the end of the level stays a small part of its wall time.  Then, per category, each
of its prompts runs once alone (C1) for the per-stream rate.

:func:`decode_results` computes the JSON (docs/JSON.md) from events alone:
the steady-state aggregate ``steady_tok_s`` = tokens that arrived while all C
streams were in flight / that window (:func:`lanemon.measure.stats.steady_state`;
ramp-up and drain left out), beside ``aggregate_tok_s`` = total output tokens /
first send -> last end of the level (:func:`lanemon.measure.metrics.aggregate_tok_s`);
TTFT percentiles, per-stream p50, errors; how many requests ran while lanemon
itself was starved (``client_bound``; such a cell is ``unreliable``, see
:mod:`lanemon.measure.load`); and the crossover between the first two lanes,
decided on the steady-state figure with the shared noise band
(:func:`lanemon.measure.stats.noise_band`): a gap inside the band is a tie.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from lanemon.measure import stats as st
from lanemon.measure.load import ClientLoad, client_load
from lanemon.measure.metrics import (aggregate_tok_s, generated_tokens, median, output_tokens, request_metrics,
                                     summarize)
from lanemon.events import Event
from lanemon.measure.records import EventStore, RequestRecord, assemble, iter_records, reiterable
from lanemon.results.common import ClientLoadInfo
from lanemon.results.decode import (Crossover, DecodeCategoryCell, DecodeCell, DecodeLane, DecodeResult, LaneLevels,
                                    LeaderChange, LevelLead, LevelView, with_category_ratios)
from lanemon.workloads.bench.marks import BenchMarks, PlannedCell
from lanemon.workloads.bench.run import (BenchOptions, RequestArgs, client_bound_figures, request_args, each_lane, edge, first_error,
                                         goodput_of, outcome_figures, read_marks, rnd, run_state, spread,
                                         token_figures)
from lanemon.workloads.prompts import Prompt

BENCH = "decode"


def requests_for_level(level: int, categories: int) -> int:
    """Requests a level runs: ``level x categories``.

    Every category is sent C times and each worker runs about as many
    requests as there are categories, so the drain at the end of a level
    (fewer than C streams left) is a small part of its wall time.
    docs/BENCH.md compares this with shorter designs.
    """
    return max(1, level) * max(1, categories)


def level_cell(lane: str, level: int, rep: int) -> str:
    return f"{lane}/C{level}/r{rep}"


def category_cell(lane: str, category: str, rep: int) -> str:
    return f"{lane}/cat:{category}/r{rep}"


def plan(lanes: Sequence[str], opts: BenchOptions) -> list[PlannedCell]:
    """Every cell the run will do, in order (lane-major), with a rough cost ``weight``."""
    pset = opts.selected()
    ncat = len(pset.categories)
    groups = pset.by_category()
    out: list[PlannedCell] = []
    for lane in lanes:
        for level in opts.levels:
            n = requests_for_level(level, ncat)
            for rep in range(opts.reps):
                out.append(PlannedCell(lane=lane, cell=level_cell(lane, level, rep), part="level", level=level,
                                       rep=rep, requests=n, weight=n / level * (1 + 0.12 * (level - 1))))
        if opts.per_category:
            for rep in range(opts.reps):
                for cat, prompts in groups.items():
                    out.append(PlannedCell(lane=lane, cell=category_cell(lane, cat, rep), part="category",
                                           category=cat, level=1, rep=rep, requests=len(prompts),
                                           weight=float(len(prompts))))
    return out


def _request_args(p: Prompt, opts: BenchOptions) -> RequestArgs:
    return request_args(p.text, opts, min(p.max_tokens, opts.max_tokens) if opts.max_tokens else p.max_tokens)


async def run_level(h, lane: str, level: int, rep: int, order: list[Prompt], ncat: int,
                    opts: BenchOptions) -> list[RequestRecord]:
    """One cell: ``level`` closed-loop workers until the level's request count is reached."""
    n = requests_for_level(level, ncat)
    start = (rep * ncat) % len(order)
    cell = level_cell(lane, level, rep)
    keys = {"part": "level", "level": level, "rep": rep}
    await edge(h)
    h.mark("cell", lane=lane, bench=BENCH, phase="start", cell=cell, requests=n, **keys)
    if level > 1:  # the first wave must not carry C cold connection set-ups (issue 13: the C64 tail)
        await h.clients[lane].warm(level)
    records: list[RequestRecord] = []
    counter = iter(range(n))

    async def worker() -> None:
        for i in counter:
            p = order[(start + i) % len(order)]
            meta = {"bench": BENCH, "cell": cell, **keys, "category": p.category, "prompt_id": p.id}
            records.append(await h.request(lane, opts.endpoint, meta=meta, **_request_args(p, opts)._asdict()))

    async with asyncio.TaskGroup() as tg:
        for _ in range(level):
            tg.create_task(worker())
    errors = sum(1 for r in records if not r.ok)
    h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, requests=len(records), errors=errors, **keys)
    await edge(h)
    return records


async def run_category(h, lane: str, category: str, prompts: list[Prompt], rep: int,
                       opts: BenchOptions) -> None:
    cell = category_cell(lane, category, rep)
    keys = {"part": "category", "category": category, "level": 1, "rep": rep}
    await edge(h)
    h.mark("cell", lane=lane, bench=BENCH, phase="start", cell=cell, requests=len(prompts), **keys)
    errors = 0
    for p in prompts:
        meta = {"bench": BENCH, "cell": cell, **keys, "prompt_id": p.id}
        rec = await h.request(lane, opts.endpoint, meta=meta, **_request_args(p, opts)._asdict())
        errors += not rec.ok
    h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, requests=len(prompts), errors=errors, **keys)
    await edge(h)


async def run(h, opts: BenchOptions) -> None:
    """The whole decode bench on the harness ``h`` (bench start/end marks are the caller's)."""
    pset = opts.selected()
    order = pset.interleaved()
    ncat = len(pset.categories)
    groups = pset.by_category()

    async def one_lane(lane: str) -> None:
        for level in opts.levels:
            for rep in range(opts.reps):
                await run_level(h, lane, level, rep, order, ncat, opts)
        if opts.per_category:
            for rep in range(opts.reps):
                for cat, prompts in groups.items():
                    await run_category(h, lane, cat, prompts, rep, opts)

    await each_lane(h, opts, one_lane)


# ---------------------------------------------------------------------------
# Results (pure)
# ---------------------------------------------------------------------------


def steady_of(recs: list[RequestRecord], level: int) -> dict[str, Any] | None:
    """The steady-state aggregate of one rep of a level (:func:`lanemon.measure.stats.steady_state`)."""
    return st.steady_state(({"sent_ns": r.sent_ns, "end_ns": r.end_ns, "token_ns": r.token_ns,
                             "chunk_tokens": r.chunk_tokens, "generated": generated_tokens(r)[0]}
                            for r in recs if r.ok), level)


def _level_result(reps: dict[int, list[RequestRecord]], slo: dict[str, float] | None = None, level: int = 1,
                  load: ClientLoad | None = None) -> DecodeCell:
    per_rep: list[float | None] = []
    steady_reps: list[float | None] = []
    windows: list[float] = []
    ttft_reps: list[float | None] = []
    all_recs: list[RequestRecord] = []
    for rep in sorted(reps):
        recs = reps[rep]
        all_recs.extend(recs)
        # a rep with an error is an errored cell: no throughput figure from it
        errored = any(not r.ok for r in recs)
        per_rep.append(None if errored else aggregate_tok_s(recs))
        steady = None if errored else steady_of(recs, level)
        steady_reps.append(steady["tok_s"] if steady else None)
        if steady:
            windows.append(steady["window_s"])
        ttft_reps.append(None if errored else summarize(request_metrics(r).ttft_s for r in recs).p50)
    ok = [r for r in all_recs if r.ok]
    ttfts: list[float | None] = []  # the three figures read here, not each request's metrics (gap lists)
    rates: list[float | None] = []
    tpots: list[float | None] = []
    estimated = False
    for r in ok:
        m = request_metrics(r)
        ttfts.append(m.ttft_s)
        rates.append(m.decode_tok_s)
        tpots.append(m.tpot_s)
        estimated = estimated or m.tokens_estimated
    ttft = summarize(ttfts)
    stats = spread(per_rep)
    steady = spread(steady_reps)
    return DecodeCell(
        steady_tok_s=steady.median,
        steady_reps=steady.reps,
        steady_min=steady.min,
        steady_max=steady.max,
        steady_window_s=rnd(median(windows)),
        steady_unstable=steady.unstable,
        aggregate_tok_s=stats.median,
        ttft_p50_reps=[rnd(v) for v in ttft_reps],
        ttft_p50_s=rnd(ttft.p50),
        ttft_p90_s=rnd(ttft.p90),
        ttft_p99_s=rnd(ttft.p99),
        ttft_n=ttft.n,
        ttft_max_s=rnd(ttft.max),
        per_stream_tok_s_p50=rnd(summarize(rates).p50),
        tpot_p50_s=rnd(summarize(tpots).p50),
        errors=len(all_recs) - len(ok),
        **outcome_figures(all_recs)._asdict(),
        requests=len(all_recs),
        output_tokens=sum(output_tokens(r)[0] for r in ok),
        tokens_estimated=estimated,
        **token_figures(ok)._asdict(),
        **stats._asdict(),
        error=first_error(all_recs),
        **client_bound_figures(all_recs, load)._asdict(),
        goodput=goodput_of([reps[k] for k in sorted(reps)], slo),
    )


def _category_result(reps: dict[int, list[RequestRecord]], slo: dict[str, float] | None = None,
                     load: ClientLoad | None = None) -> DecodeCategoryCell:
    per_rep: list[float | None] = []
    rates: list[float] = []
    total = errors = 0
    ttfts: list[float] = []
    for rep in sorted(reps):
        recs = reps[rep]
        total += len(recs)
        errors += sum(1 for r in recs if not r.ok)
        ms = [request_metrics(r) for r in recs if r.ok]
        rep_rates = [m.decode_tok_s for m in ms if m.decode_tok_s is not None]
        rates.extend(rep_rates)
        ttfts.extend(m.ttft_s for m in ms if m.ttft_s is not None)
        per_rep.append(median(rep_rates))
    every = [r for recs in reps.values() for r in recs]
    return DecodeCategoryCell(
        per_stream_tok_s=rnd(median(rates)),
        ttft_p50_s=rnd(median(ttfts)),
        requests=total,
        errors=errors,
        **outcome_figures(every)._asdict(),
        tokens_estimated=any(request_metrics(r).tokens_estimated for r in every if r.ok),
        **token_figures(every)._asdict(),
        **spread(per_rep)._asdict(),
        error=first_error(every),
        **client_bound_figures(every, load)._asdict(),
        goodput=goodput_of([reps[k] for k in sorted(reps)], slo),
    )


def level_figure(cell: DecodeCell | LevelView) -> tuple[float | None, list[float | None], str]:
    """(figure, its reps, basis) a level is judged on: the steady-state aggregate, else first send -> last end."""
    if cell.steady_tok_s is not None:
        return cell.steady_tok_s, list(cell.steady_reps or []), "steady"
    return cell.aggregate_tok_s, list(cell.reps or []), "span"


def level_leads(lanes: Mapping[str, DecodeLane | LaneLevels], a: str, b: str) -> list[LevelLead]:
    """Per level both lanes have a figure on: the gap B / A - 1 on the steady-state aggregate, the shared
    noise band (from the reps where there are any) and the leader (``"tie"`` inside the band; None when
    either cell is unreliable: lanemon was starved while it ran)."""
    la = lanes[a].levels if a in lanes else {}
    lb = lanes[b].levels if b in lanes else {}
    out: list[LevelLead] = []
    for level in sorted(int(k) for k in la if k in lb):
        ca, cb = la[str(level)], lb[str(level)]
        va, ra, basis_a = level_figure(ca)
        vb, rb, basis_b = level_figure(cb)
        if va is None or vb is None:
            continue
        if basis_a != basis_b:  # never compare a steady figure with a span one
            va, ra, basis_a = ca.aggregate_tok_s, list(ca.reps or []), "span"
            vb, rb, basis_b = cb.aggregate_tok_s, list(cb.reps or []), "span"
            if va is None or vb is None:
                continue
        band = st.noise_band("throughput", ra, rb)
        unreliable = bool(ca.unreliable or cb.unreliable)
        who = None if unreliable else st.lead(va, vb, band.band)
        out.append(LevelLead(level=level, a=va, b=vb, gap=rnd(st.rel_gap(va, vb)), band=band.band,
                             band_from_reps=band.from_reps, basis=basis_a, unreliable=unreliable,
                             leader={"a": a, "b": b}.get(who, who) if who else None))
    return out


def judge_levels(by_lane: Mapping[str, DecodeLane | LaneLevels], lanes: Sequence[str]) -> dict[int, LevelLead]:
    """Per level: the judgement the ladder, the crossover, the CLI table, the bench screen and the report make
    (:func:`level_leads`: steady figure, else span; the shared noise band; ``leader`` a lane, ``"tie"`` inside
    the band, None when a cell ran while lanemon was starved).  With more than two lanes the level's two best
    figures are judged.  Each entry also has ``ratio`` (best / runner-up) and ``pair`` (the two lanes judged)."""
    names = [n for n in lanes if n in by_lane]
    out: dict[int, LevelLead] = {}
    levels = sorted({int(k) for n in names for k in by_lane[n].levels})
    for lvl in levels:
        ranked = [(n, level_figure(by_lane[n].levels[str(lvl)])[0]) for n in names
                  if str(lvl) in by_lane[n].levels]
        ranked = [(n, v) for n, v in ranked if v]
        if len(ranked) < 2:
            continue
        if len(names) > 2:
            ranked.sort(key=lambda t: -t[1])
        a, b = ranked[0][0], ranked[1][0]
        got = level_leads({n: LaneLevels(levels={str(lvl): by_lane[n].levels[str(lvl)]}) for n in (a, b)}, a, b)
        if not got:
            continue
        hi, lo = max(got[0].a, got[0].b), min(got[0].a, got[0].b)
        out[lvl] = msgspec.structs.replace(got[0], ratio=hi / lo if lo else None, pair=[a, b])
    return out


def crossover(lanes: Mapping[str, DecodeLane | LaneLevels], order: Sequence[str]) -> Crossover | None:
    """Where leadership by the steady-state aggregate changes between decided levels (first two lanes).

    A level where the gap is inside the noise band is a tie and decides nothing, nor does a level where
    either cell is unreliable; the first change is reported (``changes`` lists all of them) with the
    per-level gaps and bands (``levels``).  None when leadership never changes or there are fewer than
    two lanes.
    """
    if len(order) < 2:
        return None
    a, b = order[0], order[1]
    leads = level_leads(lanes, a, b)
    decided = [(x.level, x.leader) for x in leads if x.leader not in (None, "tie")]
    changes = [LeaderChange(leader_before=w0, leader_after=w1, between=[l0, l1])
               for (l0, w0), (l1, w1) in zip(decided, decided[1:]) if w0 != w1]
    if not changes:
        return None
    first = changes[0]
    return Crossover(leader_before=first.leader_before, leader_after=first.leader_after, between=first.between,
                     compared=[a, b], changes=changes, levels=leads)


def _gap_text(x: LevelLead, a: str, b: str) -> str:
    if x.leader is None:
        return f"C{x.level} not judged (lanemon was starved)"
    gap = x.gap or 0.0
    src = "from the reps" if x.band_from_reps else "default"
    if x.leader == "tie":
        return f"C{x.level} within noise ({b} {gap * 100:+.1f} %, band {x.band * 100:.1f} % {src})"
    return f"C{x.level} {b} {gap * 100:+.1f} % vs {a} (band {x.band * 100:.1f} % {src})"


def crossover_sentence(result: DecodeResult) -> str:
    """``B overtakes A between C3 and C4 (C3 B -4.1 % vs A ...; C4 B +6.0 % vs A ...)`` or who leads throughout,
    always with the gaps and the noise band the statement rests on."""
    x = result.crossover
    lanes = list(result.lanes)
    extra = ""
    if len(lanes) > 2:
        extra = f" (comparing the first two lanes, {lanes[0]} and {lanes[1]})"
    if x:
        lo, hi = x.between
        a, b = x.compared or lanes[:2]
        text = f"{x.leader_after} overtakes {x.leader_before} between C{lo} and C{hi}"
        if len(x.changes) > 1:
            text += f" (leadership changes {len(x.changes)} times)"
        around = [g for g in x.levels if g.level in (lo, hi)]
        if around:
            text += " [" + "; ".join(_gap_text(g, a, b) for g in around) + "]"
        return text + extra
    if len(lanes) < 2:
        return ""
    a, b = lanes[0], lanes[1]
    leads = level_leads(result.lanes, a, b)
    if not leads:
        return "no crossover: no level has a figure on both lanes" + extra
    judged = [g for g in leads if g.leader is not None]
    leaders = {g.leader for g in judged}
    gaps = [g.gap for g in judged if g.gap is not None]
    span = f" ({b} vs {a} {min(gaps) * 100:+.1f} % to {max(gaps) * 100:+.1f} %)" if gaps else ""
    starved = len(leads) - len(judged)
    tail = f"; {starved} level(s) not judged: lanemon was starved" if starved else ""
    if leaders == {"tie"}:
        return f"no crossover: {a} and {b} within noise at every level{span}{tail}" + extra
    if not judged:
        return f"no crossover: no level could be judged (lanemon was starved){extra}"
    winners = leaders - {"tie"}
    leader = next(iter(winners))
    ties = sum(1 for g in judged if g.leader == "tie")
    where = f"at every measured level outside the noise band ({ties} within noise)" if ties else "at every measured level"
    return f"no crossover: {leader} leads {where}{span}{tail}" + extra


def _cells(records: Iterable[RequestRecord], marks: BenchMarks, *, keep: bool = True) -> tuple[dict, dict]:
    """The finished cells' requests: ``({lane: {level: {rep: [records]}}}, {lane: {category: {rep: [records]}}})``,
    lanes in order of their first such request.  ``keep=False``: the same walk, keeping only which lanes have
    which cells (the lists stay empty)."""
    levels_by: dict[str, dict[int, dict[int, list[RequestRecord]]]] = defaultdict(lambda: defaultdict(dict))
    cats_by: dict[str, dict[str, dict[int, list[RequestRecord]]]] = defaultdict(lambda: defaultdict(dict))
    for rec in records:  # no figure here reads the text: a big recording's is not held
        meta = rec.meta
        if meta.get("bench") != BENCH or not marks.finished(meta.get("cell", "")):
            continue
        rep = int(meta.get("rep", 0))
        if meta.get("part") == "level":
            cell = levels_by[rec.lane][int(meta["level"])].setdefault(rep, [])
        elif meta.get("part") == "category":
            cell = cats_by[rec.lane][str(meta.get("category"))].setdefault(rep, [])
        else:
            continue
        if keep:
            cell.append(rec)
    return levels_by, cats_by


def decode_results(events: Iterable[Event], *, in_progress: bool = False,
                   slo: dict[str, float] | None = None, load: ClientLoad | None = None) -> DecodeResult:
    """The ``bench decode`` result (docs/JSON.md; ``to_json_obj``: its JSON) from a run's events.  ``slo``: the targets when the run's
    own start mark is another bench's (a sweep records decode cells under its ``sweep`` start mark).  ``load``:
    the run's ``client_load`` windows already folded (the bench screen's fold keeps one: its calls then read no
    window again); None: folded from ``events``."""
    events = reiterable(events)
    marks = read_marks(events, BENCH)
    load = client_load(events) if load is None else load
    if isinstance(events, EventStore):  # a big recording: only one lane's requests held at a time
        levels_by, cats_by = _cells(iter_records(events, keep_text=False), marks, keep=False)

        def lane_cells(lane: str) -> tuple[dict, dict]:
            lv, cv = _cells(iter_records((ev for ev in events if ev.lane == lane), keep_text=False), marks)
            return lv.get(lane, {}), cv.get(lane, {})
    else:
        levels_by, cats_by = _cells(assemble(events, keep_text=False), marks)

        def lane_cells(lane: str) -> tuple[dict, dict]:
            return levels_by.get(lane, {}), cats_by.get(lane, {})
    # finished cells with no request at all (e.g. every request was cut) still count as cells
    order = list(marks.lanes) or sorted(set(levels_by) | set(cats_by))
    for lane in list(levels_by) + list(cats_by):
        if lane not in order:
            order.append(lane)
    lanes: dict[str, DecodeLane] = {}
    config = marks.config
    cfg_cats = config.categories or []
    for lane in order:
        if lane not in levels_by and lane not in cats_by:
            continue
        lv, cv = lane_cells(lane)
        slo = config.slo or slo or None
        cats = {c: _category_result(cv[c], slo, load) for c in cfg_cats if c in cv}
        cats.update({c: _category_result(v, slo, load) for c, v in cv.items() if c not in cats})
        lanes[lane] = DecodeLane(levels={str(level): _level_result(lv[level], slo, level, load) for level in sorted(lv)},
                                 categories=cats)
    state = run_state(marks, in_progress)
    return with_category_ratios(DecodeResult(bench=BENCH, lanes=lanes, crossover=crossover(lanes, list(lanes)),
                        interrupted=state.interrupted, cut=state.cut, running=state.running, not_run=state.not_run,
                        client_load=ClientLoadInfo(watched=load.watching, starved_windows=load.bound_windows,
                                                   max_lag_ms=rnd(load.max_lag_ms, 1) if load.watching else None),
                        config=config))


results = decode_results
