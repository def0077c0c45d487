"""Efficiency: output tokens per joule and USD per 1M output tokens against concurrency, per lane, and what the
engine did in each cell (run-scoped counters).  From the energy and ``engine_counters`` blocks the analysis
attaches to decode cells (measure/energy.py, measure/counters.py; docs/GPU.md)."""

from __future__ import annotations

from typing import Any

from lanemon.measure.catalogue import NOT_MEASURED, label
from lanemon.reports.charts import Chart
from lanemon.reports.data import decode_levels, level_value
from lanemon.reports.format import num
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import plus_minus, power_uncertainty
from lanemon.results.common import UNSET, UnsetType
from lanemon.results.counters import EngineCounters
from lanemon.results.decode import DecodeCell, DecodeResult
from lanemon.results.load import LoadResult
from lanemon.workloads.bench.load import reps_of


def _f(v: Any, digits: int, unit: str = "") -> str:
    x = num(v)
    return "—" if x is None else f"{x:.{digits}f}{unit}"


def best_levels(per: dict[int, DecodeCell]) -> tuple[int | None, int | None]:
    """(the most efficient level by tokens per joule, the fastest level by the ladder's figure), each None
    when no level has it; starved (unreliable) cells are not judged, and a level is the most efficient only when
    its tokens per joule less its uncertainty exceed every other level's plus theirs (else None: :func:`close`)."""
    eff = [(num(c.tokens_per_joule), lvl) for lvl, c in per.items() if not c.unreliable]
    fast = [(level_value(c), lvl) for lvl, c in per.items() if not c.unreliable]
    eff = [x for x in eff if x[0] is not None]
    fast = [x for x in fast if x[0] is not None]
    best = max(eff)[1] if eff else None
    if best is not None and (close(per, best) or unknown(per)):
        best = None
    return best, (max(fast)[1] if fast else None)


def _band(c: DecodeCell) -> tuple[float, float]:
    x, u = num(c.tokens_per_joule) or 0.0, num(c.tokens_per_joule_uncertainty) or 0.0
    return x - u, x + u


def unknown(per: dict[int, DecodeCell]) -> list[int]:
    """The judged (not starved) levels without a tokens-per-joule figure (withheld: the exporter's interval against
    the cell): none is called the most efficient while one of them might be."""
    return [lvl for lvl, c in sorted(per.items()) if not c.unreliable and num(c.tokens_per_joule) is None]


def close(per: dict[int, DecodeCell], best: int) -> list[int]:
    """The judged levels whose tokens per joule is within the uncertainty of *best*'s."""
    lo = _band(per[best])[0]
    return [lvl for lvl, c in sorted(per.items()) if lvl != best and not c.unreliable
            and num(c.tokens_per_joule) is not None and _band(c)[1] >= lo]


