"""The speed benches as an event source: :class:`BenchRun`, plus what they share.

``BenchRun(kind, lanes, options)`` runs one bench (``decode``, ``prefill`` or
``needles``) on a :class:`~lanemon.workloads.harness.Harness` whose bus is
``self.bus``; the headless CLI and the bench screen of the TUI both drive it.
Source protocol (duck-typed, like :mod:`lanemon.sessions.sources`)::

    mode = "bench"; kind: str       "decode" | "prefill" | "needles"
    bus: EventBus                   every event of the run, live
    lanes: list[PublicLane]         public lane info: name, url, model
    recording_path: Path | None
    paused = False; speed = None    (a bench cannot pause; see toggle_pause)
    finished: bool; interrupted: bool
    plan: list[PlannedCell]         planned cells: lane, cell, part, level|length|category, rep, weight
    cells_done: int                 cells finished so far
    current: Event | None           the start mark of the cell that started last (for a progress line)
    events: list[Event]             everything published so far
    async run()                     the whole bench; LaneDown if a lane is down at start
    stop()                          cancel cleanly (finished cells are kept)
    toggle_pause() -> False; faster() / slower() -> None
    results() -> Result             the bench's typed result for the events so far (``to_json_obj``: its JSON)

Recording conventions (docs/JSON.md, docs/BENCH.md): a ``mark`` event
``label="bench", phase="start"`` carries the run's ``config``; every cell is
bracketed by ``label="cell"`` marks (``phase`` start/end, ``cell`` id and its
keys); the run ends with ``label="bench", phase="end", interrupted, cut``.
Every request's ``meta`` names its ``bench`` and ``cell`` plus the cell keys,
so the pure results functions (``ladder.decode_results``,
``prefill.prefill_results``, ``needles.needle_results``) compute the same JSON
from a recording as from the live run.

Never imports Textual.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
from msgspec.structs import replace

from lanemon.bus import EventBus, FixedPace
from lanemon.config import LaneConfig
from lanemon.public_lane import PublicLane
from lanemon.measure.load import STARVED_SHARE
from lanemon.measure import slo as slo_mod
from lanemon.measure.metrics import NS, median, request_metrics
from lanemon.measure.metrics import round_or_none as rnd  # the benches' name for it
from lanemon.measure.records import BURST, COMPLETE, EMPTY, TRUNCATED
from lanemon import events as schema
from lanemon.recording.writer import Recorder
from lanemon.events import Event
from lanemon.results.common import BenchConfig, CellGoodput, NotRun, PromptSetInfo, Result, RunState
from lanemon.workloads.bench.marks import BenchMarks, PlannedCell, cell_keys, read_marks  # noqa: F401
from lanemon.workloads.collector import CollectorHold
from lanemon.workloads.prompts import PromptSet, load_prompt_set

KINDS = ("decode", "prefill", "needles", "load", "sweep")
_MODULES = {"decode": "lanemon.workloads.bench.decode", "prefill": "lanemon.workloads.bench.prefill",
            "needles": "lanemon.workloads.bench.needles", "load": "lanemon.workloads.bench.load",
            "sweep": "lanemon.workloads.bench.sweep"}

#: A cell whose (max - min) / median exceeds this is flagged ``unstable``
#: (the write-up's 300K run on B: 1,791 vs 2,648 vs 3,029 tok/s).
UNSTABLE_SPREAD = 0.25

DEFAULT_LEVELS = (1, 2, 3, 4, 5, 6)
DEFAULT_PREFILL_LENGTHS = (2000, 8000, 32000, 64000)
DEFAULT_NEEDLE_LENGTHS = (20000, 131072, 300000)


@dataclass
class BenchOptions:
    """What to run; the CLI fills it from arguments, the TUI from its form."""

    levels: list[int] = field(default_factory=lambda: list(DEFAULT_LEVELS))
    lengths: list[int] | None = None  # None: the bench's default lengths
    reps: int = 1
    categories: list[str] | None = None  # None: all categories of the prompt set
    parallel_lanes: bool = False
    max_tokens: int | None = None  # cap on every prompt's own max_tokens (decode)
    chat: bool = False  # /chat/completions instead of /completions
    temperature: float = 0.0
    prompt_set: PromptSet | None = None  # None: the shipped set
    seed: int | None = None  # nonces, keys and depths (None: fresh randomness)
    cache_check: bool = True  # prefill: repeat each length's first prompt once
    max_context: int | None = None  # prefill/needles: --max-context (else the lane's /v1/models max_model_len)
    per_category: bool = True  # decode: per-category C1 phase after the ladder
    time_scale: float | None = None  # --demo only; recorded for reference
    thinking: bool | None = None  # --thinking on|off: chat_template_kwargs.thinking per request (None: lane default)
    slo: dict[str, float] | None = None  # --slo ttft=S tpot=S e2e=S: goodput per cell
    load: Any = None  # bench load: a workloads.bench.load.LoadOptions (arrivals, lengths)
    workers: int = 1  # bench load: worker processes sending the requests (1: this process)
    workers_backend: str = "process"  # "process" (multiprocessing) or "ray" (Ray actors)
    ray_address: str | None = None  # join this Ray cluster (None: a local Ray runtime)
    workers_per_node: int | None = None  # with ray_address: workers on each load host (None: --workers spread)
    ray_log: str | None = None  # Ray's own messages go here (None: a file in the temp dir, named on stderr)
    worker_hosts: list[dict[str, Any]] | None = None  # set once placed: each worker's host and clock offset
    max_level: int = 64  # bench sweep: highest concurrency tried
    knee_gain: float = 0.10  # bench sweep: stop when a doubling of C gains less than this
    seed_drawn: bool = False  # bench load: no --seed was given, the run drew one (one schedule for every lane)

    def __post_init__(self) -> None:
        if self.reps < 1:
            raise ValueError("--reps must be at least 1")
        if not self.levels or any(int(c) < 1 for c in self.levels):
            raise ValueError("--levels must be positive whole numbers")
        if self.lengths is not None and (not self.lengths or any(n < 1 for n in self.lengths)):
            raise ValueError("--lengths must be positive whole numbers")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("--max-tokens must be at least 1")
        if self.load is not None and self.seed is None:  # one offered schedule for every lane of the run
            from lanemon.workloads.bench.schedule import draw_seed

            self.seed, self.seed_drawn = draw_seed(), True
        if self.prompt_set is None:
            self.prompt_set = load_prompt_set()
        if self.categories:
            self.prompt_set.select(self.categories)  # PromptSetError names an unknown category

    @property
    def uses_workers(self) -> bool:
        """The run sends its requests from a worker pool (processes or Ray actors), not this process."""
        return self.workers > 1 or self.workers_backend == "ray"

    @property
    def endpoint(self) -> str:
        return "chat" if self.chat else "completions"

    def selected(self) -> PromptSet:
        assert self.prompt_set is not None
        return self.prompt_set.select(self.categories)

    def lengths_for(self, kind: str) -> list[int]:
        if self.lengths:
            return list(self.lengths)
        return list(DEFAULT_NEEDLE_LENGTHS if kind == "needles" else DEFAULT_PREFILL_LENGTHS)

    def config(self, kind: str, lanes: Sequence[str]) -> BenchConfig:
        """The ``config`` written in the bench-start mark (``to_json_obj``; echoed in results): the keys of this
        ``kind``, in the order the mark has always written them."""
        pset = self.selected()
        info = PromptSetInfo(name=pset.name, version=pset.version, source=pset.source, prompts=len(pset.prompts))
        cfg = BenchConfig(lanes=list(lanes), reps=self.reps, parallel_lanes=self.parallel_lanes,
                          endpoint=self.endpoint, temperature=self.temperature)
        if kind == "decode":
            cfg = replace(cfg, levels=list(self.levels), categories=pset.categories, prompt_set=info,
                          max_tokens_cap=self.max_tokens, per_category=self.per_category)
        elif kind == "sweep":
            cfg = replace(cfg, categories=pset.categories, max_level=self.max_level, knee_gain=self.knee_gain,
                          prompt_set=info, max_tokens_cap=self.max_tokens)
        elif kind == "load":
            cfg = replace(cfg, prompt_set=info, max_tokens_cap=self.max_tokens,
                          load=self.load.config() if self.load else None, workers=self.workers,
                          workers_backend=self.workers_backend)
            if self.worker_hosts:
                cfg = replace(cfg, worker_hosts=self.worker_hosts)
        else:
            cfg = replace(cfg, lengths=self.lengths_for(kind))
            if kind == "prefill":
                cfg = replace(cfg, cache_check=self.cache_check)
            if self.max_context is not None:
                cfg = replace(cfg, max_context=self.max_context)
        if self.seed is not None:
            cfg = replace(cfg, seed=self.seed)
        if kind == "load":
            cfg = replace(cfg, seed_drawn=self.seed_drawn)
        if self.time_scale is not None:
            cfg = replace(cfg, time_scale=self.time_scale)
        if self.thinking is not None:
            cfg = replace(cfg, thinking=self.thinking)
        if self.slo:
            cfg = replace(cfg, slo=dict(self.slo))
        return cfg


# ---------------------------------------------------------------------------
# Shared pure helpers for the results functions
# ---------------------------------------------------------------------------


class RequestArgs(NamedTuple):
    """What a speed bench sends for one prompt (:meth:`~lanemon.workloads.harness.Harness.request`'s arguments,
    ``**args._asdict()``): the text as a completion ``prompt`` or as one user chat message."""

    max_tokens: int
    extra: dict[str, float | bool]  # {"temperature": T}, bench load: "ignore_eos": true
    purpose: str = "bench"
    prompt: str | None = None
    messages: list[dict[str, str]] | None = None


def request_args(text: str, opts: BenchOptions, max_tokens: int, *, ignore_eos: bool = False) -> RequestArgs:
    """``text`` as one request of the bench (``opts.chat``: a chat message, else a completion prompt)."""
    extra: dict[str, float | bool] = {"temperature": opts.temperature}
    if ignore_eos:
        extra["ignore_eos"] = True
    if opts.chat:
        return RequestArgs(max_tokens, extra, messages=[{"role": "user", "content": text}])
    return RequestArgs(max_tokens, extra, prompt=text)


class RepSpread(NamedTuple):
    """A cell's headline figure over its reps (:func:`spread`)."""

    reps: list[float | None]
    min: float | None
    median: float | None
    max: float | None
    unstable: bool


