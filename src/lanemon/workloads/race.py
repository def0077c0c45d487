"""Side-by-side prompt races (core: no Textual).

One race sends the same prompt to every lane at the same instant (the
requests are built first, then started together with ``asyncio.gather``) and
lets them stream.  Per lane it keeps the streamed text, TTFT, decode tok/s,
output tokens (the server's ``usage``, or a chunk count marked estimated),
total time, finish order and errors.

Recording conventions (what :func:`race_results` reads back):

* a ``mark`` event ``{"label": "race N", "bench": "race", "phase": "start",
  "race": N, "prompt": TEXT, "prompt_id": ID, "category": C, "endpoint": E,
  "max_tokens": M, "lanes": [NAMES]}`` just before the requests;
* each request's ``meta``: ``{"bench": "race", "race": N, "prompt_id": ID}``
  (purpose ``"race"``);
* a ``mark`` ``{"label": "race N", "bench": "race", "phase": "end", "race": N,
  "winner": NAME|None}`` after the last lane finished, with ``"stopped": true``
  when the race was cancelled (Ctrl-C, quit): stopped races are left out of
  the results.

:func:`race_results` computes the typed result (:class:`lanemon.results.race.RaceResult`, what
``--json`` prints) from events alone (through :class:`lanemon.folds.race.RaceState`, the same fold the
race screen draws from), so a report made from a recording says what ``--json`` said when the run
finished.  docs/JSON.md ("race") documents every key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from lanemon.measure import metrics
from lanemon.folds.race import BENCH, RaceState, RaceView
from lanemon.events import Event
from lanemon.measure.metrics import round_or_none
from lanemon.measure.records import BURST, EMPTY, OUTCOMES, TRUNCATED, RequestRecord, reiterable
from lanemon.results.common import Energy
from lanemon.results.race import (ENERGY_FIELDS, NO_ENERGY, TIE_S, Race, RaceError, RaceGoodput, RaceLane,
                                  RaceLeader, RaceEnergy, RaceMargin, RaceResult, RaceSummary,
                                  RaceWinners)

if TYPE_CHECKING:  # a race's analysis (reports, replay) reads this module and sends nothing: no HTTP client
    from lanemon.client.http import LaneClient

DEFAULT_MAX_TOKENS = 256
"""Reply budget when neither the prompt nor ``--max-tokens`` gives one."""


@dataclass(frozen=True)
class RacePrompt:
    text: str
    id: str | None = None
    category: str | None = None
    max_tokens: int | None = None


BUILTIN_PROMPT = RacePrompt(
    id="builtin-harbour",
    category="prose",
    max_tokens=DEFAULT_MAX_TOKENS,
    text="In two short paragraphs of prose, describe a harbour at dawn as the fishing boats come back.",
)
"""Raced when no prompt option is given."""


@dataclass(frozen=True)
class RacePlan:
    """The races a ``lanemon race`` run asks for (the race screen runs them in order)."""

    prompts: Sequence[RacePrompt]
    endpoint: str = "completions"
    max_tokens: int | None = None


class PromptSetUnavailable(LookupError):
    """The shipped prompt set (``lanemon.workloads.prompts``) cannot be loaded."""


# ---------------------------------------------------------------- prompts
def _field(item: Any, name: str) -> Any:
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def shipped_prompts() -> list[RacePrompt]:
    """Every prompt of the shipped set, as :class:`RacePrompt` (PromptSetUnavailable if missing)."""
    try:
        from lanemon.workloads.prompts import load_prompt_set
    except ImportError as exc:
        raise PromptSetUnavailable(f"the shipped prompt set is not available ({exc})") from None
    try:
        loaded = load_prompt_set()
    except (OSError, ValueError) as exc:
        raise PromptSetUnavailable(f"the shipped prompt set cannot be read ({exc})") from None
    items = getattr(loaded, "prompts", loaded)
    if isinstance(items, dict):
        items = list(items.values())
    out = []
    for item in items:
        text = _field(item, "text")
        if not isinstance(text, str) or not text:
            continue
        mt = _field(item, "max_tokens")
        out.append(RacePrompt(text=text, id=_field(item, "id"), category=_field(item, "category"),
                              max_tokens=mt if isinstance(mt, int) and mt > 0 else None))
    if not out:
        raise PromptSetUnavailable("the shipped prompt set is empty")
    return out


def category_prompts(category: str) -> list[RacePrompt]:
    """The shipped prompts of ``category`` (ValueError naming the known categories if none)."""
    prompts = shipped_prompts()
    chosen = [p for p in prompts if (p.category or "").lower() == category.lower()]
    if not chosen:
        known = sorted({p.category for p in prompts if p.category})
        raise ValueError(f"unknown prompt category {category!r} (categories: {', '.join(known) or 'none'})")
    return chosen


def resolve_prompts(
    *,
    prompts: Sequence[str] = (),
    prompt_file: Path | str | None = None,
    category: str | None = None,
    repeat: int = 1,
) -> list[RacePrompt]:
    """The races to run, in order.

    ``--prompt`` (repeatable) and ``--prompt-file`` (the whole file is one
    prompt; ``-`` reads stdin) give literal prompts, raced in order and the
    whole list ``repeat`` times.  ``--category C`` races the shipped prompts of
    category C: one race, or ``repeat`` races cycling through the category.
    Without any of them the built-in prompt is raced ``repeat`` times.
    Raises ValueError (one line) for bad input.
    """
    if repeat < 1:
        raise ValueError("--repeat must be at least 1")
    given = [p for p in prompts]
    if category is not None and (given or prompt_file is not None):
        raise ValueError("--category cannot be combined with --prompt or --prompt-file")
    literal: list[RacePrompt] = []
    for i, text in enumerate(given, 1):
        if not text.strip():
            raise ValueError("--prompt is empty")
        literal.append(RacePrompt(text=text, id=f"prompt-{i}" if len(given) > 1 else "prompt"))
    if prompt_file is not None:
        from lanemon.config import read_user_text

        path = Path(prompt_file)
        text = read_user_text(prompt_file, "--prompt-file")  # bounded; ConfigError is a ValueError
        if not text.strip():
            raise ValueError(f"--prompt-file {prompt_file} is empty")
        literal.append(RacePrompt(text=text, id=path.stem if str(prompt_file) != "-" else "stdin"))
    if literal:
        return literal * repeat
    if category is not None:
        try:
            chosen = category_prompts(category)
        except PromptSetUnavailable as exc:
            raise ValueError(f"--category: {exc}") from None
        return [chosen[i % len(chosen)] for i in range(repeat)]
    return [BUILTIN_PROMPT] * repeat


class PromptCycle:
    """The next prompt of the shipped set on every call (the built-in prompt if there is no set)."""

    def __init__(self, prompts: Sequence[RacePrompt] | None = None) -> None:
        if prompts is None:
            try:
                prompts = shipped_prompts()
            except Exception:  # a broken or missing prompt set must not break the dashboard
                prompts = [BUILTIN_PROMPT]
        self.prompts = list(prompts) or [BUILTIN_PROMPT]
        self._i = 0

    def peek(self) -> RacePrompt:
        """The prompt the next call returns."""
        return self.prompts[self._i % len(self.prompts)]

    def __call__(self) -> RacePrompt:
        p = self.prompts[self._i % len(self.prompts)]
        self._i += 1
        return p


# ---------------------------------------------------------------- running
class RaceTarget(Protocol):
    """What a race runs on: a :class:`~lanemon.workloads.harness.Harness` or a LiveSession."""

    clients: dict[str, LaneClient]

    def mark(self, label: str, lane: str | None = None, **data: Any) -> None: ...


async def run_race(
    target: RaceTarget,
    prompt: RacePrompt,
    index: int,
    *,
    endpoint: str = "completions",
    max_tokens: int | None = None,
    lanes: Sequence[str] | None = None,
    slo: dict[str, float] | None = None,
) -> dict[str, RequestRecord]:
    """Race ``prompt`` on every lane of ``target`` (or ``lanes``); the finished record per lane.

    Every request is built before any is sent; then all start together.
    Temperature is 0.  The race is bracketed by start/end marks; on
    cancellation the requests are cancelled (each records a ``cancelled``
    error) and the end mark says ``stopped``.
    """
    if endpoint not in ("completions", "chat"):
        raise ValueError(f"unknown endpoint {endpoint!r}")
    names = list(lanes) if lanes is not None else list(target.clients)
    budget = max_tokens or prompt.max_tokens or DEFAULT_MAX_TOKENS
    bodies = {
        name: target.clients[name].build_body(endpoint, prompt=prompt.text, max_tokens=budget,
                                              extra={"temperature": 0})
        for name in names
    }
    meta = {"bench": BENCH, "race": index, "prompt_id": prompt.id}
    label = f"race {index}"
    extra_mark: dict[str, dict[str, float]] = {"slo": dict(slo)} if slo else {}
    await _edge(target)  # /metrics and GPU telemetry read before the race: its counters and energy (docs/GPU.md)
    target.mark(label, bench=BENCH, phase="start", race=index, prompt=prompt.text, prompt_id=prompt.id,
                category=prompt.category, endpoint=endpoint, max_tokens=budget, lanes=names, **extra_mark)
    stopped = False
    records: list[RequestRecord] = []
    try:
        records = await asyncio.gather(
            *(target.clients[name].stream(endpoint, bodies[name], purpose="race", meta=meta) for name in names)
        )
    except asyncio.CancelledError:
        stopped = True
        raise
    finally:
        winner = None
        done = [r for r in records if r.ok]
        if done:
            winner = min(done, key=lambda r: r.end_ns).lane  # type: ignore[arg-type, return-value]
        stop: dict[str, bool] = {"stopped": True} if stopped else {}
        target.mark(label, bench=BENCH, phase="end", race=index, winner=winner, **stop)
    await _edge(target)
    return dict(zip(names, records))


async def _edge(target: Any) -> None:
    """Wait for a reading of the lanes' /metrics and GPU telemetry (Harness.edge), where the target has one."""
    fn = getattr(target, "edge", None)
    if fn is not None:
        await fn()