def efficiency_section(decode: DecodeResult, lanes: list[str]) -> Section | None:
    """Tokens per joule, mean GPU power and USD per 1M output tokens by level; None when no cell has any."""
    per = {n: decode_levels(decode, n) for n in lanes}
    if not any(num(c.energy_j) is not None or num(c.usd_per_1m_output_tokens) is not None
               or num(c.energy_update_s) is not None for p in per.values() for c in p.values()):
        return None  # (energy_update_s: the lane has telemetry, its figures withheld -- said in the notes)
    levels = sorted(set().union(*(set(p) for p in per.values())))
    headers = ["Concurrency"] + [h for n in lanes for h in (f"{n} tok/J", f"{n} GPU W", f"{n} $/1M tok")]
    rows = []
    for lvl in levels:
        row = [f"C{lvl}"]
        for n in lanes:
            c = per[n].get(lvl)
            if c is None:  # this lane did not run the level
                row += [plus_minus(None, None, 2), plus_minus(None, power_uncertainty(None, None), 1), _f(None, 2)]
                continue
            row += [plus_minus(c.tokens_per_joule, c.tokens_per_joule_uncertainty, 2),
                    plus_minus(c.gpu_power_w_mean, power_uncertainty(c.energy_uncertainty_j, c.energy_window_s), 1),
                    _f(c.usd_per_1m_output_tokens, 2)]
        rows.append(row)
    findings = []
    withheld_notes: dict[str, None] = {}
    for n in lanes:
        best, fast = best_levels(per[n])
        starved = [f"C{lvl}" for lvl, c in sorted(per[n].items()) if c.unreliable]
        skip = f" ({', '.join(starved)} not judged: lanemon was starved)" if starved else ""
        judged = [lvl for lvl, c in per[n].items() if not c.unreliable and num(c.tokens_per_joule) is not None]
        missing = unknown(per[n])
        if best is None and judged and missing:
            findings.append(f"{n}: no level is called the most efficient: "
                            f"{', '.join(f'C{lvl}' for lvl in missing)} "
                            f"{'has' if len(missing) == 1 else 'have'} no energy figure (withheld; see the notes){skip}.")
        elif best is None and judged and len(judged) > 1:
            top = max(judged, key=lambda lvl: num(per[n][lvl].tokens_per_joule) or 0.0)
            near = ", ".join(f"C{lvl}" for lvl in close(per[n], top))
            c = per[n][top]
            findings.append(f"{n}: no level is clearly the most efficient: C{top} "
                            f"({plus_minus(c.tokens_per_joule, c.tokens_per_joule_uncertainty, 2)} "
                            f"tok/J) and {near} are within their uncertainty{skip}.")
        elif best is None and any(num(c.tokens_per_joule) is not None for c in per[n].values()) and not judged:
            findings.append(f"{n}: no level judged (lanemon was starved in every one).")
        elif best is None and not judged:
            reason = next((c.energy_reason for c in per[n].values() if c.energy_reason), None)
            findings.append(f"{n}: no energy figure ({reason or 'no GPU telemetry'}).")
        elif best == fast:
            findings.append(f"{n}: C{best} is both the fastest and the most efficient level "
                            f"({_f(per[n][best].tokens_per_joule, 2)} tok/J){skip}.")
        else:
            findings.append(f"{n}: most efficient at C{best} ({_f(per[n][best].tokens_per_joule, 2)} tok/J), "
                            f"fastest at C{fast} ({_f(level_value(per[n][fast]), 1)} tok/s, "
                            f"{_f(per[n][fast].tokens_per_joule, 2)} tok/J){skip}.")
        withheld = {c.energy_reason for c in per[n].values() if num(c.energy_j) is None
                    and num(c.energy_update_s) is not None and c.energy_reason}
        withheld_notes.update((f"{n}: energy withheld: {why}", None) for why in sorted(withheld))
    chart = Chart("line", "Output tokens per joule vs concurrency", "concurrent streams (C)", "output tokens per joule",
                  [f"C{lvl}" for lvl in levels],
                  {n: [num(c.tokens_per_joule) if (c := per[n].get(lvl)) is not None else None for lvl in levels]
                   for n in lanes},
                  gaps=True)
    notes = ["Energy is the GPUs' energy counter between each cell's start and end (else their power integrated "
             "over the cell); tok/J = output tokens of the completed requests / that energy; $/1M tok = the lane's "
             "cost_per_hour × the cell's wall time / its output tokens × 10⁶. ± is the uncertainty from the "
             "exporter's sampling (its update interval against the cell's length); a figure known no better than "
             "10 % is withheld, and a level is the most efficient only beyond it (docs/GPU.md). Simulated lanes at "
             "--time-scale X use X of the real time at the same power: their tok/J is 1/X of the real-time figure."]
    notes += list(withheld_notes)
    scale = decode.config.time_scale
    if scale is not UNSET and scale not in (None, 1, 1.0):
        notes.append(f"This run used --time-scale {scale}: joules are simulated.")
    more = []
    counters = counter_rows([(n, f"C{lvl}", c.engine_counters) for n in lanes for lvl in levels
                             if (c := per[n].get(lvl)) is not None])
    if counters:
        more.append(("What the engine did in each cell (its /metrics counters between the cell's edges)",
                     ["Lane", "Concurrency"] + COUNTER_HEADERS, counters))
        notes += counter_notes([(n, f"C{lvl}", c.engine_counters) for n in lanes for lvl in levels
                                if (c := per[n].get(lvl)) is not None])
    return Section("efficiency", "Efficiency: tokens per joule and cost vs concurrency",
                   "Per cell; — where a lane has no GPU telemetry or no cost_per_hour.", headers, rows, chart,
                   notes=notes, summary=" ".join(findings), more=more)


def counter_rows(items: list[tuple[str, str, EngineCounters | None | UnsetType]]) -> list[list[str]]:
    """One row per (lane, where, engine_counters) that has counters, one figure per column (:data:`COUNTERS`, the
    catalogue's): engine requests, prefix hit, preemptions, spec acceptance, rank max/mean, restarts.  What is
    no single figure (each rank's tokens, the LoRA adapters, a withheld run) is in :func:`counter_notes`."""
    rows = []
    for n, where, c in items:
        if not isinstance(c, EngineCounters):
            continue
        rows.append([n, where, *(_counter(_set(getattr(c, key)), key) for key in COUNTERS)])
    return rows


def _counter(v: Any, key: str) -> str:
    if num(v) is None:
        return NOT_MEASURED
    if key in ("prefix_hit_rate", "spec_acceptance_rate"):
        return f"{v * 100:.0f}%"
    return f"{v:.2f}" if key == "rank_imbalance" else f"{v:g}"


