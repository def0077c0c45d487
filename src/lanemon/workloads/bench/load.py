"""Open-loop load: requests arrive on a schedule, whether or not earlier ones finished.

The decode ladder is a *closed* loop (C workers, each sending when its last
request ended), so a slow lane is offered less work.  Production traffic does
not wait: ``bench load`` sends request *i* at ``t0 + offset[i]`` where the
offsets come from an arrival process:

* ``constant`` -- one request every ``1/rate`` s;
* ``poisson``  -- exponential gaps of mean ``1/rate`` s (seeded: the same seed
  gives the same schedule; every lane of a run is offered the same one, from
  ``--seed`` or a seed drawn once: :mod:`lanemon.workloads.bench.schedule`);
* ``trace``    -- the timestamps of a JSON-lines file (``{"t": seconds,
  "input_tokens": n, "output_tokens": m}`` per line; only ``t`` is required),
  replayed relative to its first line.

A run is bounded by a request count or a duration (or both: the first reached).
Requests scheduled in the first ``warmup`` s or the last ``cooldown`` s are sent
and recorded but excluded from the figures (``meta.phase``).  Input and output
lengths are drawn per request from :class:`LengthDist` (fixed, uniform, normal,
or values from a file); input tokens are turned into filler text at about four
characters a token, so the *requested* input length is approximate and the
figures use the server's ``usage`` counts where it sends them.  With
``shared_prefix`` tokens, every prompt starts with the same text (a prefix-cache
workload); with ``turns`` > 1 every arrival is a chat conversation whose later turns
carry the whole history (each sent when the previous one ended; ``meta.turn``).

Every request's ``meta`` carries its scheduled offset and its send lag (actual
send minus schedule): a client that cannot keep up shows a growing lag, and the
results flag the cell ``client_behind`` instead of reporting a rate the lane was
never offered.  :func:`load_results` recomputes everything from the events, so a
recording reports what the run reported.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypedDict

import msgspec
from msgspec import UNSET

from lanemon.events import Event
from lanemon.measure import slo as slo_mod
from lanemon.measure.metrics import NS, RequestMetrics, generated_tokens, median, request_metrics, summarize
from lanemon.measure.stats import chunk_weights
from lanemon.measure.records import RequestRecord, assemble, reiterable
from lanemon.workloads.bench.marks import PlannedCell
from lanemon.workloads.bench.run import (RequestArgs, each_lane, edge, first_error, outcome_figures, read_marks,
                                         request_args, rnd, run_state)
from lanemon.workloads.bench.prefill import CALIBRATION_TOKENS, calibrate, calibrate_cell, lane_context
from lanemon.results.common import LoadConfig
from lanemon.results.load import LatencyPercentiles, LoadLane, LoadRep, LoadResult, LostWorker, Schedule, SendLag
from lanemon.workloads.prompts import chars_for_tokens, filler_text
from lanemon.workloads.bench.schedule import (  # noqa: F401 (the schedule's names, imported from here before)
    ARRIVALS, MAX_TRACE_BYTES, MAX_TRACE_LINES, MAX_TRACE_T, Arrival, LengthDist, LoadSpecError, phase_of, read_trace,
    same_for_every_lane, schedule)

BENCH = "load"
CHARS_PER_TOKEN = 4.0
"""Filler text is about this many characters per token (English prose, BPE tokenizers)."""
CLIENT_BEHIND_S = 0.010
"""A cell whose p99 send lag exceeds this is flagged ``client_behind`` (lanemon could not keep the schedule)."""
@dataclass
class LoadOptions:
    """What ``bench load`` runs (the CLI fills it)."""

    arrival: str = "poisson"
    rate: float | None = None
    requests: int | None = None
    duration: float | None = None
    warmup: float = 0.0
    cooldown: float = 0.0
    input_len: LengthDist | None = None
    """None: the prompt set's prompts, in turn."""
    output_len: LengthDist | None = None
    """None: each prompt's own max_tokens."""
    shared_prefix: int = 0
    """Tokens of text every prompt starts with (0: none)."""
    ignore_eos: bool = False
    """Send ``ignore_eos: true`` (vLLM, SGLang) so replies run to the drawn output length."""
    turns: int = 1
    """Chat turns per arrival (>1: a multi-turn conversation, each turn sent when the previous one ended)."""
    trace: list[Arrival] = field(default_factory=list)
    trace_path: str | None = None

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.cooldown < 0:
            raise LoadSpecError("--warmup and --cooldown must be zero or more seconds")
        if self.requests is not None and self.requests < 1:
            raise LoadSpecError("--requests must be at least 1")
        if self.duration is not None and not self.duration > 0:
            raise LoadSpecError("--duration must be positive")
        if self.shared_prefix < 0:
            raise LoadSpecError("--shared-prefix must be zero or more tokens")
        if self.turns < 1:
            raise LoadSpecError("--turns must be at least 1")

    def schedule(self, seed: int | None) -> list[Arrival]:
        return schedule(self.arrival, rate=self.rate, requests=self.requests, duration=self.duration,
                        seed=seed, trace=self.trace)

    def config(self) -> LoadConfig:
        """The schedule options as the bench-start mark's ``config.load`` records them (every key, ``null`` when
        unset)."""
        return LoadConfig(arrival=self.arrival, rate=self.rate, requests=self.requests, duration=self.duration,
                          warmup=self.warmup, cooldown=self.cooldown,
                          input_len=self.input_len.public() if self.input_len else None,
                          output_len=self.output_len.public() if self.output_len else None,
                          shared_prefix=self.shared_prefix, ignore_eos=self.ignore_eos, trace=self.trace_path,
                          turns=self.turns)