# ---------------------------------------------------------------- results
NOT_COMPLETE = {
    TRUNCATED: "the stream ended without a finish_reason",
    EMPTY: "the reply carried no token",
}


def _lane_error(entry: Any) -> RaceError | None:
    """Why ``entry`` (a :class:`~lanemon.folds.race.RaceLane`) has no figures, or None for a complete request."""
    outcome = entry.outcome
    if entry.rec is None:
        return RaceError(cls="missing", message="no request was recorded for this lane")
    if not entry.finished:
        return RaceError(cls="unfinished", message="the request had not finished")
    error = entry.error
    if outcome in NOT_COMPLETE:
        why = (error.message if error is not None else None) or NOT_COMPLETE[outcome]
        return RaceError(cls=outcome, message=str(why))
    if error is not None:
        return RaceError(cls=error.cls or "error", message=error.message or "")
    return None


def lane_result(view: RaceView, name: str) -> RaceLane:
    """One lane's figures in one race (``races[].lanes[NAME]``), energy not yet known (:data:`NO_ENERGY`).

    Figures only for a complete request (``outcome``); a truncated or empty reply has ``error``
    ``{"cls": "truncated"|"empty", ...}`` so every reader leaves it out, and never ranks.  ``flags``:
    ``burst`` (no decode rate: the chunks were read in one go), ``client_bound``."""
    entry = view.lanes[name]
    m = entry.metrics() if entry.finished else None
    error = _lane_error(entry)
    ok = m if error is None and m is not None and m.ok else None  # the figures of a complete request
    return RaceLane(
        **NO_ENERGY,
        outcome=entry.outcome,
        flags=sorted(m.flags) if m else [],
        ttft_s=round_or_none(ok.ttft_s) if ok is not None else None,
        ttfo_s=round_or_none(ok.ttfo_s) if ok is not None else None,
        decode_tok_s=round_or_none(ok.decode_tok_s, 2) if ok is not None else None,
        output_tokens=ok.output_tokens if ok is not None else None,
        generated_tokens=ok.generated_tokens if ok is not None else None,
        reasoning_tokens=ok.reasoning_tokens if ok is not None else None,
        reasoning_estimated=ok.reasoning_estimated if ok is not None else None,
        tokens_estimated=ok.tokens_estimated if ok is not None else None,
        tokens_per_chunk=round_or_none(ok.tokens_per_chunk, 3) if ok is not None and ok.tokens_per_chunk else None,
        chunk_counts_estimated=ok.chunk_counts_estimated if ok is not None else None,
        total_s=round_or_none(ok.e2e_s) if ok is not None else None,
        finish_rank=entry.rank,
        error=error,
        text=entry.text,
        reasoning_text=entry.reasoning_text,
        meets_slo=bool(ok is not None and metrics.meets_slo(ok, view.slo)) if view.slo else None,
    )


