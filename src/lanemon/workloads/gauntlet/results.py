"""The gauntlet's results, rebuilt from recorded events alone (pure: events in, a typed result out)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure import metrics
from lanemon.measure.metrics import round_or_none
from lanemon.measure.records import Assembler, RequestRecord, reiterable
from lanemon.results.gauntlet import (GauntletConfigInfo, GauntletLane, GauntletResult, GauntletTool,
                                      GauntletTurn, GauntletTurnMedian, config_info)
from lanemon.workloads.gauntlet.config import BENCH, DEFAULT_HOPS


# ---------------------------------------------------------------------------
# Results (pure: events in, a typed result out)
# ---------------------------------------------------------------------------


def _marks(events: Iterable[Event]) -> Iterable[Event]:
    for ev in events:
        if ev.kind == schema.MARK and ev.data.get("bench") == BENCH:
            yield ev


def gauntlet_results(events: Iterable[Event]) -> GauntletResult:
    """The gauntlet's result (``--json``: docs/JSON.md) rebuilt from recorded events alone."""
    events = reiterable(events)
    config = GauntletConfigInfo()
    lane_order: list[str] = []
    rep_ends: dict[str, dict[int, Mapping[str, object]]] = {}
    tools: dict[tuple[str, int, int], list[GauntletTool]] = {}
    models: dict[str, str | None] = {}
    for ev in _marks(events):
        d = ev.data
        phase = d.get("phase")
        if phase == "start":
            config = config_info(d.get("config"))
            for name in config.lanes:
                if name not in lane_order:
                    lane_order.append(name)
            for info in d.get("lanes") or []:
                if isinstance(info, dict) and info.get("name"):
                    models[info["name"]] = info.get("model")
        elif phase == "rep_end" and ev.lane:
            rep_ends.setdefault(ev.lane, {})[int(d.get("rep", 0))] = d
        elif phase == "tool" and ev.lane:
            tools.setdefault((ev.lane, int(d.get("rep", 0)), int(d.get("turn", 0))), []).append(
                GauntletTool(name=d.get("name"), path=d.get("path"), ok=bool(d.get("ok"))))
    turns: dict[tuple[str, int], dict[int, GauntletTurn]] = {}
    for rec in _gauntlet_records(events):
        rep, turn = int(rec.meta.get("rep", 0)), int(rec.meta.get("turn", 0))
        m = metrics.request_metrics(rec)
        calls = tools.get((rec.lane, rep, turn), [])
        row = GauntletTurn(
            turn=turn,
            prompt_tokens=rec.prompt_tokens,
            cached_tokens=rec.cached_tokens,
            ttft_s=round_or_none(m.ttft_s),
            decode_s=round_or_none(m.e2e_s - m.ttft_s) if m.e2e_s is not None and m.ttft_s is not None else None,
            completion_tokens=rec.completion_tokens,
            tool=calls[0] if calls else None,
            calls=len(calls),
        )
        if rec.error:
            row.error = rec.error.message
        turns.setdefault((rec.lane, rep), {})[turn] = row
        if rec.lane not in lane_order:
            lane_order.append(rec.lane)
    lanes: dict[str, GauntletLane] = {}
    for name in lane_order:
        ends = rep_ends.get(name, {})
        reps = sorted(ends)
        walls = [float(ends[r].get("wall_s", 0.0)) for r in reps]
        seen = reps_seen(walls, [bool(ends[r].get("correct")) for r in reps],
                         [int(ends[r].get("tool_calls", 0)) for r in reps])
        rep_turns = [[row for _, row in sorted(turns.get((name, r), {}).items())] for r in reps]
        lanes[name] = GauntletLane(
            model=models.get(name),
            correct=seen.correct,
            reps=seen.reps,
            correct_per_rep=[bool(ends[r].get("correct")) for r in reps],
            tool_calls=seen.tool_calls,
            wall_s=[round(w, 4) for w in walls],
            median_wall_s=seen.median_wall_s,
            malformed_calls=[int(ends[r].get("malformed_calls", 0)) for r in reps],
            stopped=[ends[r].get("stopped") for r in reps],
            turns=rep_turns,
            **rep_figures(rep_turns),
        )
    return GauntletResult(bench=BENCH, lanes=lanes, config=config,
                          summary=summary_sentence(lanes, config.hops or DEFAULT_HOPS))


