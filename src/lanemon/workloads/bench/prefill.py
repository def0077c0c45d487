"""Prefill ladder: cold prefill tok/s by prompt length, prefix-cache hits labelled apart.

Per lane: one *calibration* request (about 2,000 tokens of filler, 1-token
reply) tells how many of the lane's own tokens a character of our filler is
(``usage.prompt_tokens / characters``; a lane's tokenizer is not ours).  Then
for each length and rep a *cold* request: a fresh random nonce first (so no
prefix cache can serve it), filler sized to the length, an instruction last,
``max_tokens: 1``; prefill tok/s = prompt tokens (usage) / TTFT.  After the
first rep of each length the same prompt is sent once more (*repeat*); when
that is more than :data:`CACHE_HIT_FACTOR` x faster than the cold median it is
reported as ``cache_hit_tok_s`` -- a prefix-cache hit, never as prefill.
Calibration is refined after every cold run from its own usage.

:func:`prefill_results` computes the JSON (docs/JSON.md) from events alone.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from lanemon.measure.metrics import median, request_metrics
from lanemon.events import Event
from lanemon.measure.records import RequestRecord, assemble
from lanemon.workloads.bench.run import BenchOptions, first_error, goodput_of, read_marks, rnd, run_state, spread
from lanemon.workloads.prompts import DEFAULT_TOKENS_PER_CHAR, chars_for_tokens, prefill_prompt

BENCH = "prefill"
#: A repeat this many times faster than the cold median is a prefix-cache hit.
CACHE_HIT_FACTOR = 2.0
#: Size of the calibration prompt, in tokens of a typical (~4 chars/token) tokenizer.
CALIBRATION_TOKENS = 2000


def cell_id(lane: str, length: int, rep: int) -> str:
    return f"{lane}/{length}/r{rep}"


def calibrate_cell(lane: str) -> str:
    return f"{lane}/calibrate"


def plan(lanes: Sequence[str], opts: BenchOptions, kind: str = BENCH) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    lengths = opts.lengths_for(kind)
    for lane in lanes:
        out.append({"lane": lane, "cell": calibrate_cell(lane), "part": "calibrate", "rep": 0,
                    "weight": CALIBRATION_TOKENS / 1000})
        for length in lengths:
            for rep in range(opts.reps):
                repeat = kind == BENCH and rep == 0 and opts.cache_check
                out.append({"lane": lane, "cell": cell_id(lane, length, rep), "part": "length", "length": length,
                            "rep": rep, "weight": length / 1000 * (2 if repeat else 1)})
    return out


def rng_for(opts: BenchOptions) -> random.Random:
    return random.Random(opts.seed) if opts.seed is not None else random.Random()


def _args(text: str, opts: BenchOptions, max_tokens: int) -> dict[str, Any]:
    args: dict[str, Any] = {"max_tokens": max_tokens, "extra": {"temperature": opts.temperature},
                            "purpose": "bench"}
    if opts.chat:
        args["messages"] = [{"role": "user", "content": text}]
    else:
        args["prompt"] = text
    return args


def tokens_per_char(rec: RequestRecord, chars: int) -> float | None:
    if rec.ok and rec.prompt_tokens and chars > 0:
        return rec.prompt_tokens / chars
    return None


async def calibrate(h, lane: str, opts: BenchOptions, rng: random.Random, bench: str) -> float:
    """Tokens per character of our filler on ``lane`` (from one 1-token request)."""
    cell = calibrate_cell(lane)
    h.mark("cell", lane=lane, bench=bench, phase="start", cell=cell, part="calibrate", rep=0)
    text = prefill_prompt(chars_for_tokens(CALIBRATION_TOKENS, DEFAULT_TOKENS_PER_CHAR), rng)
    rec = await h.request(lane, opts.endpoint, meta={"bench": bench, "cell": cell, "part": "calibrate",
                                                     "run": "calibrate", "rep": 0, "chars": len(text)},
                          **_args(text, opts, 1))
    tpc = tokens_per_char(rec, len(text))
    h.mark("cell", lane=lane, bench=bench, phase="end", cell=cell, part="calibrate", rep=0,
           errors=0 if rec.ok else 1, tokens_per_char=rnd(tpc, 6))
    return tpc or DEFAULT_TOKENS_PER_CHAR


async def run(h, opts: BenchOptions) -> None:
    rng = rng_for(opts)
    lengths = opts.lengths_for(BENCH)

    async def one_lane(lane: str, lane_rng: random.Random) -> None:
        tpc = await calibrate(h, lane, opts, lane_rng, BENCH)
        for length in lengths:
            for rep in range(opts.reps):
                cell = cell_id(lane, length, rep)
                keys = {"part": "length", "length": length, "rep": rep}
                h.mark("cell", lane=lane, bench=BENCH, phase="start", cell=cell, **keys)
                text = prefill_prompt(chars_for_tokens(length, tpc), lane_rng)
                meta = {"bench": BENCH, "cell": cell, **keys, "chars": len(text)}
                cold = await h.request(lane, opts.endpoint, meta={**meta, "run": "cold"}, **_args(text, opts, 1))
                errors = 0 if cold.ok else 1
                tpc = tokens_per_char(cold, len(text)) or tpc
                if cold.ok and rep == 0 and opts.cache_check:
                    again = await h.request(lane, opts.endpoint, meta={**meta, "run": "repeat"},
                                            **_args(text, opts, 1))
                    errors += 0 if again.ok else 1
                h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, errors=errors, **keys)

    await _per_lane(h, opts, rng, one_lane)


async def _per_lane(h, opts: BenchOptions, rng: random.Random, one_lane) -> None:
    import asyncio

    seeds = {lane: rng.getrandbits(64) for lane in h.names}
    if opts.parallel_lanes:
        async with asyncio.TaskGroup() as tg:
            for lane in h.names:
                tg.create_task(one_lane(lane, random.Random(seeds[lane])))
    else:
        for lane in h.names:
            await one_lane(lane, random.Random(seeds[lane]))


# ---------------------------------------------------------------------------
# Results (pure)
# ---------------------------------------------------------------------------


def _length_result(runs: dict[str, list[RequestRecord]], length: int,
                   slo: dict[str, float] | None = None) -> dict[str, Any]:
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
        if pt is None:  # no usage from the lane: fall back to the requested length, flagged
            pt, estimated = length, True
        per_rep.append(pt / m.ttft_s if m.ttft_s > 0 else None)
        ttfts.append(m.ttft_s)
        prompt_tokens.append(pt)
    stats = spread(per_rep)
    cold_median = stats["median"]
    repeat_rate = cached = None
    for r in runs.get("repeat", []):
        m = request_metrics(r)
        if r.ok and m.ttft_s:
            pt = r.prompt_tokens if r.prompt_tokens is not None else length
            repeat_rate = pt / m.ttft_s
            cached = r.cached_tokens
            break
    hit = repeat_rate is not None and cold_median is not None and repeat_rate > CACHE_HIT_FACTOR * cold_median
    all_recs = cold + runs.get("repeat", [])
    return {
        "prompt_tokens": int(median(prompt_tokens)) if prompt_tokens else None,
        "prefill_tok_s": cold_median,
        "ttft_s": rnd(median(ttfts)),
        "cache_hit_tok_s": rnd(repeat_rate) if hit else None,
        "repeat_tok_s": rnd(repeat_rate),
        "repeat_cached_tokens": cached,
        **stats,
        "tokens_estimated": estimated,
        "requests": len(all_recs),
        "errors": sum(1 for r in all_recs if not r.ok),
        "error": first_error(all_recs),
        **({"goodput": goodput_of([[r] for r in cold], slo)} if slo else {}),
    }


def prefill_results(events: Iterable[Event], *, in_progress: bool = False, bench: str = BENCH) -> dict[str, Any]:
    """The ``bench prefill`` JSON (docs/JSON.md) from a run's events."""
    events = list(events)
    marks = read_marks(events, bench)
    by: dict[str, dict[int, dict[str, list[RequestRecord]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    calib: dict[str, float | None] = {}
    for rec in assemble(events):
        meta = rec.meta
        if meta.get("bench") != bench or not marks.finished(meta.get("cell", "")):
            continue
        if meta.get("run") == "calibrate":
            calib[rec.lane] = rnd(tokens_per_char(rec, int(meta.get("chars") or 0)), 6)
            continue
        if meta.get("length") is None:
            continue
        by[rec.lane][int(meta["length"])][str(meta.get("run", "cold"))].append(rec)
    order = list(marks.lanes)
    for lane in by:
        if lane not in order:
            order.append(lane)
    lanes: dict[str, dict[str, Any]] = {}
    for lane in order:
        if lane not in by and lane not in calib:
            continue
        lengths = by.get(lane, {})
        lanes[lane] = {
            "lengths": {str(n): _length_result(lengths[n], n, marks.config.get("slo") or None)
                        for n in sorted(lengths)},
            "tokens_per_char": calib.get(lane),
        }
    out: dict[str, Any] = {"bench": bench, "lanes": lanes}
    if len(order) >= 2 and order[0] in lanes and order[1] in lanes:
        out["ratios"] = ratios(lanes, order[0], order[1])
    out.update(run_state(marks, in_progress))
    out["config"] = marks.config
    return out


def ratios(lanes: dict[str, dict[str, Any]], a: str, b: str) -> dict[str, Any]:
    """``{"compared": [a, b], "by_length": {"2000": b/a prefill ratio, ...}}``."""
    la, lb = lanes[a]["lengths"], lanes[b]["lengths"]
    by_length = {}
    for k in la:
        va, vb = la[k].get("prefill_tok_s"), (lb.get(k) or {}).get("prefill_tok_s")
        by_length[k] = rnd(vb / va, 3) if va and vb else None
    return {"compared": [a, b], "by_length": by_length}


results = prefill_results