def race_json(view: RaceView) -> Race:
    """One race as its ``races[]`` entry (works on a race still running: figures so far)."""
    lanes = {name: lane_result(view, name) for name in view.lanes}
    ranking = view.ranking
    runner_up = total_delta = total_ratio = ttft_ratio = None
    if len(ranking) >= 2:
        w, r = lanes[ranking[0]], lanes[ranking[1]]
        runner_up = ranking[1]
        if w.total_s and r.total_s is not None:
            total_delta = round_or_none(r.total_s - w.total_s)
            total_ratio = round_or_none(r.total_s / w.total_s)
        if w.ttft_s and r.ttft_s is not None:
            ttft_ratio = round_or_none(r.ttft_s / w.ttft_s)
    first = lanes[ranking[0]] if ranking else None
    for name, lane in lanes.items():  # each lane against the winner, once (the race screen's column reads it)
        if first is not None and name != ranking[0] and first.total_s and lane.total_s is not None:
            lane.behind_s = round_or_none(lane.total_s - first.total_s)
            lane.behind_ratio = round_or_none(lane.total_s / first.total_s)
    race = Race(race=view.index, prompt=view.prompt, prompt_id=view.prompt_id, category=view.category,
                endpoint=view.endpoint, max_tokens=view.max_tokens, lanes=lanes,
                winner=ranking[0] if ranking else None,
                margin=RaceMargin(runner_up=runner_up, total_s_delta=total_delta, total_s_ratio=total_ratio,
                                  ttft_s_ratio=ttft_ratio),
                winners=winners(lanes, ranking), verdict="")
    race.verdict = verdict(race)
    return race