def cell_id(lane: str, rep: int) -> str:
    return f"{lane}:load:r{rep}"


def asks_lengths(load: "LoadOptions") -> bool:
    """Whether the run asks for input lengths in tokens (then each lane is calibrated first)."""
    return bool(load.input_len or load.shared_prefix or any(a.input_tokens for a in (load.trace or ())))


def plan(lanes: Sequence[str], opts) -> list[PlannedCell]:
    load: LoadOptions = opts.load or LoadOptions()
    n = len(load.schedule(opts.seed))
    out: list[PlannedCell] = []
    for lane in lanes:
        if asks_lengths(load):
            out.append(PlannedCell(lane=lane, cell=calibrate_cell(lane), part="calibrate", rep=0, weight=2.0))
        out += [PlannedCell(lane=lane, cell=cell_id(lane, rep), part="load", rep=rep, requests=n, weight=float(n))
                for rep in range(opts.reps)]
    return out


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------


def _prompt_text(n_tokens: int, prefix: str, rng: random.Random, tpc: float | None = None) -> str:
    """About ``n_tokens`` of the lane's tokens (``tpc``: its calibrated tokens per character; else ~4 characters
    a token), the shared prefix included."""
    chars = chars_for_tokens(n_tokens, tpc) if tpc else int(n_tokens * CHARS_PER_TOKEN)
    body = filler_text(max(1, chars - len(prefix)), rng)
    return prefix + body


