"""Reading an analysis dict (:func:`lanemon.reports.analyse.analyze`): lane order and each bench's cells.

Pure accessors shared by the verdict, the sections and the CSV: which lanes a bench holds (in
header order), a lane's decode levels and prefill lengths, the decode crossover, race wins,
qeval runs and misses, the agreement pair, KL and gauntlet lanes, and the gauntlet's per-turn
TTFT/decode split.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lanemon.measure.stats import median
from lanemon.reports.format import num
from lanemon.results.agree import AgreeResult
from lanemon.results.common import to_json_obj
from lanemon.results.decode import LaneLevels, LevelView
from lanemon.results.gauntlet import GauntletLane, GauntletResult
from lanemon.results.kl import KlResult
from lanemon.results.qeval import QevalResult
from lanemon.results.race import RaceResult
from lanemon.workloads.bench.decode import crossover as ladder_crossover
from lanemon.workloads.bench.decode import judge_levels
from lanemon.workloads.bench.decode import level_figure as ladder_level_figure


def bench_lanes(result: Any) -> Any:
    """A bench result's ``lanes``: a typed result's attribute (``lanemon.results``) or a dict's key; {} for none."""
    lanes = result.get("lanes") if isinstance(result, dict) else getattr(result, "lanes", None)
    return lanes or {}


def lane_names(analysis: dict[str, Any]) -> list[str]:
    """Lanes in header order, then any that appear only in results."""
    names: list[str] = [lane["name"] for lane in analysis.get("environment", {}).get("lanes", []) if lane.get("name")]
    for bench in ("decode", "prefill", "needles", "race", "agree", "kl", "gauntlet"):
        for name in bench_lanes(analysis.get(bench)):
            if isinstance(name, str) and name not in names:
                names.append(name)
    for name in qeval_runs(analysis.get("qeval")):
        if name not in names:
            names.append(name)
    return names


def present_lanes(analysis: dict[str, Any], bench: str) -> list[str]:
    lanes = bench_lanes(analysis.get(bench))
    return [n for n in lane_names(analysis) if n in lanes]


def decode_levels(decode: dict[str, Any], lane: str) -> dict[int, dict[str, Any]]:
    levels = ((decode.get("lanes") or {}).get(lane) or {}).get("levels") or {}
    out = {}
    for k, v in levels.items():
        try:
            out[int(float(k))] = v or {}
        except (TypeError, ValueError):
            continue
    return dict(sorted(out.items()))


def agg(cell: dict[str, Any]) -> float | None:
    """A level's first send -> last end aggregate (the span)."""
    return num(cell.get("aggregate_tok_s"))


def steady(cell: dict[str, Any]) -> float | None:
    """A level's steady-state aggregate (tokens while all C streams ran / that window); None in recordings
    made before lanemon measured it."""
    return num(cell.get("steady_tok_s"))


def _view(cell: Any) -> LevelView:
    """A level's JSON as the ladder's judgement reads it (typed since issue 37; an unreadable cell: no figure)."""
    try:
        return msgspec.convert(cell or {}, LevelView, strict=False)
    except msgspec.ValidationError:
        return LevelView()


def level_figure(cell: dict[str, Any]) -> tuple[float | None, list[Any], str]:
    """:func:`lanemon.workloads.bench.decode.level_figure` of a level's JSON."""
    return ladder_level_figure(_view(cell))


def level_value(cell: dict[str, Any]) -> float | None:
    """The figure a level is judged and drawn on: steady where the results have it, else the span
    (:func:`lanemon.workloads.bench.decode.level_figure`)."""
    return num(level_figure(cell or {})[0])


def has_steady(decode: dict[str, Any], lanes: list[str]) -> bool:
    """True when any level of these lanes carries a steady-state figure (recordings since it was measured)."""
    return any(steady(c) is not None for n in lanes for c in decode_levels(decode, n).values())


def _ladder(decode: dict[str, Any], lanes: list[str]) -> dict[str, LaneLevels]:
    """The lanes' levels as the ladder's judgement reads them."""
    return {n: LaneLevels(levels={str(k): _view(c) for k, c in decode_levels(decode, n).items()}) for n in lanes}