FIGURES = ("ttft_s", "decode_tok_s")
"""The figures :func:`_leader` ranks lanes on."""


def _leader(lanes: dict[str, RaceLane], key: str, higher_better: bool) -> RaceLeader:
    """The best and second-best complete lane on ``key`` (one of :data:`FIGURES`), and their ratio (>= 1: how many
    times better)."""
    rows = sorted(((getattr(r, key), name) for name, r in lanes.items() if r.error is None and getattr(r, key)),
                  reverse=higher_better)
    if len(rows) < 2:
        return RaceLeader(lane=rows[0][1] if rows else None, runner_up=None, ratio=None)
    best, second = rows[0][0], rows[1][0]
    return RaceLeader(lane=rows[0][1], runner_up=rows[1][1],
                      ratio=round_or_none(best / second if higher_better else second / best, 3))


def winners(lanes: dict[str, RaceLane], ranking: list[str]) -> RaceWinners:
    """Who won what, named separately: ``end_to_end`` (finished first), ``ttft`` (first token sooner) and
    ``decode`` (faster per token, complete non-burst requests only), each ``{"lane", "runner_up",
    "ratio"}``; ``tokens``: every complete lane's generated tokens (output + reasoning)."""
    e2e = RaceLeader(lane=ranking[0] if ranking else None, runner_up=None, ratio=None)
    if len(ranking) >= 2:
        w, r = lanes[ranking[0]].total_s, lanes[ranking[1]].total_s
        e2e.runner_up = ranking[1]
        e2e.ratio = round_or_none(r / w, 3) if w and r is not None else None
    return RaceWinners(
        end_to_end=e2e,
        ttft=_leader(lanes, "ttft_s", higher_better=False),
        decode=_leader(lanes, "decode_tok_s", higher_better=True),
        tokens={name: r.generated_tokens for name, r in lanes.items() if r.generated_tokens is not None},
    )