class TokenFigures(NamedTuple):
    """The thinking/chunking figures of a cell (:func:`token_figures`)."""

    ttfo_s: float | None
    reasoning_tokens: int | None
    reasoning_estimated: bool
    reasoning_split_estimated: int
    tokens_per_chunk: float | None
    itl_p50_s: float | None
    itl_per_token_p50_s: float | None
    chunk_counts_estimated: bool | None


class Outcomes(NamedTuple):
    """How a cell's requests ended, apart from ``errors`` (:func:`outcome_figures`)."""

    truncated: int
    empty: int
    bursts: int


class ClientBound(NamedTuple):
    """How much lanemon itself was starved while a cell ran (:func:`client_bound_figures`)."""

    client_bound: int
    starved_s: float | None
    starved_share: float | None
    unreliable: bool


def spread(values: Sequence[float | None]) -> RepSpread:
    """``reps`` (all raw values, None for an errored rep), ``min``/``median``/``max``, ``unstable``."""
    xs = [v for v in values if v is not None]
    med = median(xs)
    unstable = bool(len(xs) >= 2 and med and (max(xs) - min(xs)) / med > UNSTABLE_SPREAD)
    return RepSpread([rnd(v) for v in values], rnd(min(xs)) if xs else None, rnd(med),
                     rnd(max(xs)) if xs else None, unstable)


