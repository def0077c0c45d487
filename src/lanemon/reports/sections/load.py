"""Open-loop load and concurrency-sweep sections: rates, latency percentiles, send lag; knees and the crossover."""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import err_text, num, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import load_table, sweep_finding, sweep_table
from lanemon.workloads.bench.load import length_lines, load_headlines


def load_section(load: dict[str, Any], lanes: list[str]) -> Section:
    """The load table is :func:`lanemon.reports.tables.load_table`, the model ``bench load`` prints."""
    cfg = (load.get("config") or {}).get("load") or {}
    what = f"{cfg.get('arrival', '?')} arrivals" + (f" at {cfg['rate']:g} req/s" if cfg.get("rate") else "")
    model = load_table(load, lanes)
    headers, rows, notes = model.labels(), model.text_rows(), list(model.notes)
    for lane in lanes:
        for i, r in enumerate((load["lanes"].get(lane) or {}).get("reps") or []):
            if r.get("error"):
                notes.append(f"{lane} rep {i + 1}: first error {err_text(r['error'])}")
    shown = {"lanes": {n: load["lanes"][n] for n in lanes if n in load["lanes"]}}
    headlines = load_headlines(shown)
    notes += length_lines(shown)
    if any(r.get("reasoning_tok_s") for n in lanes for r in (load["lanes"].get(n) or {}).get("reps") or []):
        for lane in lanes:
            for i, r in enumerate((load["lanes"].get(lane) or {}).get("reps") or []):
                if r.get("reasoning_tok_s"):
                    notes.append(f"{lane} rep {i + 1}: out tok/s counts reasoning: {tok(r.get('visible_tok_s'))} "
                                 f"visible + {tok(r['reasoning_tok_s'])} reasoning tok/s")
    if any((load["lanes"].get(n) or {}).get("client_behind") for n in lanes):
        notes.append("behind: lanemon sent some requests more than 10 ms late (p99); the lane was offered less "
                     "than the schedule says.")
    notes.append(schedule_note(load, lanes))
    warm = ", ".join(f"{k} {cfg[k]:g} s" for k in ("warmup", "cooldown") if cfg.get(k))
    caption = (f"Open-loop load, {what}. Served req/s and out tok/s: requests that completed and tokens "
               "(reasoning included) that arrived inside the measured window, whenever they were sent; latency "
               "percentiles over the window's completed requests" + (f" ({warm} excluded)" if warm else "") + ".")
    slo_held = [f"{n}: SLO {'held' if (load['lanes'].get(n) or {}).get('slo_held') else 'broke'}" for n in lanes
                if "slo_held" in (load["lanes"].get(n) or {})]
    return Section("load", "Open-loop load", caption, headers, rows, notes=notes,
                   summary=sentences(headlines + slo_held), model=model)


def sentences(parts: list[str]) -> str:
    """*parts* as sentences, each ending with one full stop (a headline already ends with its own)."""
    return " ".join(p if p.endswith(".") else p + "." for p in parts if p)


def schedule_note(load: dict[str, Any], lanes: list[str]) -> str:
    """Whether every lane was offered the same arrivals and lengths (workloads/bench/schedule.py)."""
    sch = load.get("schedule") or {}
    seed = sch.get("seed")
    how = f"seed {seed}, {'drawn for this run' if sch.get('seed_drawn') else 'given with --seed'}" if seed is not None \
        else "nothing in it was random"
    if sch.get("same_for_every_lane"):
        return (f"Schedule: every lane was offered the same schedule ({how}): the same arrival times and request "
                "lengths" if len(lanes) > 1 else f"Schedule: {how}; another run with this seed repeats it")
    return ("Schedule: each lane drew its own random schedule (a recording made before lanes shared one): their "
            "arrival times and lengths differ, so compare their scheduled req/s")


def sweep_section(sweep: dict[str, Any], lanes: list[str]) -> Section:
    """The sweep table is :func:`lanemon.reports.tables.sweep_table`, the model ``bench sweep`` prints: one row
    per level and lane, the knee's figure (span tok/s) and its gain per doubling, with goodput and whether the
    SLO held at each level (``--slo``); ``model`` lets the TUI fit it to its width (columns dropped whole, by
    rank, and named), as the load table."""
    model = sweep_table(sweep, lanes)
    gain = num(sweep.get("knee_gain")) or 0.1
    findings = [sweep_finding(sweep, n) for n in lanes if n in (sweep.get("lanes") or {})]
    x = sweep.get("crossover")
    if x:
        findings.append(f"{x['leader_after']} overtakes {x['leader_before']} between C{x['between'][0]} and "
                        f"C{x['between'][1]}")
    notes = [n for n in model.notes if not any(n.startswith(f"{lane}: ") for lane in lanes)
             and not n.startswith("crossover: ")] + ([model.legend] if model.legend else [])
    return Section("sweep", "Concurrency sweep: the knee", f"Concurrency raised until a doubling gains under "
                   f"{gain:.0%} of aggregate decode tok/s (span: total output tokens / first send → last end; the knee), "
                   f"an SLO breaks or errors appear.",
                   model.labels(), model.text_rows(), notes=notes, summary="; ".join(findings), model=model)