def fold(events: Iterable[Event]) -> RaceState:
    state = RaceState()
    for ev in events:
        state.apply(ev)
    return state


def finished_races(state: RaceState) -> list[RaceView]:
    """Races that ran to the end (not stopped), by index."""
    out = []
    for index in sorted(state.races):
        view = state.races[index]
        if view.complete and not view.stopped and view.lanes:
            out.append(view)
    return out


def race_results(events: Iterable[Event]) -> RaceResult:
    """The ``lanemon race --json`` document (:class:`~lanemon.results.race.RaceResult`), from events alone.

    Top-level ``lanes`` holds, per lane, the median over the finished races
    of each figure (errors are left out, never averaged in) -- for a single
    race that is exactly that race's figures -- plus ``wins`` and
    ``races_ok``.  ``lanes_stat`` says which: ``"last race"`` or
    ``"median of N races"``.  Energy, cost and engine counters need the events (a bare
    :class:`~lanemon.folds.race.RaceState` gives none).
    """
    if not isinstance(events, RaceState):
        events = reiterable(events)
    state = events if isinstance(events, RaceState) else fold(events)
    views = finished_races(state)
    races = [race_json(view) for view in views]
    names: list[str] = []
    for race in races:
        for name in race.lanes:
            if name not in names:
                names.append(name)
    lanes = {name: lane_summary(name, races, views) for name in names}
    slos = [v.slo for v in views if v.slo]
    result = RaceResult(bench=BENCH, races=races, lanes=lanes,
                        lanes_stat="last race" if len(races) == 1 else f"median of {len(races)} races",
                        slo=slos[-1] if slos else None)
    if not isinstance(events, RaceState):
        race_energy(result, events)
    return result


def lane_summary(name: str, races: list[Race], views: list[RaceView]) -> RaceSummary:
    """Lane ``name`` over ``races``: the median of each figure over the races it did not error in."""
    rows = [r.lanes[name] for r in races if name in r.lanes and r.lanes[name].error is None]

    def med(key: str, digits: int = 4) -> float | None:
        return round_or_none(metrics.median([v for row in rows if (v := getattr(row, key)) is not None]), digits)

    slo_views = [v for v in views if name in v.lanes and v.slo]
    return RaceSummary(
        **NO_ENERGY,
        ttft_s=med("ttft_s"),
        ttfo_s=med("ttfo_s"),
        decode_tok_s=med("decode_tok_s", 2),
        output_tokens=med("output_tokens", 1),
        reasoning_tokens=med("reasoning_tokens", 1),
        tokens_per_chunk=med("tokens_per_chunk", 3),
        total_s=med("total_s"),
        wins=sum(1 for r in races if r.winner == name),
        races_ok=len(rows),
        outcomes={o: sum(1 for r in races if name in r.lanes and r.lanes[name].outcome == o) for o in OUTCOMES},
        bursts=sum(1 for r in races if name in r.lanes and BURST in r.lanes[name].flags),
        goodput=race_goodput([v.lanes[name] for v in slo_views], slo_views[-1].slo or {}) if slo_views else None,
    )