def token_figures(records) -> TokenFigures:
    """The thinking/chunking figures of a cell's completed requests (docs/JSON.md):

    ``ttfo_s`` median TTFO; ``reasoning_tokens`` total (null when no request reasoned and no lane said
    so); ``reasoning_estimated`` (counted from chunks, or a chunk carrying reasoning and answer split by its text)
    with ``reasoning_split_estimated`` (how many such chunks, over the cell's requests); ``tokens_per_chunk`` generated tokens / chunks
    over the cell (null without usage); ``itl_p50_s`` median inter-chunk gap and ``itl_per_token_p50_s``
    median gap per token; ``chunk_counts_estimated`` when per-chunk counts were not reported
    (no continuous usage: per-token latency uses the average chunk size).
    """
    ms = [request_metrics(r) for r in records if r.ok]
    reasoning = [m.reasoning_tokens for m in ms if m.reasoning_tokens is not None]
    chunks = sum(m.chunks for m in ms)
    with_usage = [m for m in ms if m.tokens_per_chunk is not None]
    tpc = (sum(m.generated_tokens for m in with_usage) / sum(m.chunks for m in with_usage)
           if with_usage and chunks and sum(m.chunks for m in with_usage) else None)
    paced = [m for m in ms if BURST not in m.flags]  # a burst's gaps are lanemon's read granularity
    itl = [x for m in paced for x in m.itl_s]
    per_token = [x for m in paced for x in m.itl_per_token_s]
    return TokenFigures(
        ttfo_s=rnd(median([m.ttfo_s for m in ms if m.ttfo_s is not None])),
        reasoning_tokens=sum(reasoning) if reasoning else None,
        reasoning_estimated=any(m.reasoning_estimated for m in ms),
        reasoning_split_estimated=sum(r.split_chunks for r in records if r.ok),
        tokens_per_chunk=rnd(tpc, 3),
        itl_p50_s=rnd(median(itl), 6),
        itl_per_token_p50_s=rnd(median(per_token), 6),
        chunk_counts_estimated=any(m.chunk_counts_estimated for m in ms) if ms else None,
    )