async def run_cell(h, lane: str, rep: int, opts, tpc: float | None = None) -> list[RequestRecord]:
    """One rep on one lane.  ``tpc``: the lane's tokens per character (calibrated), so asked lengths are the
    lane's own tokens.  A request whose asked input + output would not fit the lane's context is not sent
    (counted in the cell's end mark as ``refused``, the limit named)."""
    load: LoadOptions = opts.load
    seed = None if opts.seed is None else opts.seed + rep
    arrivals = load.schedule(seed)
    rng = random.Random(seed)
    span = arrivals[-1].offset_s if arrivals else 0.0
    if load.duration is not None:
        span = load.duration
    prefix = (filler_text(chars_for_tokens(load.shared_prefix, tpc) if tpc else int(load.shared_prefix * CHARS_PER_TOKEN),
                          random.Random(0)) if load.shared_prefix else "")
    ctx, ctx_source = lane_context(h, lane, opts)
    refused: list[int] = []
    prompts = opts.selected().interleaved()
    cell = cell_id(lane, rep)
    keys = {"part": "load", "rep": rep}
    await edge(h)  # the engine's counters and the GPU's energy read at the rep's edges (docs/GPU.md)
    h.mark("cell", lane=lane, bench=BENCH, phase="start", cell=cell, requests=len(arrivals), span_s=rnd(span), **keys)
    planned = []
    for i, a in enumerate(arrivals):
        p = prompts[i % len(prompts)]
        in_tokens = a.input_tokens or (load.input_len.sample(rng) if load.input_len else None)
        out_tokens = a.output_tokens or (load.output_len.sample(rng) if load.output_len else None)
        text = _prompt_text(in_tokens, prefix, rng, tpc) if in_tokens else prefix + p.text
        max_tokens = out_tokens or (min(p.max_tokens, opts.max_tokens) if opts.max_tokens else p.max_tokens)
        need = (in_tokens or load.shared_prefix or 0) + (max_tokens or 0)
        if ctx and need > ctx:  # the lane would answer HTTP 400: refused here, before sending, with the limit
            refused.append(need)
            continue
        meta = {"bench": BENCH, "cell": cell, **keys, "i": i, "scheduled_s": round(a.offset_s, 6),
                "send_lag_s": 0.0, "phase": phase_of(a.offset_s, span, load.warmup, load.cooldown),
                "input_tokens_requested": in_tokens, "max_tokens": max_tokens}
        args = request_args(text, opts, max_tokens, ignore_eos=bool(load.ignore_eos))
        planned.append((a.offset_s, meta, args))
    beyond = {"refused": len(refused), "refused_error": (
        f"{len(refused)} request{'s' if len(refused) != 1 else ''} of up to {max(refused):,} tokens (input + "
        f"max output) beyond the lane's context ({ctx:,} tokens, from {ctx_source}): not sent")} if refused else {}
    if refused and len(refused) == len(arrivals):
        h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, requests=0, errors=0, **beyond, **keys)
        await edge(h)
        h.note(f"lane {lane}: {beyond['refused_error']}", "error")
        return []
    pool = getattr(h, "pool", None)
    if pool is not None and load.turns > 1:
        raise LoadSpecError("--turns > 1 needs the answers of earlier turns: run it with --workers 1")
    if pool is not None:  # --workers N: the same requests, sent by worker processes
        from lanemon.workers.pool import Item

        client = h.clients[lane]
        items = [Item(off, client.new_request_id(), opts.endpoint, client.build_body(opts.endpoint, prompt=args.prompt,
                                                                         messages=args.messages,
                                                                         max_tokens=args.max_tokens, extra=args.extra),
                      "bench", meta) for off, meta, args in planned]
        errors = await pool.run_job(lane, items)
        h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, requests=len(items), errors=errors, **beyond,
               **msgspec.to_builtins(pool.job_report), **keys)  # workers_lost (the hosts), not_sent
        await edge(h)
        return []
    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task] = []
    from lanemon.workers.pool import opening_burst

    burst = opening_burst([off for off, _, _ in planned])
    if burst > 1:  # the opening wave's connections, opened before the clock starts (as the decode ladder does)
        await h.clients[lane].warm(burst)
    t0 = loop.time() + 0.02
    for off, meta, args in planned:
        delay = t0 + off - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        meta["send_lag_s"] = round(loop.time() - (t0 + off), 6)
        if load.turns > 1:
            tasks.append(asyncio.ensure_future(_conversation(h, lane, opts, load.turns, meta, args)))
        else:
            tasks.append(asyncio.ensure_future(h.request(lane, opts.endpoint, meta=meta, **args._asdict())))
    done = list(await asyncio.gather(*tasks)) if tasks else []
    records = [r for d in done for r in (d if isinstance(d, list) else [d])]
    errors = sum(1 for r in records if not r.ok)
    h.mark("cell", lane=lane, bench=BENCH, phase="end", cell=cell, requests=len(records), errors=errors, **beyond,
           **keys)
    await edge(h)
    return records