def race_energy(result: RaceResult, events: list[Event]) -> None:
    """Energy and cost (docs/GPU.md) of every lane in every race, over the race's start to end marks (the lane's
    GPUs are held for the race), and per lane over its races (:func:`~lanemon.measure.energy.run_energy`); a race
    without both marks has no window (the reason says so).  ``engine_counters`` of every race lane whose
    ``/metrics`` were scraped (null when no scrape pair brackets the race).  In place."""
    from lanemon.measure.counters import Scrapes, scrapes, window_counters
    from lanemon.measure.energy import energy_of, lane_costs, lane_readings, race_windows, run_energy
    from lanemon.measure.energy_sampling import Reading, Sampled

    windows = race_windows(events)
    costs = lane_costs(events)
    readings: dict[str, tuple[list[Reading], Sampled]] = {}
    scraped: dict[str, Scrapes] = {}
    runs: dict[str, tuple[list[tuple[int, int]], int]] = {}
    for race in result.races:
        w = windows.get(race.race)
        for name, entry in race.lanes.items():
            tokens = (entry.generated_tokens or 0) if entry.error is None else 0  # reasoning included
            rs, sampled = lane_readings(readings, events, name)
            block = energy_of(events, name, [w] if w else [], tokens, costs.get(name), rs, "race", sampled)
            race.lanes[name] = entry = msgspec.structs.replace(entry, **msgspec.structs.asdict(_energy(block)))
            if w is None:
                continue
            ws, n = runs.get(name, ([], 0))
            runs[name] = (ws + [w], n + tokens)
            scr = scraped[name] if name in scraped else scraped.setdefault(name, scrapes(events, name))
            if scr:
                entry.engine_counters = window_counters(scr, *w)  # typed (results/counters.py)
    for name, summary in result.lanes.items():
        ws, n = runs.get(name, ([], 0))
        block = run_energy(events, name, ws, n, costs.get(name), *lane_readings(readings, events, name))
        result.lanes[name] = msgspec.structs.replace(summary, **msgspec.structs.asdict(_energy(block)))


def _energy(block: Energy) -> RaceEnergy:
    """The :class:`~lanemon.results.race.RaceEnergy` of an energy block (None where it leaves a field out)."""
    return RaceEnergy(**{k: None if (v := getattr(block, k)) is msgspec.UNSET else v for k in ENERGY_FIELDS})


def race_goodput(entries: Sequence[Any], slo: dict[str, float]) -> RaceGoodput:
    """One lane's goodput over its races: ``share`` = races whose request met every target / races
    (errors count as misses); ``rate_rps`` = those requests / the lane's summed request time
    (request sent -> end, races run one after another)."""
    good = 0
    busy = 0.0
    for entry in entries:
        rec = entry.rec
        if rec is None:
            continue
        if rec.sent_ns is not None and rec.end_ns is not None:
            busy += (rec.end_ns - rec.sent_ns) / metrics.NS
        if rec.ok and metrics.meets_slo(metrics.request_metrics(rec), slo):
            good += 1
    total = len(entries)
    return RaceGoodput(rate_rps=round_or_none(good / busy) if busy else None,
                       share=round_or_none(good / total) if total else None, good=good, total=total)


# ---------------------------------------------------------------- words
def _failed(name: str, r: RaceLane) -> str:
    cls = r.error.cls if r.error is not None else "error"
    if cls == TRUNCATED:
        return f"{name} was truncated (no finish_reason)"
    if cls == EMPTY:
        return f"{name} sent an empty reply"
    return f"{name} failed ({cls})"


