"""Prefill ladder: cold prefill tok/s by prompt length, prefix-cache hits labelled apart.

Per lane: one *calibration* request (filler of up to 2,000 typical tokens, no
more than the longest length asked for nor half the lane's context; 1-token
reply) tells how many of the lane's own tokens a character of our filler is
(``usage.prompt_tokens / characters``; a lane's tokenizer is not ours).  The
context is ``--max-context`` or the ``max_model_len`` the lane's ``/v1/models``
reports; a length that does not fit is not sent (its cell says why).  A lane
whose streams carry no usage is asked once more without streaming (the answer's
usage; recorded as a ``calibrate`` mark), so counts are calibrated estimates,
not the requested lengths.  A calibration that fails is an error: the lane's
cells are not run and the command exits non-zero.  Then
for each length and rep a *cold* request: a fresh random nonce first (so no
prefix cache can serve it), filler sized to the length, an instruction last,
``max_tokens: 1``; prefill tok/s = prompt tokens (usage) / TTFT.  After the
first rep of each length the same prompt is sent once more (*repeat*).  It is
a prefix-cache hit -- reported as ``cache_hit_tok_s``, never as prefill -- when
the server says so (``usage.prompt_tokens_details.cached_tokens`` > 0;
``cache_hit_source: "cached_tokens"``), else, for a lane that does not report
cached tokens, when it is more than :data:`CACHE_HIT_FACTOR` x faster than the
cold median (``cache_hit_source: "timing"``).
Calibration is refined after every cold run from its own usage.

:func:`prefill_results` computes the JSON (docs/JSON.md) from events alone.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING
from collections import defaultdict
from collections.abc import Iterable, Sequence

import msgspec

from lanemon.measure.metrics import median, request_metrics
from lanemon.events import Event
from lanemon.measure.records import RequestRecord, assemble, reiterable
from lanemon.results.prefill import PrefillCell, PrefillLane, PrefillResult, prefill_ratios
from lanemon.workloads.bench.marks import CellEnd, PlannedCell
from lanemon.workloads.bench.run import (BenchOptions, client_bound_figures, edge, first_error, goodput_of,
                                         outcome_figures, read_marks, request_args, rnd, run_state, spread)
from lanemon.workloads.prompts import DEFAULT_TOKENS_PER_CHAR, chars_for_tokens, prefill_prompt, usage_tokens_per_char

if TYPE_CHECKING:
    from lanemon.measure.load import ClientLoad

BENCH = "prefill"
#: A repeat this many times faster than the cold median is a prefix-cache hit.
CACHE_HIT_FACTOR = 2.0
#: Size of the calibration prompt, in tokens of a typical (~4 chars/token) tokenizer.
CALIBRATION_TOKENS = 2000
MIN_CALIBRATION_TOKENS = 32


def lane_context(h, lane: str, opts: BenchOptions) -> tuple[int | None, str | None]:
    """(context length in tokens, where it came from): ``--max-context`` or the lane's ``/v1/models``
    (the smaller when both are known), else (None, None)."""
    given = getattr(opts, "max_context", None)
    client = h.clients.get(lane) if hasattr(h, "clients") else None
    served = getattr(client, "max_model_len", None)
    if given and (not served or given <= served):
        return int(given), "--max-context"
    if served:
        return int(served), "/v1/models"
    return None, None


def fits(length: int, ctx: int | None) -> bool:
    """Whether a prompt of ``length`` tokens (+ a few for the reply and the estimate's error) fits ``ctx``."""
    return ctx is None or length + max(8, length // 20) <= ctx


def beyond_context(length: int, ctx: int, source: str | None) -> str:
    return f"{length} tokens is beyond the lane's context ({ctx} tokens, from {source}): not sent"


def cell_id(lane: str, length: int, rep: int) -> str:
    return f"{lane}/{length}/r{rep}"


def calibrate_cell(lane: str) -> str:
    return f"{lane}/calibrate"


def plan(lanes: Sequence[str], opts: BenchOptions, kind: str = BENCH) -> list[PlannedCell]:
    out: list[PlannedCell] = []
    lengths = opts.lengths_for(kind)
    for lane in lanes:
        out.append(PlannedCell(lane=lane, cell=calibrate_cell(lane), part="calibrate", rep=0,
                               weight=CALIBRATION_TOKENS / 1000))
        for length in lengths:
            for rep in range(opts.reps):
                repeat = kind == BENCH and rep == 0 and opts.cache_check
                out.append(PlannedCell(lane=lane, cell=cell_id(lane, length, rep), part="length", length=length,
                                       rep=rep, weight=length / 1000 * (2 if repeat else 1)))
    return out


def rng_for(opts: BenchOptions) -> random.Random:
    return random.Random(opts.seed) if opts.seed is not None else random.Random()


def tokens_per_char(rec: RequestRecord, chars: int) -> float | None:
    """The lane's tokens per character from an answer's usage, or None (no usage, or one no tokenizer gives:
    :func:`~lanemon.workloads.prompts.usage_tokens_per_char`)."""
    return usage_tokens_per_char(rec.prompt_tokens, chars) if rec.ok else None


async def _answer_usage(h, lane: str, opts: BenchOptions, text: str, cell: str, bench: str) -> int | None:
    """Prompt tokens of ``text`` from a non-streaming answer's usage (for lanes whose streams carry none).

    The request is recorded as a ``calibrate`` mark (sent characters, status, prompt tokens, seconds):
    no request goes unrecorded."""
    client = h.clients[lane]
    args = request_args(text, opts, 1)
    body = client.build_body(opts.endpoint, prompt=args.prompt, messages=args.messages,
                             max_tokens=1, extra=args.extra, include_usage=False)
    body["stream"] = False
    status, obj, secs, err = await client.post_json(opts.endpoint, body)
    usage = obj.get("usage") if isinstance(obj, dict) else None
    pt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    pt = pt if isinstance(pt, int) and not isinstance(pt, bool) and pt > 0 else None
    h.mark("calibrate", lane=lane, bench=bench, cell=cell, request="non-streaming", purpose="usage",
           chars=len(text), status=status, prompt_tokens=pt, seconds=rnd(secs), error=err)
    return pt


async def calibrate(h, lane: str, opts: BenchOptions, rng: random.Random, bench: str,
                    lengths: Sequence[int] = ()) -> float | None:
    """Tokens per character of our filler on ``lane``, or None when calibration failed (the cell's end
    mark says why; the caller then runs no cell on that lane)."""
    cell = calibrate_cell(lane)
    ctx, source = lane_context(h, lane, opts)
    h.mark("cell", lane=lane, bench=bench, phase="start", cell=cell, part="calibrate", rep=0)
    target = min(CALIBRATION_TOKENS, max(lengths)) if lengths else CALIBRATION_TOKENS
    if ctx:
        target = min(target, ctx // 2)  # room for a tokenizer twice as dense as a typical one
    target = max(MIN_CALIBRATION_TOKENS, target)
    tpc = prompt_tokens = None
    counted = None
    errors = 0
    message = None
    for attempt in range(2):
        text = prefill_prompt(chars_for_tokens(target, DEFAULT_TOKENS_PER_CHAR), rng)
        rec = await h.request(lane, opts.endpoint, meta={"bench": bench, "cell": cell, "part": "calibrate",
                                                         "run": "calibrate", "rep": 0, "chars": len(text),
                                                         "attempt": attempt}, **request_args(text, opts, 1)._asdict())
        tpc = tokens_per_char(rec, len(text))
        if tpc is not None:
            prompt_tokens, counted = rec.prompt_tokens, "usage"
            break
        errors += 0 if rec.ok else 1
        if rec.ok:  # answered, but the stream carried no usage: ask for a non-streaming answer's
            prompt_tokens = await _answer_usage(h, lane, opts, text, cell, bench)
            tpc = usage_tokens_per_char(prompt_tokens, len(text))
            if tpc is not None:
                counted = "non-streaming usage"
            elif prompt_tokens:
                message = (f"calibration: the lane said {prompt_tokens} prompt tokens for {len(text)} characters, "
                           "not a possible ratio; counts are estimates")
            else:
                message = "calibration: the lane reported no usage (streaming or not); counts are estimates"
            break
        message = "calibration failed: " + ((rec.error.message if rec.error is not None else None) or "error")
        if (rec.error.status if rec.error is not None else None) != 400 or target <= MIN_CALIBRATION_TOKENS * 4:
            break
        target //= 4  # a 400 is most often "too long for this model": try once with a quarter
    failed = tpc is None and errors > 0
    h.mark("cell", lane=lane, bench=bench, phase="end", cell=cell, part="calibrate", rep=0,
           errors=errors if failed else 0, tokens_per_char=rnd(tpc, 6), calibration_prompt_tokens=prompt_tokens,
           counted_from=counted, max_context=ctx, max_context_source=source,
           error=message if failed else None, warning=None if failed else message)
    if failed:
        h.note(f"lane {lane}: {message}", "error")
        return None
    return tpc or DEFAULT_TOKENS_PER_CHAR


async def run(h, opts: BenchOptions) -> None:
    rng = rng_for(opts)
    lengths = opts.lengths_for(BENCH)

    async def one_lane(lane: str, lane_rng: random.Random) -> None:
        tpc = await calibrate(h, lane, opts, lane_rng, BENCH, lengths)
        if tpc is None:
            return
        ctx, source = lane_context(h, lane, opts)
        for length in lengths:
            for rep in range(opts.reps):
                cell = cell_id(lane, length, rep)
                keys = {"part": "length", "length": length, "rep": rep}
                if fits(length, ctx):  # the engine's counters and the GPU's energy read at the cell's edges
                    await edge(h)
                h.mark("cell", lane=lane, bench=BENCH, phase="start", cell=cell, **keys)
                if not fits(length, ctx):
                    h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, errors=0, skipped=True,
                           error=beyond_context(length, ctx, source), **keys)
                    continue
                text = prefill_prompt(chars_for_tokens(length, tpc), lane_rng)
                meta = {"bench": BENCH, "cell": cell, **keys, "chars": len(text)}
                cold = await h.request(lane, opts.endpoint, meta={**meta, "run": "cold"}, **request_args(text, opts, 1)._asdict())
                errors = 0 if cold.ok else 1
                tpc = tokens_per_char(cold, len(text)) or tpc
                if cold.ok and rep == 0 and opts.cache_check:
                    again = await h.request(lane, opts.endpoint, meta={**meta, "run": "repeat"},
                                            **request_args(text, opts, 1)._asdict())
                    errors += 0 if again.ok else 1
                h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, errors=errors, **keys)
                await edge(h)

    await _per_lane(h, opts, rng, one_lane)


async def _per_lane(h, opts: BenchOptions, rng: random.Random, one_lane) -> None:
    from lanemon.workloads.bench.run import each_lane

    seeds = {lane: rng.getrandbits(64) for lane in h.names}
    await each_lane(h, opts, lambda lane: one_lane(lane, random.Random(seeds[lane])))


# ---------------------------------------------------------------------------
# Results (pure)
# ---------------------------------------------------------------------------


def _length_result(runs: dict[str, list[RequestRecord]], length: int,
                   slo: dict[str, float] | None = None, tpc: float | None = None, load=None) -> PrefillCell:
    cold = sorted(runs.get("cold", []), key=lambda r: int(r.meta.get("rep", 0)))
    per_rep: list[float | None] = []
    ttfts: list[float] = []
    prompt_tokens: list[int] = []
    estimated = False
    for r in cold:
        m = request_metrics(r)
        if not r.ok or m.ttft_s is None:
            per_rep.append(None)
            continue
        pt = r.prompt_tokens
        if pt is None:  # no usage in the stream: the calibrated estimate (else the requested length), flagged
            chars = int(r.meta.get("chars") or 0)
            pt, estimated = (round(chars * tpc) if tpc and chars else length), True
        per_rep.append(pt / m.ttft_s if m.ttft_s > 0 else None)
        ttfts.append(m.ttft_s)
        prompt_tokens.append(pt)
    stats = spread(per_rep)
    cold_median = stats.median
    repeat_rate = cached = None
    for r in runs.get("repeat", []):
        m = request_metrics(r)
        if r.ok and m.ttft_s:
            pt = r.prompt_tokens
            if pt is None:
                chars = int(r.meta.get("chars") or 0)
                pt = round(chars * tpc) if tpc and chars else length
            repeat_rate = pt / m.ttft_s
            cached = r.cached_tokens
            break
    if cached is not None:  # the server's own word
        hit, source = cached > 0, "cached_tokens"
    else:  # timing is only the fallback
        hit = repeat_rate is not None and cold_median is not None and repeat_rate > CACHE_HIT_FACTOR * cold_median
        source = "timing" if repeat_rate is not None and cold_median is not None else None
    all_recs = cold + runs.get("repeat", [])
    return PrefillCell(
        prompt_tokens=int(median(prompt_tokens)) if prompt_tokens else None,
        prefill_tok_s=cold_median,
        ttft_s=rnd(median(ttfts)),
        cache_hit_tok_s=rnd(repeat_rate) if hit else None,
        repeat_tok_s=rnd(repeat_rate),
        repeat_cached_tokens=cached,
        cache_hit_source=source,
        **stats._asdict(),
        tokens_estimated=estimated,
        requests=len(all_recs),
        errors=sum(1 for r in all_recs if not r.ok),
        **outcome_figures(all_recs)._asdict(),
        **client_bound_figures(all_recs, load)._asdict(),
        error=first_error(all_recs),
        goodput=goodput_of([[r] for r in cold], slo),
    )


def prefill_results(events: Iterable[Event], *, in_progress: bool = False, bench: str = BENCH,
                    load: ClientLoad | None = None) -> PrefillResult:
    """The ``bench prefill`` result (docs/JSON.md; ``to_json_obj``: its JSON) from a run's events.  ``load``: the
    run's ``client_load`` windows already folded (as :func:`~lanemon.workloads.bench.decode.decode_results`)."""
    from lanemon.measure.load import client_load

    events = reiterable(events)
    marks = read_marks(events, bench)
    load = client_load(events) if load is None else load
    by: dict[str, dict[int, dict[str, list[RequestRecord]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    calib: dict[str, float | None] = {}
    for rec in assemble(events):
        meta = rec.meta
        if meta.get("bench") != bench or not marks.finished(meta.get("cell", "")):
            continue
        if meta.get("run") == "calibrate":
            calib[rec.lane] = rnd(tokens_per_char(rec, int(meta.get("chars") or 0)), 6) or calib.get(rec.lane)
            continue
        if meta.get("length") is None:
            continue
        by[rec.lane][int(meta["length"])][str(meta.get("run", "cold"))].append(rec)
    order = list(marks.lanes)
    for lane in by:
        if lane not in order:
            order.append(lane)
    ends = {c.start.lane: c.end for c in marks.cells.values() if c.start.part == "calibrate" and c.end is not None}
    skipped: dict[str | None, dict[int, str]] = defaultdict(dict)
    for c in marks.cells.values():
        if c.end is not None and c.end.skipped and c.start.length is not None:
            skipped[c.start.lane][c.start.length] = c.end.error or "skipped"
    config = marks.config
    lanes: dict[str, PrefillLane] = {}
    for lane in order:
        if lane not in by and lane not in calib and lane not in ends:
            continue
        end = ends.get(lane) or CellEnd()
        tpc = end.tokens_per_char or calib.get(lane)
        lengths = by.get(lane, {})
        cells = {n: _length_result(lengths[n], n, config.slo or None, tpc, load) for n in lengths}
        for n, why in skipped.get(lane, {}).items():
            if n not in cells:
                cells[n] = msgspec.structs.replace(_length_result({}, n), skipped=True, error=why)
        lanes[lane] = PrefillLane(
            lengths={str(n): cells[n] for n in sorted(cells)},
            tokens_per_char=tpc,
            tokens_counted_from=end.counted_from,
            calibration_prompt_tokens=end.calibration_prompt_tokens,
            max_context=end.max_context,
            max_context_source=end.max_context_source,
            error=end.error or next(iter(skipped.get(lane, {}).values()), None),
        )
    state = run_state(marks, in_progress)
    return PrefillResult(bench=bench, lanes=lanes,
                         ratios=ratios(lanes, order[0], order[1]) if len(order) >= 2 and order[0] in lanes
                         and order[1] in lanes else None,
                         interrupted=state.interrupted, cut=state.cut, running=state.running, not_run=state.not_run,
                         config=config)


ratios = prefill_ratios
"""The second lane's cold prefill over the first's, per length (results/prefill.py: one definition)."""


results = prefill_results