def outcome_figures(records) -> Outcomes:
    """How a cell's requests ended, apart from ``errors`` (which counts every request that is not
    complete, these included, since no figure comes from them): ``truncated`` (no finish_reason),
    ``empty`` (no token) and ``bursts`` (complete, but read in one go, or paced faster than any lane
    decodes: no per-stream rate or ITL -- the same flag :func:`request_metrics` withholds the rate on).
    ``._asdict()``: the same as a dict (``bench load`` spreads it into its reps)."""
    truncated = empty = bursts = 0
    for r in records:
        o = r.outcome
        if o == TRUNCATED:
            truncated += 1
        elif o == EMPTY:
            empty += 1
        elif o == COMPLETE and (r.burst or BURST in request_metrics(r).flags):
            bursts += 1
    return Outcomes(truncated, empty, bursts)


def client_bound_figures(records, load) -> ClientBound:
    """``client_bound``: requests that ran while lanemon itself was starved (``load``, a
    :class:`~lanemon.measure.load.ClientLoad`); ``starved_s``: how long lanemon was held up during the
    cell (first send -> last end), ``starved_share`` that over the span.  A cell starved for
    ``STARVED_SHARE`` of its span or more is ``unreliable``: its figures may be lanemon's limit, not the
    lane's.  Below that the client-bound requests are counted and the cell stands (a stall moves a
    throughput figure by at most its share of the span)."""
    records = list(records)
    n = sum(1 for r in records if load is not None and load.overlaps(r.sent_ns, r.end_ns))
    sent = [r.sent_ns for r in records if r.sent_ns is not None]
    ends = [r.end_ns for r in records if r.end_ns is not None]
    starved = share = 0.0
    if n and sent and ends and max(ends) > min(sent):
        starved = load.starved_s(min(sent), max(ends))
        share = starved / ((max(ends) - min(sent)) / NS)
    return ClientBound(n, rnd(starved, 3), rnd(share, 4), n > 0 and share >= STARVED_SHARE)


