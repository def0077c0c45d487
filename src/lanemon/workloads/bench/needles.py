"""Needles: is a random 8-character key, hidden at a random depth, found at each length?

Per lane: the same calibration as the prefill ladder (tokens per character of
our filler, from the lane's own usage); then for each length and rep a fresh
key (letters and digits) and depth (10-90 % of the filler), the key sentence
``The pass key is KEY. ...`` placed at the paragraph boundary nearest that
depth, the question ``What is the pass key?`` last.  The answer is *found*
when the key appears in it (case-insensitive).  A request the lane refuses
(HTTP 400 for a context that is too long, a timeout, ...) is reported with
its ``error`` and ``found: null`` -- never as "not found".

:func:`needle_results` computes the JSON (docs/JSON.md) from events alone.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING
from collections import defaultdict
from collections.abc import Iterable, Sequence

from lanemon.measure.metrics import request_metrics
from lanemon.events import Event
from lanemon.measure.records import RequestRecord, assemble, reiterable
from lanemon.workloads.bench import prefill
from lanemon.results.needles import NeedleCell, NeedleLane, NeedleResult, NeedleRun
from lanemon.workloads.bench.marks import PlannedCell
from lanemon.workloads.bench.run import (BenchOptions, client_bound_figures, edge, read_marks, request_args, rnd,
                                         run_state, spread)
from lanemon.workloads.prompts import chars_for_tokens, needle_prompt, new_key

if TYPE_CHECKING:
    from lanemon.measure.load import ClientLoad

BENCH = "needles"
#: Reply cap: the answer is the key and a few words.
ANSWER_MAX_TOKENS = 32
DEPTH_RANGE = (0.1, 0.9)


def plan(lanes: Sequence[str], opts: BenchOptions) -> list[PlannedCell]:
    return prefill.plan(lanes, opts, kind=BENCH)


async def run(h, opts: BenchOptions) -> None:
    rng = prefill.rng_for(opts)
    lengths = opts.lengths_for(BENCH)

    async def one_lane(lane: str, lane_rng: random.Random) -> None:
        tpc = await prefill.calibrate(h, lane, opts, lane_rng, BENCH, lengths)
        if tpc is None:  # calibration failed: its cell says why
            return
        ctx, source = prefill.lane_context(h, lane, opts)
        for length in lengths:
            for rep in range(opts.reps):
                cell = prefill.cell_id(lane, length, rep)
                keys = {"part": "length", "length": length, "rep": rep}
                if prefill.fits(length, ctx):  # the engine's counters and the GPU's energy read at the cell's edges
                    await edge(h)
                h.mark("cell", lane=lane, bench=BENCH, phase="start", cell=cell, **keys)
                if not prefill.fits(length, ctx):
                    h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, errors=0, skipped=True,
                           error=prefill.beyond_context(length, ctx, source), **keys)
                    continue
                key = new_key(lane_rng)
                text, depth = needle_prompt(chars_for_tokens(length, tpc), key, lane_rng.uniform(*DEPTH_RANGE),
                                            lane_rng)
                meta = {"bench": BENCH, "cell": cell, **keys, "run": "needle", "key": key, "depth": depth,
                        "chars": len(text)}
                rec = await h.request(lane, opts.endpoint, meta=meta,
                                      **request_args(text, opts, ANSWER_MAX_TOKENS)._asdict())
                tpc = prefill.tokens_per_char(rec, len(text)) or tpc
                h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, errors=0 if rec.ok else 1,
                       found=found_in(key, rec.text) if rec.ok else None, **keys)
                await edge(h)

    await prefill._per_lane(h, opts, rng, one_lane)


def found_in(key: str, answer: str) -> bool:
    return bool(key) and key.lower() in (answer or "").lower()


# ---------------------------------------------------------------------------
# Results (pure)
# ---------------------------------------------------------------------------


def _run_result(rec: RequestRecord) -> NeedleRun:
    m = request_metrics(rec)
    key = str(rec.meta.get("key", ""))
    ok = rec.ok
    depth = rec.meta.get("depth")
    return NeedleRun(
        rep=int(rec.meta.get("rep", 0)),
        found=found_in(key, rec.text) if ok else None,
        key=key,
        answer=rec.text if ok else None,
        depth=depth if isinstance(depth, (int, float)) and not isinstance(depth, bool) else None,
        prompt_tokens=rec.prompt_tokens,
        ttft_s=rnd(m.ttft_s) if ok else None,
        prefill_tok_s=rnd(m.prefill_tok_s) if ok else None,
        error=None if ok else str((rec.error or {}).get("message") or (rec.error or {}).get("cls") or "error"),
    )


def _length_result(recs: list[RequestRecord], load=None) -> NeedleCell:
    runs = [_run_result(r) for r in sorted(recs, key=lambda r: int(r.meta.get("rep", 0)))]
    # the headline run: the first that was not found (or errored), else the first
    head = next((r for r in runs if r.found is not True), runs[0])
    answered = [r for r in runs if r.error is None]
    found: bool | None = all(r.found for r in answered) if answered else None
    return NeedleCell(
        found=found,
        key=head.key,
        answer=head.answer,
        depth=head.depth,
        prompt_tokens=head.prompt_tokens,
        ttft_s=head.ttft_s,
        prefill_tok_s=head.prefill_tok_s,
        error=head.error,
        found_count=sum(1 for r in runs if r.found),
        runs_count=len(runs),
        **spread([r.prefill_tok_s for r in runs])._asdict(),
        **client_bound_figures(recs, load)._asdict(),
        runs=runs,
    )


def needle_results(events: Iterable[Event], *, in_progress: bool = False,
                   load: ClientLoad | None = None) -> NeedleResult:
    """The ``bench needles`` result (docs/JSON.md; ``to_json_obj``: its JSON) from a run's events.  ``load``: the
    run's ``client_load`` windows already folded (as :func:`~lanemon.workloads.bench.decode.decode_results`)."""
    from lanemon.measure.load import client_load

    events = reiterable(events)
    marks = read_marks(events, BENCH)
    load = client_load(events) if load is None else load
    by: dict[str, dict[int, list[RequestRecord]]] = defaultdict(lambda: defaultdict(list))
    for rec in assemble(events):
        meta = rec.meta
        if meta.get("bench") != BENCH or meta.get("run") != "needle" or not marks.finished(meta.get("cell", "")):
            continue
        by[rec.lane][int(meta["length"])].append(rec)
    order = list(marks.lanes)
    for lane in by:
        if lane not in order:
            order.append(lane)
    lanes = {lane: NeedleLane(lengths={str(n): _length_result(by[lane][n], load) for n in sorted(by[lane])})
             for lane in order if lane in by}
    for c in marks.cells.values():  # calibration failures and lengths beyond the context: said, not dropped
        start, end = c.start, c.end
        if end is not None and end.error and (end.skipped or start.part == "calibrate"):
            lane = lanes.setdefault(start.lane or "", NeedleLane(lengths={}))
            if lane.error is None:
                lane.error = end.error
            if end.skipped and start.length is not None:
                lane.lengths.setdefault(str(start.length), NeedleCell(found=None, skipped=True, error=end.error,
                                                                      runs_count=0, found_count=0))
    state = run_state(marks, in_progress)
    return NeedleResult(bench=BENCH, lanes=lanes, interrupted=state.interrupted, cut=state.cut, running=state.running,
                        not_run=state.not_run, config=marks.config)


results = needle_results