FOLLOW_UPS = ("Go on.", "Say more about the last point.", "Summarise that in two sentences.",
              "Give an example.", "What is the main caveat?")


async def _conversation(h, lane: str, opts, turns: int, meta: dict[str, Any], args: RequestArgs) -> list:
    """One multi-turn arrival: ``turns`` chat requests in a row, each carrying the whole history (the earlier
    answers and a follow-up), so later turns share a growing prefix.  Turn 1 is the arrival itself; a turn
    that does not complete ends the conversation."""
    messages = list(args.messages or [{"role": "user", "content": args.prompt or ""}])
    out = []
    for k in range(turns):
        rec = await h.request(lane, "chat", purpose="bench", meta={**meta, "turn": k + 1},
                              max_tokens=args.max_tokens, extra=args.extra, messages=list(messages))
        out.append(rec)
        if not rec.ok:
            break
        messages += [{"role": "assistant", "content": rec.text},
                     {"role": "user", "content": FOLLOW_UPS[k % len(FOLLOW_UPS)]}]
    return out


async def run(h, opts) -> None:
    """The whole load bench on the harness ``h`` (bench start/end marks are the caller's)."""
    async def one_lane(lane: str) -> None:
        tpc = None
        if asks_lengths(opts.load):  # lengths in the lane's own tokens: one calibration request first
            longest = max([opts.load.input_len.sample(random.Random(0)) if opts.load.input_len else 0,
                           opts.load.shared_prefix or 0, CALIBRATION_TOKENS // 4])
            tpc = await calibrate(h, lane, opts, random.Random(opts.seed), BENCH, [longest])
            if tpc is None:
                return
        for rep in range(opts.reps):
            await run_cell(h, lane, rep, opts, tpc)

    await each_lane(h, opts, one_lane)


# ---------------------------------------------------------------------------
# Results (pure)
# ---------------------------------------------------------------------------


def _pcts(values: Iterable[float | None]) -> LatencyPercentiles:
    s = summarize(values)
    return LatencyPercentiles(p50=rnd(s.p50, 6), p90=rnd(s.p90, 6), p99=rnd(s.p99, 6), n=s.n, max=rnd(s.max, 6))


NO_COMPLETION = "no request completed in the measured window"
"""Why a window has no served request rate (its tokens may still be counted: requests running past its end)."""
LANE_BEHIND_SHARE = 0.9
"""A lane fell behind when it completed fewer than this share of the window's arrivals inside the window ..."""
QUEUE_GROWTH = 2.0
"""... and its queue grew: the median TTFT of the window's last quarter of requests is over this many times the
first quarter's (or, with too few completed requests to tell, over a quarter of the arrivals still unfinished at
the window's end)."""


def schedule_origin_ns(records: Sequence[RequestRecord]) -> int | None:
    """Session ns of the cell's schedule offset 0: each request was sent ``scheduled_s + send_lag_s`` after it
    (``meta``), so the earliest ``sent - scheduled - lag`` is the origin (the request event follows the loop's
    send by microseconds)."""
    out = None
    for r in records:
        sched = r.meta.get("scheduled_s")
        if r.sent_ns is None or not isinstance(sched, (int, float)) or r.meta.get("turn", 1) != 1:
            continue
        lag = r.meta.get("send_lag_s")
        t = r.sent_ns - int((float(sched) + (float(lag) if isinstance(lag, (int, float)) else 0.0)) * NS)
        out = t if out is None or t < out else out
    return out


class Served(NamedTuple):
    """What a lane served in a window (:func:`served_figures`): requests completed inside it and their rate
    (``completed_rate_reason`` where there is none), the tokens that arrived inside it and their rates."""

    completed: int
    completed_rate_rps: float | None
    completed_rate_reason: str | None
    tokens: float
    reasoning_tokens: float
    window_s: float
    output_tok_s: float | None
    reasoning_tok_s: float | None
    visible_tok_s: float | None
    tokens_estimated: bool


def served_figures(records: Sequence[RequestRecord], start_ns: int, end_ns: int) -> Served:
    """What the lane *served* in the window [start_ns, end_ns] (pure): requests that completed inside it and the
    generated tokens whose chunks arrived inside it (per-chunk counts where the server gave them, else each
    request's usage spread over its chunks; text-less chunks included), whenever those requests were sent.
    Reasoning tokens are output tokens; ``reasoning_tokens`` are the ones whose chunks came before the
    request's first answer chunk.

    Rates run from the window's first completion (tokens: its first token) to its end: before the first
    request of a run without warm-up has had time to finish, nothing can complete, and that ramp is the
    schedule's, not the lane's speed.  With n completions the rate is (n - 1) / (end - first completion), the
    n - 1 gaps after the first (n / window with one).  With none the rate is None and ``completed_rate_reason``
    says so: tokens may still have arrived (requests running past the window's end), and "0 req/s" beside a
    token rate would be a pair no lane can serve."""
    window_s = (end_ns - start_ns) / NS
    ends: list[int] = []
    first_token: int | None = None
    tokens = reasoning = 0.0
    estimated = False
    for r in records:
        if not r.ok:
            continue
        if r.end_ns is not None and start_ns <= r.end_ns <= end_ns:
            ends.append(r.end_ns)
        tns = r.token_ns
        if not tns or tns[-1] < start_ns or tns[0] > end_ns:
            continue
        generated, est = generated_tokens(r)
        estimated = estimated or est
        weights = chunk_weights(tns, r.chunk_tokens, float(generated))
        answer_at = r.first_content_ns if r.first_content_ns is not None else (1 << 62)
        for t, w in zip(tns, weights):
            if start_ns <= t <= end_ns:
                tokens += w
                if first_token is None or t < first_token:
                    first_token = t
                if r.reasoning_chunks and t < answer_at:
                    reasoning += w
    done = len(ends)
    rate = None
    reason = None
    if done >= 2 and end_ns > min(ends):
        rate = (done - 1) / ((end_ns - min(ends)) / NS)
    elif done and window_s > 0:
        rate = done / window_s
    elif not done:
        reason = NO_COMPLETION
    tok_span = (end_ns - first_token) / NS if first_token is not None and end_ns > first_token else window_s
    per = (lambda x: x / tok_span) if tok_span > 0 else (lambda x: None)
    return Served(completed=done, completed_rate_rps=rate, completed_rate_reason=reason, tokens=tokens,
                  reasoning_tokens=reasoning, window_s=window_s, output_tok_s=per(tokens),
                  reasoning_tok_s=per(reasoning), visible_tok_s=per(tokens - reasoning), tokens_estimated=estimated)


class Queue(NamedTuple):
    """Whether a lane fell behind in a window (:func:`lane_behind`)."""

    behind: bool | None
    backlog: int | None
    ttft_early_s: float | None
    ttft_late_s: float | None


def lane_behind(measured: Sequence[RequestRecord], completed: int, end_ns: int) -> Queue:
    """Did the lane fall behind (pure)?  ``behind``: completions inside the window under
    :data:`LANE_BEHIND_SHARE` of its arrivals *and* a growing queue (:data:`QUEUE_GROWTH`); None when the
    window had no arrivals.  ``backlog``: the window's requests still unfinished at its end; ``ttft_early_s`` /
    ``ttft_late_s``: median TTFT of the first and last quarter of its completed requests (None under 8)."""
    arrivals = len(measured)
    if not arrivals:
        return Queue(None, 0, None, None)
    backlog = sum(1 for r in measured if r.sent_ns is not None and r.sent_ns <= end_ns
                  and (r.end_ns is None or r.end_ns > end_ns))
    ok = sorted((r for r in measured if r.ok and r.token_ns and r.sent_ns is not None), key=lambda r: r.sent_ns)
    q = len(ok) // 4
    early = late = None
    if q >= 2:
        early = median([(r.token_ns[0] - r.sent_ns) / NS for r in ok[:q]])
        late = median([(r.token_ns[0] - r.sent_ns) / NS for r in ok[-q:]])
        grew = late > QUEUE_GROWTH * max(early, 1e-6)
    else:
        grew = backlog > arrivals / 4
    return Queue(completed < LANE_BEHIND_SHARE * arrivals and grew, backlog, early, late)


class Lengths(NamedTuple):
    """Median input and output lengths per request: asked (``meta``) and counted by the lane (usage)."""

    input_tokens_asked_p50: float | None
    input_tokens_p50: float | None
    output_tokens_asked_p50: float | None
    output_tokens_p50: float | None


def lengths_asked_and_measured(ok: Sequence[RequestRecord], ms: Sequence[RequestMetrics]) -> Lengths:
    """Median input and output lengths asked (``meta``) beside the ones the lane counted (usage), per request."""
    asked_in = [r.meta.get("input_tokens_requested") for r in ok]
    asked_out = [r.meta.get("max_tokens") for r in ok]

    def med(xs: list[object]) -> float | None:
        vals = [float(x) for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool)]
        return rnd(median(vals), 1) if vals else None

    return Lengths(med(asked_in), med([r.prompt_tokens for r in ok]), med(asked_out),
                   med([m.generated_tokens for m in ms if not m.tokens_estimated]))


def _each_rep(reps_by_lane: Mapping[str, Sequence[LoadRep]]) -> Iterator[tuple[str, LoadRep]]:
    """(``A`` or ``A rep 2`` when the lane ran several, the rep) for every rep."""
    for lane, reps in reps_by_lane.items():
        for i, r in enumerate(reps):
            yield lane + (f" rep {i + 1}" if len(reps) > 1 else ""), r


def length_lines(reps_by_lane: Mapping[str, Sequence[LoadRep]]) -> list[str]:
    """Asked vs measured lengths (the lane's own tokens), and requests refused beyond the context."""
    out = []
    for who, r in _each_rep(reps_by_lane):
        parts = []
        for what, asked, got in (("input", r.input_tokens_asked_p50, r.input_tokens_p50),
                                 ("output", r.output_tokens_asked_p50, r.output_tokens_p50)):
            if asked is not None and got is not None:
                parts.append(f"{what} asked {asked:,.0f}, the lane counted {got:,.0f}")
        if parts:
            out.append(f"{who}: lengths (p50 per request, the lane's usage): " + "; ".join(parts))
        if r.refused_error:
            out.append(f"{who}: {r.refused_error}")
    return out


def load_headlines(reps_by_lane: Mapping[str, Sequence[LoadRep]]) -> list[str]:
    """One plain sentence per rep whose lane fell behind (the headline of an overloaded run), for the CLI,
    the TUI and the report alike (``reps_by_lane``: :func:`reps_of`)."""
    out = []
    for who, r in _each_rep(reps_by_lane):
        if not r.lane_behind:
            continue
        offered = r.offered_rate_rps or r.scheduled_rate_rps
        served = (f"it served {_fmt(r.completed_rate_rps)} req/s and" if r.completed_rate_rps is not None
                  else f"{r.completed_rate_reason or NO_COMPLETION}; it served")
        line = (f"{who}: the lane fell behind: {served} "
                f"{_fmt(r.output_tok_s, 0)} tok/s in the measured window of {_fmt(offered)} req/s offered; "
                f"{r.backlog_at_end} of {r.measured} requests were still queued or running at its end")
        e, late = r.ttft_early_s, r.ttft_late_s
        if e is not None and late is not None:
            line += f" (TTFT p50 grew from {e:.2f} s to {late:.2f} s)"
        out.append(line + ".")
    return out


def reps_of(result: LoadResult, lanes: Sequence[str] | None = None) -> dict[str, list[LoadRep]]:
    """Each lane's reps (``lanes``: those, in that order; default every lane of the result)."""
    return {n: result.lanes[n].reps for n in (result.lanes if lanes is None else lanes) if n in result.lanes}


def _fmt(x: float | int | None, digits: int = 1) -> str:
    return "?" if not isinstance(x, (int, float)) else f"{x:,.{digits}f}"


def cell_result(records: Sequence[RequestRecord], span_s: float | None, config: LoadConfig,
                slo: dict[str, float] | None = None, *, cell: str = "", end: Mapping[str, object] | None = None
                ) -> LoadRep:
    """One lane's (one rep's) figures over the measured phase (warm-up and cool-down excluded); with an
    SLO, ``slo``: goodput over the measured requests' first send -> last end and each target's attainment
    (:mod:`lanemon.measure.slo`).  ``cell``: the rep's id; ``end``: its end mark (what was refused, not sent,
    lost: :func:`end_mark_figures`)."""
    warmup = float(config.warmup or 0.0)
    cooldown = float(config.cooldown or 0.0)
    measured = [r for r in records if r.meta.get("phase", "measure") == "measure"]
    window = None
    if span_s:
        window = max(0.0, span_s - warmup - cooldown) or None
    ok = [r for r in measured if r.ok]
    ms = [request_metrics(r) for r in ok]
    origin = schedule_origin_ns(records) if span_s else None
    served: Served | None = None
    queue = Queue(None, None, None, None)  # no window: nothing known
    w_start = w_end = 0
    if origin is not None and window:
        w_start = origin + int(warmup * NS)
        w_end = origin + int((span_s - cooldown) * NS)
        served = served_figures(records, w_start, w_end)
        queue = lane_behind(measured, served.completed, w_end)
    lags = [float(r.meta.get("send_lag_s") or 0.0) for r in records]
    lag = summarize(lags)
    sends = sorted(r.sent_ns for r in measured if r.sent_ns is not None)
    by_turn: dict[str, list[float | None]] = {}
    for r, m in zip(ok, ms):
        turn = r.meta.get("turn")
        if turn is not None:
            by_turn.setdefault(str(turn), []).append(m.ttft_s)
    outcomes = outcome_figures(measured)
    return LoadRep(
        cell=cell,
        requests=len(records),
        measured=len(measured),
        ok=len(ok),
        errors=len(measured) - len(ok),
        truncated=outcomes.truncated, empty=outcomes.empty, bursts=outcomes.bursts,
        offered_rate_rps=rnd(config.rate or None) if config.arrival != "trace" else None,
        scheduled_rate_rps=rnd(len(measured) / window) if window else None,
        sent_rate_rps=rnd((len(sends) - 1) / ((sends[-1] - sends[0]) / NS))
        if len(sends) > 1 and sends[-1] > sends[0] else None,
        completed_rate_rps=rnd(served.completed_rate_rps) if served else None,
        completed_rate_reason=served.completed_rate_reason if served else None,
        completed_in_window=served.completed if served else None,
        served_tokens=rnd(served.tokens, 1) if served else None,
        measured_window_ns=[w_start, w_end] if served else None,
        output_tok_s=rnd(served.output_tok_s) if served else None,
        visible_tok_s=rnd(served.visible_tok_s) if served else None,
        reasoning_tok_s=rnd(served.reasoning_tok_s) if served else None,
        lane_behind=queue.behind,
        backlog_at_end=queue.backlog,
        ttft_early_s=rnd(queue.ttft_early_s, 6),
        ttft_late_s=rnd(queue.ttft_late_s, 6),
        ttft_s=_pcts(m.ttft_s for m in ms),
        tpot_s=_pcts(m.tpot_s for m in ms),
        e2e_s=_pcts(m.e2e_s for m in ms),
        send_lag_s=SendLag(p50=rnd(lag.p50, 6), p99=rnd(lag.p99, 6), max=rnd(max(lags), 6) if lags else None,
                           n=len(lags)),
        client_behind=bool(lag.p99 is not None and lag.p99 > CLIENT_BEHIND_S),
        ttft_p50_s_by_turn={k: rnd(summarize(v).p50, 6) for k, v in sorted(by_turn.items(), key=lambda kv: int(kv[0]))}
        if by_turn else None,
        **lengths_asked_and_measured(ok, ms)._asdict(),
        tokens_estimated=any(m.tokens_estimated for m in ms) or bool(served and served.tokens_estimated),
        error=first_error(measured),
        slo=slo_mod.evaluate([request_metrics(r) for r in measured], slo, _served_span(measured)).to_result()
        if slo else None,
        **end_mark_figures(end or {}),
    )


class EndMark(TypedDict):
    """What a rep's end mark says beyond its requests (:func:`end_mark_figures`)."""

    refused: int
    refused_error: str | None
    not_sent: int
    workers_lost: list[LostWorker]


def end_mark_figures(end: Mapping[str, object]) -> EndMark:
    """A rep's end mark, read as untrusted (a recording's): requests refused beyond the lane's context and why,
    requests not sent and the load hosts lost mid-rep (their known keys, clipped)."""
    refused, not_sent, lost = end.get("refused"), end.get("not_sent"), end.get("workers_lost")
    return EndMark(
        refused=refused if type(refused) is int else 0,
        refused_error=str(end["refused_error"])[:300] if end.get("refused_error") else None,
        not_sent=not_sent if type(not_sent) is int else 0,
        workers_lost=[LostWorker(**{k: str(w.get(k))[:200] for k in ("node", "host", "address", "why") if w.get(k)})
                      for w in (lost if isinstance(lost, list) else []) if isinstance(w, dict)][:64])


def _served_span(records: Sequence[RequestRecord]) -> float | None:
    """First send -> last end of ``records`` in seconds: the duration goodput is over (vLLM's benchmark
    duration: until the last request finished, so a lane that fell behind is not credited with a window
    its replies came after)."""
    starts = [r.sent_ns for r in records if r.sent_ns is not None]
    ends = [r.end_ns for r in records if r.end_ns is not None]
    return (max(ends) - min(starts)) / NS if starts and ends and max(ends) > min(starts) else None


def load_results(events: Iterable[Event], *, in_progress: bool = False) -> LoadResult:
    """The ``bench load`` result (``--json``: docs/JSON.md) from a run's events."""
    events = reiterable(events)
    marks = read_marks(events, BENCH)
    by_cell: dict[str, list[RequestRecord]] = defaultdict(list)
    for rec in assemble(events):
        cell = rec.meta.get("cell", "")
        if rec.meta.get("bench") == BENCH and marks.finished(cell):
            by_cell[cell].append(rec)
    config = marks.config  # the start mark's, read back (a recording's: untrusted)
    load = config.load or LoadConfig()
    slo = config.slo or None
    reps: dict[str, list[LoadRep]] = {}
    for cell, c in marks.cells.items():
        if c.end_event is None or c.start.part == "calibrate":
            continue
        reps.setdefault(c.start.lane or "", []).append(
            cell_result(by_cell.get(cell, []), c.start.span_s, load, slo,
                        cell=cell, end=c.end_event.data))  # cell: the rep's marks, its energy and counters (measure/views.py)
    lanes = {lane: LoadLane(reps=rs, offered_rate_rps=rs[0].offered_rate_rps,
                            client_behind=any(r.client_behind for r in rs),
                            lane_behind=any(bool(r.lane_behind) for r in rs),
                            slo_held=all(r.slo is not None and r.slo.held for r in rs) if slo else None)
             for lane, rs in reps.items()}
    return LoadResult(bench=BENCH, lanes=lanes,
                      schedule=Schedule(seed=None if config.seed is UNSET else config.seed,
                                        seed_drawn=bool(config.seed_drawn),
                                        same_for_every_lane=same_for_every_lane(config)),
                      **msgspec.structs.asdict(run_state(marks, in_progress)), config=config)


results = load_results