def goodput_of(reps: Sequence[Sequence[Any]], slo: dict[str, float] | None) -> CellGoodput | None:
    """``rate_rps``, ``share``, ``good``, ``total``, ``held``, ``targets`` of a cell (:mod:`lanemon.measure.slo`):
    requests meeting every SLO target (errors count as misses).  ``share`` = good / all requests;
    ``rate_rps`` = good / the summed wall time of the reps (first send -> last end of each rep, so the
    time between reps is not counted); ``held`` and ``targets`` say whether each target held (p90 TTFT,
    median TPOT, p90 E2E of the completed requests) and its attainment.  None without an SLO."""
    if not slo:
        return None
    ms = []
    wall = 0.0
    for recs in reps:
        recs = list(recs)
        ms += [request_metrics(r) for r in recs]
        starts = [r.sent_ns for r in recs if r.sent_ns is not None]
        ends = [r.end_ns for r in recs if r.end_ns is not None]
        if starts and ends and max(ends) > min(starts):
            wall += (max(ends) - min(starts)) / NS
    res = slo_mod.evaluate(ms, slo, wall)
    j = res.to_result()
    return CellGoodput(rate_rps=j.goodput_rps, share=j.share, good=res.good, total=res.total, held=res.held,
                       targets=j.targets)


def run_state(marks: BenchMarks, in_progress: bool) -> RunState:
    """The ``interrupted`` / ``cut`` / ``running`` part of a bench result; an interrupted run also gets
    ``not_run`` (:func:`not_run`).  ``to_json_obj(...)``: the same as a dict (``bench load`` adds it to its
    result)."""
    open_cells = marks.open_cells()
    interrupted = marks.interrupted or (marks.started and not marks.ended and not in_progress)
    running = in_progress and not marks.ended
    return RunState(interrupted=interrupted, cut=[] if running else open_cells,
                    running=open_cells if running else None, not_run=not_run(marks) if interrupted else None)


def not_run(marks: BenchMarks) -> NotRun:
    """What an interrupted run did not run (pure): ``planned`` cells (None for a recording without a plan in its
    start mark), ``finished`` cells, ``cut`` ids (started, never ended), ``cells`` never started (ids), ``ranges``
    those as 1-based ``[first, last]`` runs of the plan's order, ``lanes`` of the run that finished no cell."""
    finished = [c for c, d in marks.cells.items() if d.end is not None]
    cut = [c for c, d in marks.cells.items() if d.end is None]
    lanes_done = {marks.cells[c].start.lane for c in finished}
    never = [p.cell for p in marks.plan if p.cell not in marks.cells]
    ranges: list[list[int]] = []
    for i, p in enumerate(marks.plan, 1):
        if p.cell in marks.cells:
            continue
        if ranges and ranges[-1][1] == i - 1:
            ranges[-1][1] = i
        else:
            ranges.append([i, i])
    return NotRun(planned=len(marks.plan) or None, finished=len(finished), cut=cut, cells=never, ranges=ranges,
                  lanes=[lane for lane in marks.lanes if lane not in lanes_done])


def _state_of(result: RunState | dict[str, Any]) -> RunState | None:
    """A result's run state: the typed result itself, or the run-state keys of a result read back as JSON (a
    report's analysis; None when they do not read as one)."""
    if isinstance(result, RunState):
        return result
    if not isinstance(result, dict):
        return None
    keys = {k: result[k] for k in ("interrupted", "cut", "not_run", "running") if k in result}
    try:
        return msgspec.convert({"interrupted": False, "cut": [], **keys}, RunState, strict=False)
    except msgspec.ValidationError:
        return RunState(interrupted=bool(result.get("interrupted")), cut=[])