def counter_notes(items: list[tuple[str, str, EngineCounters | None | UnsetType]]) -> list[str]:
    """What the counters table cannot show as one figure per column: each rank's generated tokens, the LoRA
    adapters running at the end, and why a run's counters are withheld (the engine restarted during it)."""
    notes = []
    for n, where, c in items:
        if not isinstance(c, EngineCounters):
            continue
        if _set(c.withheld):
            notes.append(f"{n} {where}: counters withheld ({c.withheld}): not this run's")
        ranks = _set(c.ranks) or {}
        if ranks:
            notes.append(f"{n} {where}: generated tokens by rank: "
                         + ", ".join(f"{r}: {_set(d.generation_tokens)}" for r, d in list(ranks.items())[:8]))
        if _set(c.lora_adapters):
            notes.append(f"{n} {where}: LoRA adapters: {', '.join(c.lora_adapters)}")
    return notes


def _set(x: Any) -> Any:
    """A counter the engine may not export (unset): None for reading."""
    return None if x is UNSET else x


COUNTERS = {"requests": "engine_requests", "prefix_hit_rate": "prefix_hit_rate", "preemptions": "preemptions",
            "spec_acceptance_rate": "spec_acceptance_rate", "rank_imbalance": "rank_imbalance",
            "restarts": "engine_restarts"}
"""The counters table's columns: a field of EngineCounters (``engine_counters``) -> its catalogue entry."""
COUNTER_HEADERS = [label(m) for m in COUNTERS.values()]


def load_efficiency_section(load: LoadResult, lanes: list[str]) -> Section | None:
    """``bench load``: tokens per joule, mean GPU power, energy and USD per 1M output tokens of every rep (over its
    measured window), and what the engine did in each rep (its counters between the rep's edges); None when
    no rep has any of them."""
    reps = [(n, i, r) for n, rs in reps_of(load, lanes).items() for i, r in enumerate(rs)]
    multi = any(i for _, i, _ in reps)
    has = lambda r: num(r.energy_j) is not None or num(r.usd_per_1m_output_tokens) is not None  # noqa: E731
    if not any(has(r) or isinstance(r.engine_counters, EngineCounters) for _, _, r in reps):
        return None
    where = lambda i: str(i + 1)  # noqa: E731
    rows = [[n, where(i), _f(r.offered_rate_rps or r.scheduled_rate_rps, 2), _f(r.output_tok_s, 0),
             plus_minus(r.tokens_per_joule, r.tokens_per_joule_uncertainty, 2),
             plus_minus(r.gpu_power_w_mean, power_uncertainty(r.energy_uncertainty_j, r.energy_window_s), 1),
             plus_minus(r.energy_j, r.energy_uncertainty_j, 1), _f(r.usd_per_1m_output_tokens, 2),
             str(r.energy_source or r.energy_reason or "—")] for n, i, r in reps if has(r)]
    counters = counter_rows([(n, where(i), r.engine_counters) for n, i, r in reps])
    more = [("What the engine did in each rep (its /metrics counters between the rep's edges)",
             ["Lane", "rep"] + COUNTER_HEADERS, counters)] if counters else []
    cost_missing = sorted({n for n, _, r in reps if has(r) and num(r.usd_per_1m_output_tokens) is None})
    notes = ["Energy over each rep's measured window (warm-up and cool-down excluded): the GPUs' energy counter "
             "between its edges, else their power integrated; tok/J = output tokens served in the window / that "
             "energy; $/1M tok = cost_per_hour × the window / those tokens × 10⁶. The engine's counters span the "
             "whole rep (its edges are where /metrics is read)."]
    notes += counter_notes([(n, where(i), r.engine_counters) for n, i, r in reps])
    if cost_missing:
        notes.append(f"No $/1M tok for {', '.join(cost_missing)}: no cost_per_hour (lanes.toml or --cost "
                     "NAME=USD_PER_HOUR).")
    scale = load.config.time_scale
    scaled = scale not in (None, 1, 1.0) and bool(scale)
    if scaled:
        notes.append(f"This run used --time-scale {scale}: joules are simulated.")
    best = []
    for n in lanes:
        mine = [(num(r.tokens_per_joule), i) for m, i, r in reps if m == n]
        mine = [x for x in mine if x[0] is not None]
        if mine:
            tpj, i = max(mine)
            best.append(f"{n}: {tpj:.2f} tok/J" + (f" (rep {i + 1})" if multi else ""))
    headers = ["Lane", "rep", label("offered_rps"), label("served_tok_s"), label("tokens_per_joule"),
               label("gpu_power"), label("energy"), label("usd_per_1m"), "energy source"]  # catalogue labels
    caption = "Per rep; — where a lane has no GPU telemetry or no cost_per_hour."
    if not rows:  # one line, not a table of headers only
        why = sorted({str(r.energy_reason) for _, _, r in reps if r.energy_reason})
        headers, notes = [], notes[-1:] if scaled else []
        caption = (f"No energy or cost figure for any rep ({'; '.join(why) or 'no GPU telemetry'}; no cost_per_hour): "
                   "give a lane --telemetry NAME=URL and --cost NAME=USD_PER_HOUR (docs/GPU.md).")
    return Section("efficiency-load", "Efficiency under open-loop load: tokens per joule and cost", caption,
                   headers, rows, notes=notes, summary="; ".join(best), more=more)
