"""Open-loop load and concurrency-sweep sections: rates, latency percentiles, send lag; knees and the crossover."""

from __future__ import annotations

from lanemon.reports.format import err_text, num, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import crossover_text, load_table, sweep_finding, sweep_table
from lanemon.results.common import LoadConfig
from lanemon.results.load import LoadResult
from lanemon.results.sweep import SweepResult
from lanemon.workloads.bench.load import length_lines, load_headlines, reps_of


def load_section(load: LoadResult, lanes: list[str]) -> Section:
    """The load table is :func:`lanemon.reports.tables.load_table`, the model ``bench load`` prints."""
    cfg = load.config.load or LoadConfig()
    what = f"{cfg.arrival or '?'} arrivals" + (f" at {cfg.rate:g} req/s" if cfg.rate else "")
    model = load_table(load, lanes)
    headers, rows, notes = model.labels(), model.text_rows(), list(model.notes)
    shown = reps_of(load, lanes)
    for lane, reps in shown.items():
        for i, r in enumerate(reps):
            if r.error:
                notes.append(f"{lane} rep {i + 1}: first error {err_text(r.error)}")
    headlines = load_headlines(shown)
    notes += length_lines(shown)
    for lane, reps in shown.items():
        for i, r in enumerate(reps):
            if r.reasoning_tok_s:
                notes.append(f"{lane} rep {i + 1}: out tok/s counts reasoning: {tok(r.visible_tok_s)} "
                             f"visible + {tok(r.reasoning_tok_s)} reasoning tok/s")
    if any(load.lanes[n].client_behind for n in shown):
        notes.append("behind: lanemon sent some requests more than 10 ms late (p99); the lane was offered less "
                     "than the schedule says.")
    notes.append(schedule_note(load, lanes))
    warm = ", ".join(f"{k} {v:g} s" for k, v in (("warmup", cfg.warmup), ("cooldown", cfg.cooldown)) if v)
    caption = (f"Open-loop load, {what}. Served req/s and out tok/s: requests that completed and tokens "
               "(reasoning included) that arrived inside the measured window, whenever they were sent; latency "
               "percentiles over the window's completed requests" + (f" ({warm} excluded)" if warm else "") + ".")
    slo_held = [f"{n}: SLO {'held' if load.lanes[n].slo_held else 'broke'}" for n in shown
                if load.lanes[n].slo_held is not None]
    return Section("load", "Open-loop load", caption, headers, rows, notes=notes,
                   summary=sentences(headlines + slo_held), model=model)


def sentences(parts: list[str]) -> str:
    """*parts* as sentences, each ending with one full stop (a headline already ends with its own)."""
    return " ".join(p if p.endswith(".") else p + "." for p in parts if p)


def schedule_note(load: LoadResult, lanes: list[str]) -> str:
    """Whether every lane was offered the same arrivals and lengths (workloads/bench/schedule.py)."""
    sch = load.schedule
    how = (f"seed {sch.seed}, {'drawn for this run' if sch.seed_drawn else 'given with --seed'}"
           if sch.seed is not None else "nothing in it was random")
    if sch.same_for_every_lane:
        return (f"Schedule: every lane was offered the same schedule ({how}): the same arrival times and request "
                "lengths" if len(lanes) > 1 else f"Schedule: {how}; another run with this seed repeats it")
    return ("Schedule: each lane drew its own random schedule (a recording made before lanes shared one): their "
            "arrival times and lengths differ, so compare their scheduled req/s")


def sweep_section(sweep: SweepResult, lanes: list[str]) -> Section:
    """The sweep table is :func:`lanemon.reports.tables.sweep_table`, the model ``bench sweep`` prints: one row
    per level and lane, the knee's figure (span tok/s) and its gain per doubling, with goodput and whether the
    SLO held at each level (``--slo``); ``model`` lets the TUI fit it to its width (columns dropped whole, by
    rank, and named), as the load table."""
    model = sweep_table(sweep, lanes)
    gain = num(sweep.knee_gain) or 0.1
    findings = [sweep_finding(sweep, n) for n in lanes if n in sweep.lanes]
    if sweep.crossover:
        findings.append(crossover_text(sweep.crossover))
    notes = [n for n in model.notes if not any(n.startswith(f"{lane}: ") for lane in lanes)
             and not n.startswith("crossover: ")] + ([model.legend] if model.legend else [])
    return Section("sweep", "Concurrency sweep: the knee", f"Concurrency raised until a doubling gains under "
                   f"{gain:.0%} of aggregate decode tok/s (span: total output tokens / first send → last end; the knee), "
                   f"an SLO breaks or errors appear.",
                   model.labels(), model.text_rows(), notes=notes, summary="; ".join(findings), model=model)