def interruption_text(bench: str, result: RunState | dict[str, Any]) -> str | None:
    """``decode run interrupted after 2 of 28 cells: lane B never ran; cells 3-28 not run (A/C3/r0 cut
    mid-cell)`` for an interrupted result (typed, or its JSON), else None.  ``upper_bound``: the plan is the most
    the bench could run (a sweep stops at its knee)."""
    state = _state_of(result)
    if state is None or not state.interrupted:
        return None
    nr = state.not_run
    if nr is None:
        return f"{bench} run interrupted: the results cover only what finished"
    planned, finished = nr.planned, nr.finished
    head = f"{bench} run interrupted"
    if finished is not None:
        head += f" after {finished} of {planned} cells" if planned else f" after {finished} finished cell{'' if finished == 1 else 's'}"
    parts = []
    if nr.lanes:
        parts.append(f"lane{'s' if len(nr.lanes) > 1 else ''} {', '.join(nr.lanes)} never ran")
    if nr.ranges:
        spans = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in nr.ranges)
        n = sum(b - a + 1 for a, b in nr.ranges)
        parts.append(f"{'up to ' if bench == 'sweep' else ''}cell{'s' if n > 1 else ''} {spans} not run")
    cut = nr.cut or [c.get("cell") for c in state.cut if isinstance(c, dict)]
    if cut:
        parts.append(f"cut mid-cell: {', '.join(str(c) for c in cut)}")
    if not parts:
        parts.append("no cell was cut; the end of the run is missing")
    return head + ": " + "; ".join(parts)


async def edge(h) -> None:
    """Read the lanes' /metrics and GPU telemetry at a cell's edge, and wait for them (Harness.edge): the
    run-scoped engine counters and the energy of a cell are differences between its two edges."""
    fn = getattr(h, "edge", None)
    if fn is not None:
        await fn()


async def each_lane(h, opts: "BenchOptions", one_lane) -> None:
    """``await one_lane(name)`` for every lane of the harness: one after another, or all at once with
    ``parallel_lanes``."""
    if opts.parallel_lanes:
        async with asyncio.TaskGroup() as tg:
            for lane in h.names:
                tg.create_task(one_lane(lane))
    else:
        for lane in h.names:
            await one_lane(lane)


def first_error(records) -> str | None:
    for r in records:
        if r.error:
            return r.error.message or r.error.cls or "error"
    return None


# ---------------------------------------------------------------------------
# BenchRun
# ---------------------------------------------------------------------------