def level_leads(decode: dict[str, Any], lanes: list[str]) -> dict[int, dict[str, Any]]:
    """Per level: the judgement the ladder, the crossover, the CLI table and the bench screen make
    (:func:`lanemon.workloads.bench.decode.level_leads`: steady figure, else span; the shared noise band;
    ``leader`` a lane, ``"tie"`` inside the band, None when a cell ran while lanemon was starved).

    With more than two lanes the level's two best figures are judged.  Each entry also has ``ratio``
    (best / runner-up) and ``pair`` (the two lanes judged)."""
    return {lvl: to_json_obj(x) for lvl, x in judge_levels(_ladder(decode, lanes), lanes).items()}


def crossover(decode: dict[str, Any], lanes: list[str]) -> dict[str, Any] | None:
    if "crossover" in decode:
        c = decode.get("crossover")
        return c if isinstance(c, dict) and c.get("between") else None
    # older/hand-made dicts without the key: the ladder's own rule (steady figure, else span, noise band)
    if len(lanes) < 2:
        return None
    x = ladder_crossover(_ladder(decode, lanes), lanes)
    return to_json_obj(x) if x is not None else None


def first_level(decode: dict[str, Any], lane: str) -> tuple[int, dict[str, Any]] | None:
    levels = decode_levels(decode, lane)
    if not levels:
        return None
    lvl = 1 if 1 in levels else min(levels)
    return lvl, levels[lvl]


def prefill_cells(prefill: dict[str, Any], lane: str) -> dict[str, dict[str, Any]]:
    return ((prefill.get("lanes") or {}).get(lane) or {}).get("lengths") or {}


def race_wins(race: RaceResult) -> dict[str, int]:
    """Races won per lane (the result's own ``wins``), in the order of their first win; lanes that won none left
    out."""
    first = dict.fromkeys(r.winner for r in race.races if r.winner)
    return {name: race.lanes[name].wins for name in first if name in race.lanes}


def qeval_runs(q: Any) -> dict[str, QevalResult]:
    """Lane -> ``qeval run`` result, from ``analysis["qeval"]`` (per-lane: ``{"bench", "lanes", "compare"}``) or
    one bare run."""
    if isinstance(q, QevalResult):
        return {str(q.lane or "?"): q}
    if not isinstance(q, dict):
        return {}
    return {n: r for n, r in (q.get("lanes") or {}).items() if isinstance(r, QevalResult)}


def qeval_misses(run: QevalResult) -> list[str]:
    return [tid for tid, t in run.tasks.items() if not t.passed]


def qeval_rate(run: QevalResult) -> float | None:
    """Median E2E reply rate (completion tokens / seconds) over the tasks."""
    rates = [c / s for t in run.tasks.values() if (c := num(t.completion_tokens)) and (s := num(t.seconds))]
    return median(rates)


def agree_pair(ag: AgreeResult) -> tuple[str, str]:
    lanes = list(ag.lanes) + ["A", "B"]
    return str(lanes[0]), str(lanes[1])


def kl_lanes(kl: KlResult, order: list[str]) -> list[str]:
    lanes = kl.lanes
    return [n for n in order if n in lanes] + [n for n in lanes if n not in order]


def gauntlet_lanes(g: GauntletResult | None, order: list[str]) -> list[str]:
    """The lanes of the gauntlet result that finished a rep, in ``order`` then the rest."""
    lanes = [n for n, d in g.lanes.items() if d.reps] if isinstance(g, GauntletResult) else []
    return [n for n in order if n in lanes] + [n for n in lanes if n not in order]


def turn_split(d: GauntletLane) -> dict[str, Any]:
    """A lane's TTFT / decode seconds: median over reps of the per-rep sums, and per turn (median over reps)."""
    ttft_sums, dec_sums = [], []
    per_turn: dict[int, dict[str, list[float]]] = {}
    for turns in d.turns:
        ttft_sums.append(sum(num(t.ttft_s) or 0.0 for t in turns))
        dec_sums.append(sum(num(t.decode_s) or 0.0 for t in turns))
        for t in turns:
            cell = per_turn.setdefault(t.turn, {"ttft": [], "decode": [], "prompt": [], "out": [], "tool": []})
            for key, value in (("ttft", t.ttft_s), ("decode", t.decode_s), ("prompt", t.prompt_tokens),
                               ("out", t.completion_tokens)):
                if num(value) is not None:
                    cell[key].append(num(value))
            cell["tool"].append(bool(t.calls))
    turns = {k: {"ttft": median(v["ttft"]), "decode": median(v["decode"]), "prompt": median(v["prompt"]),
                 "out": median(v["out"]), "tool": any(v["tool"])} for k, v in sorted(per_turn.items())}
    return {"ttft": median(ttft_sums), "decode": median(dec_sums), "turns": turns}