def verdict(race: Race) -> str:
    """What happened in one race, the end-to-end, per-token and first-token winners named
    apart, with token counts: ``B finished first by 0.51 s (1.31x sooner), writing 40 % fewer tokens
    (105 vs 174); per token A was 1.19x faster (88.0 vs 74.2 tok/s); first token: A, 1.10x sooner``."""
    winner = race.winner
    lanes = race.lanes
    failed = [name for name, r in lanes.items() if r.error]
    tail = ""
    if failed:
        tail = "; " + ", ".join(_failed(n, lanes[n]) for n in failed)
    bursts = [n for n, r in lanes.items() if not r.error and BURST in r.flags]
    if bursts:
        tail += "; " + ", ".join(bursts) + " arrived in one burst (no per-token rate)"
    if winner is None:
        return "no lane completed" + tail
    margin = race.margin
    runner = margin.runner_up
    if runner is None:
        return (f"{winner} finished alone" if len(lanes) > 1 else f"{winner} finished") + tail
    delta, ratio = margin.total_s_delta, margin.total_s_ratio
    if delta is None or ratio is None:
        return f"{winner} finished first" + tail
    if abs(delta) < TIE_S:  # "won by 0 ms" (or "-0 ms") is a tie, not a win
        w_total = lanes[winner].total_s
        together = [n for n, r in lanes.items() if w_total is not None and r.error is None
                    and r.total_s is not None and abs(r.total_s - w_total) < TIE_S]
        if len(together) < 2:
            together = [winner, runner]
        text = f"{_names(together)} finished together (end to end within 1 ms; {winner}'s end was read first)"
    elif delta < 0:  # finished first on the clock, but its request was sent sooner and took longer
        text = (f"{winner} finished first on the clock, but {runner}'s request took {_duration(-delta)} less end "
                f"to end (sent later)")
    else:
        text = f"{winner} finished first by {_duration(delta)} ({ratio:.2f}x sooner end to end)"
    text += _tokens_clause(lanes[winner], lanes[runner])
    dec = race.winners.decode
    if dec.lane and dec.ratio and dec.runner_up:
        fast, slow = lanes[dec.lane].decode_tok_s or 0.0, lanes[dec.runner_up].decode_tok_s or 0.0
        rates = f"{fast:.1f} vs {slow:.1f} tok/s"
        if dec.ratio < TIE_RATIO:  # "1.00x faster" is a tie
            text += f"; per token {_names(_tied(lanes, 'decode_tok_s', fast))} tie ({fast:.1f} tok/s)"
        elif dec.lane == winner:
            text += f"; also faster per token ({dec.ratio:.2f}x: {rates})"
        else:
            text += f"; per token {dec.lane} was {dec.ratio:.2f}x faster ({rates})"
    first = race.winners.ttft
    if first.lane and first.ratio:
        if first.ratio < TIE_RATIO:
            best = lanes[first.lane].ttft_s or 0.0
            text += f"; first token: {_names(_tied(lanes, 'ttft_s', best))} together ({best * 1000:.0f} ms)"
        else:
            text += f"; first token: {first.lane}, {first.ratio:.2f}x sooner"
    return text + tail


TIE_RATIO = 1.005
"""A per-token or first-token lead under this ratio prints as "1.00x": it is a tie, and says so."""


def _tied(lanes: dict[str, RaceLane], key: str, best: float) -> list[str]:
    """The complete lanes within :data:`TIE_RATIO` of ``best`` on ``key`` (one of :data:`FIGURES`), in lane
    order."""
    return [name for name, r in lanes.items() if r.error is None and (v := getattr(r, key))
            and max(v, best) / min(v, best) < TIE_RATIO]


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]




def _duration(seconds: float) -> str:
    """``0.51 s`` / ``12 ms`` (a positive gap)."""
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1000:.0f} ms"


def _tokens_clause(w: RaceLane, r: RaceLane) -> str:
    """``, writing 40 % fewer tokens (105 vs 174)`` when the winner wrote at least 5 % fewer or more."""
    a, b = w.generated_tokens, r.generated_tokens
    if not a or not b:
        return ""
    est = " est." if w.tokens_estimated or r.tokens_estimated else ""
    change = (a - b) / b
    if a == b:
        return f", writing as many tokens ({a} each{est})"
    if abs(change) < 0.05:  # not the same count: "about" (256 vs 245 is not "as many")
        return f", writing about as many tokens ({a} vs {b}{est})"
    word = "fewer" if change < 0 else "more"
    return f", writing {abs(change) * 100:.0f} % {word} tokens ({a} vs {b}{est})"