class BenchRun(FixedPace):
    """One bench run on a set of lanes; publishes everything on ``self.bus``."""

    mode = "bench"

    def __init__(self, kind: str, lanes: Sequence[LaneConfig], options: BenchOptions | None = None, *,
                 recorder: Recorder | None = None, stall_timeout: float | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown bench {kind!r} (choose: {', '.join(KINDS)})")
        if not lanes:
            raise ValueError("a bench needs at least one lane")
        self.kind = kind
        self.lane_configs = list(lanes)
        self.options = options or BenchOptions()
        self.bus = EventBus()
        self.lanes: list[PublicLane] = [lane.shown() for lane in self.lane_configs]
        self.recorder = recorder
        self.recording_path: Path | None = recorder.path if recorder is not None else None
        self.finished = False
        self.interrupted = False
        self.cells_done = 0
        self.current: Event | None = None  # the start mark of the cell that started last
        self.events: list[Event] = []
        self.error: str | None = None
        self.stall_timeout = stall_timeout
        self._module = importlib.import_module(_MODULES[kind])
        self.plan: list[PlannedCell] = self._module.plan(self.names, self.options)
        self._open: dict[str, Event] = {}  # cell id -> its start mark, while it runs
        self._task: asyncio.Task | None = None
        self._stop_requested = False
        self.collector = CollectorHold()
        self.bus.subscribe(self.events.append)
        if recorder is not None:
            self.bus.subscribe(recorder)
        self.bus.subscribe(self._track)

    @property
    def names(self) -> list[str]:
        return [lane.name for lane in self.lane_configs]

    @property
    def cells_total(self) -> int:
        return len(self.plan)

    def _track(self, ev: Event) -> None:
        if ev.kind != schema.MARK or ev.data.get("label") != "cell":
            return
        cell = ev.data.get("cell")
        if ev.data.get("phase") == "start":
            self._open[cell] = self.current = ev
        elif ev.data.get("phase") == "end":
            self._open.pop(cell, None)
            self.cells_done += 1

    async def run(self) -> None:
        """Probe the lanes, run the bench, mark its end; sets ``finished``.

        Raises :class:`~lanemon.workloads.harness.LaneDown` (nothing is run)
        when a lane is down.  A cancellation from :meth:`stop` ends the run
        cleanly; any other cancellation (Ctrl-C) is re-raised after the end
        mark is written.
        """
        from lanemon.workloads.harness import Harness

        self._task = asyncio.current_task()
        h = Harness(self.lane_configs, bus=self.bus, keep_events=False, stall_timeout=self.stall_timeout,
                    thinking=self.options.thinking, monitor=True)
        started = False
        self.collector.__enter__()  # no full garbage collection while cells are timed (workloads/collector.py)
        try:
            await h.connect(detect_usage=True)
            self.lanes = [lane.shown(h.clients[lane.name].model) for lane in self.lane_configs]
            if self.options.uses_workers:
                if self.options.workers_backend == "ray":
                    from lanemon.workers.ray_pool import RayPool

                    h.pool = RayPool(self.options.workers, self.lane_configs, h.clock, h.bus,
                                     stall_timeout=self.stall_timeout, address=self.options.ray_address,
                                     per_node=self.options.workers_per_node, log_path=self.options.ray_log)
                else:
                    from lanemon.workers.pool import WorkerPool

                    h.pool = WorkerPool(self.options.workers, self.lane_configs, h.clock, h.bus,
                                        stall_timeout=self.stall_timeout)
                await h.pool.start()
                self.options.workers = h.pool.n
                self.options.worker_hosts = msgspec.to_builtins(getattr(h.pool, "hosts", None)) or None
            if self.recorder is not None:  # a held header names the workers: node, host, address, clock offset
                self.recorder.release_header({"workers": self.options.worker_hosts} if self.options.worker_hosts
                                             else None)
            h.mark("bench", bench=self.kind, phase="start",
                   config=msgspec.to_builtins(self.options.config(self.kind, self.names)),
                   plan=[{"lane": c.lane, "cell": c.cell, "weight": c.weight} for c in self.plan])
            started = True
            await self._module.run(h, self.options)
        except asyncio.CancelledError:
            self.interrupted = True
            if not self._stop_requested:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            if getattr(h, "pool", None) is not None:
                await h.pool.aclose()
                for failure in h.pool.failures:
                    h.note(f"worker: {failure}", "error")
            if started:
                cut = [cell_keys(c) for c in self._open.values()]
                h.mark("bench", bench=self.kind, phase="end", interrupted=self.interrupted, cut=cut)
            await h.aclose()
            if self.recorder is not None:
                self.recorder.flush()
            self.collector.__exit__(None, None, None)  # the collector's thresholds restored
            self.finished = True

    def stop(self) -> None:
        """Cancel the run; finished cells are kept, the results say ``interrupted``."""
        if self._task is not None and not self.finished:
            self._stop_requested = True
            self._task.cancel()

    def results(self) -> Result:
        """The bench's typed result computed from the events so far (``to_json_obj``: its JSON, docs/JSON.md)."""
        from lanemon.measure.views import attach_engine_views

        return attach_engine_views(self._module.results(self.events, in_progress=not self.finished), self.events)
