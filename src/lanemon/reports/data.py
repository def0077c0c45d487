"""Reading an :class:`~lanemon.results.analysis.Analysis` (:func:`lanemon.reports.analyse.analyze`): lane order
and each bench's cells.

Pure accessors shared by the verdict, the sections and the CSV: which lanes a bench holds (in
header order), a lane's decode levels and prefill lengths, the decode crossover, race wins,
qeval runs and misses, the agreement pair, KL and gauntlet lanes, and the gauntlet's per-turn
TTFT/decode split.  They read the typed results (``lanemon.results``) by attribute.
"""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import num
from lanemon.results.agree import AgreeResult
from lanemon.results.analysis import Analysis, QevalLanes
from lanemon.results.decode import Crossover, DecodeCell, DecodeResult, LevelLead
from lanemon.results.prefill import PrefillCell, PrefillResult
from lanemon.results.gauntlet import GauntletResult
from lanemon.results.kl import KlResult
from lanemon.results.qeval import QevalResult
from lanemon.results.race import RaceResult
from lanemon.workloads.bench.decode import judge_levels
from lanemon.workloads.bench.decode import level_figure as ladder_level_figure


def bench_lanes(result: Any) -> Any:
    """A bench result's ``lanes``: a typed result's attribute (``lanemon.results``), a kl dict's key; {} for none."""
    lanes = result.get("lanes") if isinstance(result, dict) else getattr(result, "lanes", None)
    return lanes or {}


def lane_names(analysis: Analysis) -> list[str]:
    """Lanes in header order, then any that appear only in results."""
    names: list[str] = [lane.name for lane in analysis.environment.lanes if lane.name]
    for bench in ("decode", "prefill", "needles", "race", "agree", "kl", "gauntlet"):
        for name in bench_lanes(analysis.bench(bench)):
            if isinstance(name, str) and name not in names:
                names.append(name)
    for name in qeval_runs(analysis.qeval):
        if name not in names:
            names.append(name)
    return names


def present_lanes(analysis: Analysis, bench: str) -> list[str]:
    lanes = bench_lanes(analysis.bench(bench))
    return [n for n in lane_names(analysis) if n in lanes]


def decode_levels(decode: DecodeResult | None, lane: str) -> dict[int, DecodeCell]:
    """A lane's levels (:class:`DecodeCell`) by concurrency, in order ({} for a lane or a result there is not)."""
    d = decode.lanes.get(lane) if decode is not None else None
    out: dict[int, DecodeCell] = {}
    for k, v in (d.levels if d is not None else {}).items():
        try:
            key = int(float(k))
        except (TypeError, ValueError):
            continue
        out[key] = v
    return dict(sorted(out.items()))


def agg(cell: DecodeCell) -> float | None:
    """A level's first send -> last end aggregate (the span)."""
    return num(cell.aggregate_tok_s)


def steady(cell: DecodeCell) -> float | None:
    """A level's steady-state aggregate (tokens while all C streams ran / that window); None in recordings
    made before lanemon measured it."""
    return num(cell.steady_tok_s)


def level_figure(cell: DecodeCell) -> tuple[float | None, list[Any], str]:
    """:func:`lanemon.workloads.bench.decode.level_figure` of a level."""
    return ladder_level_figure(cell)


def level_value(cell: DecodeCell | None) -> float | None:
    """The figure a level is judged and drawn on: steady where the results have it, else the span
    (:func:`lanemon.workloads.bench.decode.level_figure`); None for no level."""
    return num(level_figure(cell)[0]) if cell is not None else None


def level_basis(cell: DecodeCell) -> tuple[float | None, list[Any], str]:
    """(figure, its reps, ``"steady"`` | ``"span"``) a level is judged on
    (:func:`lanemon.workloads.bench.decode.level_figure`)."""
    return level_figure(cell)


def has_steady(decode: DecodeResult, lanes: list[str]) -> bool:
    """True when any level of these lanes carries a steady-state figure (recordings since it was measured)."""
    return any(steady(c) is not None for n in lanes for c in decode_levels(decode, n).values())


def level_leads(decode: DecodeResult, lanes: list[str]) -> dict[int, LevelLead]:
    """Per level: the judgement the ladder, the crossover, the CLI table and the bench screen make
    (:func:`lanemon.workloads.bench.decode.level_leads`: steady figure, else span; the shared noise band;
    ``leader`` a lane, ``"tie"`` inside the band, None when a cell ran while lanemon was starved).

    With more than two lanes the level's two best figures are judged.  Each entry also has ``ratio``
    (best / runner-up) and ``pair`` (the two lanes judged)."""
    return judge_levels({n: decode.lanes[n] for n in lanes if n in decode.lanes}, lanes)


def crossover(decode: DecodeResult, lanes: list[str]) -> Crossover | None:
    """Where leadership changes between levels: the results' own ``crossover`` (None when it never changes)."""
    c = decode.crossover
    return c if c is not None and c.between else None


def first_level(decode: DecodeResult, lane: str) -> tuple[int, DecodeCell] | None:
    levels = decode_levels(decode, lane)
    if not levels:
        return None
    lvl = 1 if 1 in levels else min(levels)
    return lvl, levels[lvl]


def prefill_cells(prefill: PrefillResult | None, lane: str) -> dict[str, PrefillCell]:
    """A lane's prompt lengths (:class:`PrefillCell`) by their key ({} for a lane or a result there is not)."""
    d = prefill.lanes.get(lane) if prefill is not None else None
    return dict(d.lengths) if d is not None else {}


def race_wins(race: RaceResult) -> dict[str, int]:
    """Races won per lane (the result's own ``wins``), in the order of their first win; lanes that won none left
    out."""
    first = dict.fromkeys(r.winner for r in race.races if r.winner)
    return {name: race.lanes[name].wins for name in first if name in race.lanes}


def qeval_runs(q: Any) -> dict[str, QevalResult]:
    """Lane -> ``qeval run`` result, from the analysis's ``qeval`` (:class:`QevalLanes`, or its per-lane dict
    ``{"bench", "lanes", "compare"}``) or one bare run."""
    if isinstance(q, QevalLanes):
        return dict(q.lanes)
    if isinstance(q, QevalResult):
        return {str(q.lane or "?"): q}
    if not isinstance(q, dict):
        return {}
    return {n: r for n, r in (q.get("lanes") or {}).items() if isinstance(r, QevalResult)}


def qeval_misses(run: QevalResult) -> list[str]:
    return [tid for tid, t in run.tasks.items() if not t.passed]


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