def rep_figures(reps: Sequence[Sequence[GauntletTurn]]) -> dict[str, object]:
    """The figures of a lane's reps (``reps``: each rep's turns, in order) that every surface shows
    (measure/catalogue.py, ``gauntlet_*``): per rep its turns, ΣTTFT, Σdecode, first and last prompt tokens; the
    medians over reps of the two sums; per turn the median over the reps that reached it."""
    ttft_sums = [round(sum(t.ttft_s or 0.0 for t in turns), 4) for turns in reps]
    decode_sums = [round(sum(t.decode_s or 0.0 for t in turns), 4) for turns in reps]
    prompts = [[t.prompt_tokens for t in turns if t.prompt_tokens is not None] for turns in reps]
    per_turn: dict[int, list[GauntletTurn]] = {}
    for turns in reps:
        for t in turns:
            per_turn.setdefault(t.turn, []).append(t)

    def med(values: Iterable[float | int | None]) -> float | None:
        return round_or_none(metrics.median([v for v in values if v is not None]))

    p, d = med(ttft_sums), med(decode_sums)
    return {
        "turn_count": [len(turns) for turns in reps],
        "ttft_sum_s": ttft_sums,
        "decode_sum_s": decode_sums,
        "first_prompt_tokens": [p[0] if p else None for p in prompts],
        "last_prompt_tokens": [p[-1] if p else None for p in prompts],
        "median_ttft_sum_s": p,
        "median_decode_sum_s": d,
        "ttft_share": round_or_none(p / (p + d)) if p is not None and d is not None and p + d > 0 else None,
        "by_turn": [GauntletTurnMedian(turn=k, ttft_s=med(t.ttft_s for t in ts), decode_s=med(t.decode_s for t in ts),
                                       prompt_tokens=med(t.prompt_tokens for t in ts),
                                       completion_tokens=med(t.completion_tokens for t in ts),
                                       tool=any(t.calls for t in ts))
                    for k, ts in sorted(per_turn.items())],
    }


def _gauntlet_records(events: Sequence[Event]) -> list[RequestRecord]:
    asm = Assembler(keep_text=False)
    out = []
    for ev in events:
        rec = asm.apply(ev)
        if rec is not None and rec.meta.get("bench") == BENCH:
            out.append(rec)
    return out


def _calls_text(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo} tool calls" if lo == hi else f"{lo}–{hi} tool calls"


class RepsSeen(msgspec.Struct, frozen=True):
    """What :func:`summary_sentence` reads of a lane: its finished reps (the result's :class:`GauntletLane`, or the
    screen's fold while the run goes on)."""

    reps: int
    median_wall_s: float | None
    correct: int
    tool_calls: list[int]


def reps_seen(walls: Sequence[float], correct: Sequence[bool], tool_calls: Sequence[int]) -> RepsSeen:
    """A lane's finished reps (each rep's wall seconds, verdict, tool calls): how many, how many correct, and the
    median wall (catalogue ``gauntlet_median_wall``, over the walls rounded to 4 places as ``wall_s`` holds them).
    The result's lane and the gauntlet screen's fold both take their figures from here."""
    rounded = [round(float(w), 4) for w in walls]
    return RepsSeen(reps=len(rounded), median_wall_s=round_or_none(metrics.median(rounded)),
                    correct=sum(1 for c in correct if c), tool_calls=list(tool_calls))


def summary_sentence(lanes: Mapping[str, GauntletLane | RepsSeen], hops: int = DEFAULT_HOPS) -> str:
    """ "B finished the 20-hop chain in 22.4 s vs A 30.4 s (median of 3); both 3/3 correct with 20 tool calls"."""
    lanes = {n: d for n, d in lanes.items() if d.reps}
    if not lanes:
        return "no gauntlet rep finished"
    order = sorted(lanes, key=lambda n: (lanes[n].median_wall_s is None, lanes[n].median_wall_s or 0))
    best, rest = order[0], order[1:]
    reps = {d.reps for d in lanes.values()}
    of = f"median of {reps.pop()}" if len(reps) == 1 else "medians"
    head = f"{best} finished the {hops}-hop chain in {lanes[best].median_wall_s:.1f} s"
    if rest:
        head += " vs " + ", ".join(f"{n} {lanes[n].median_wall_s:.1f} s" for n in rest)
    head += f" ({of})"
    scores = {(d.correct, d.reps) for d in lanes.values()}
    calls = [c for d in lanes.values() for c in d.tool_calls]
    if len(scores) == 1 and calls and min(calls) == max(calls):
        correct, n = scores.pop()
        who = "" if len(lanes) == 1 else ("both " if len(lanes) == 2 else "all ")
        return f"{head}; {who}{correct}/{n} correct with {calls[0]} tool calls"
    parts = [f"{n} {lanes[n].correct}/{lanes[n].reps} correct ({_calls_text(lanes[n].tool_calls)})"
             for n in order]
    return f"{head}; " + ", ".join(parts)
