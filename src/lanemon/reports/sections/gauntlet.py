"""Agent gauntlet sections: correct reps and wall time per lane, and where each turn's time goes."""

from __future__ import annotations

from collections.abc import Hashable

from lanemon.reports.charts import Chart
from lanemon.reports.data import gauntlet_lanes, turn_split
from lanemon.reports.format import num, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.verdict import gauntlet_why
from lanemon.results.gauntlet import GauntletResult


def gauntlet_sections(g: GauntletResult, order: list[str]) -> list[Section]:
    lanes = gauntlet_lanes(g, order)
    d = g.lanes
    cfg = g.config
    headers = ["Lane", "correct", "tool calls", "median wall", "wall per rep", "malformed calls", "stopped"]
    rows = []
    for n in lanes:
        x = d[n]
        calls = x.tool_calls
        rows.append([n, f"{x.correct}/{x.reps}",
                     (str(calls[0]) if calls and min(calls) == max(calls) else ", ".join(map(str, calls))) or "—",
                     secs(x.median_wall_s), ", ".join(secs(w) for w in x.wall_s),
                     str(sum(x.malformed_calls)),
                     ", ".join(f"{k} ×{v}" if v > 1 else str(k) for k, v in _counts(x.stopped).items())])
    nreps = max(len(d[n].wall_s) for n in lanes)
    chart = Chart("bars", "Wall time per rep", "rep (a fresh agent session each)", "wall time (s)",
                  [f"rep {i + 1}" for i in range(nreps)],
                  {n: [(num(w[i]) if i < len(w) else None) for i in range(nreps)]
                   for n in lanes for w in [d[n].wall_s]})
    hops = "?" if cfg.hops is None else cfg.hops
    caption = (f"A fresh agent session per rep: a {cfg.system_prompt_tokens:,}-token system prompt, one "
               f"read_file tool and a chain of {hops} files, each naming the next; correct = the final "
               f"answer holds the secret. Wall = rep start → final answer." if isinstance(
                   cfg.system_prompt_tokens, int) else
               f"A fresh agent session per rep, one read_file tool, a chain of {hops} files; "
               f"correct = the final answer holds the secret.")
    notes = []
    ts = num(cfg.time_scale)
    if ts and ts != 1:  # at time scale 1 the simulated seconds are the measured ones: nothing to say
        notes.append(f"Times as measured on simulated lanes run at time scale {ts:g} (--demo): divide by {ts:g} "
                     f"for the simulated lanes' own seconds.")
    summary = g.summary + "."
    out = [Section("gauntlet", "Agent gauntlet", caption, headers, rows, chart, summary=summary, notes=notes)]

    split = {n: turn_split(d[n]) for n in lanes}
    turn_ids = sorted(set().union(*(set(split[n].turns) for n in lanes)))
    if turn_ids:
        headers = ["Turn"] + [h for n in lanes for h in (f"{n} prompt tok", f"{n} TTFT", f"{n} decode")]
        rows = []
        for t in turn_ids:
            row = [str(t)]
            for n in lanes:
                c = split[n].turns.get(t)
                row += [tok(c.prompt), secs(c.ttft), secs(c.decode)] if c is not None else [tok(None), secs(None),
                                                                                              secs(None)]
            rows.append(row)
        total = ["all turns"]
        for n in lanes:
            total += ["", secs(split[n].ttft), secs(split[n].decode)]
        rows.append(total)
        x = [str(t) for t in turn_ids]
        chart = Chart("bars", "Per-turn request time: TTFT (prefill of the transcript) + decode", "turn",
                      "seconds per request (s)", x,
                      {n: [c.ttft if (c := split[n].turns.get(t)) is not None else None for t in turn_ids]
                       for n in lanes},
                      stack={n: [c.decode if (c := split[n].turns.get(t)) is not None else None for t in turn_ids]
                             for n in lanes},
                      stack_label=("TTFT (solid)", "decode (light)"))
        why, _ = gauntlet_why(g, lanes)
        reps = {len(d[n].turns) for n in lanes}
        over = "one rep" if reps == {1} else "median over reps, per turn; the totals are the median of the per-rep sums"
        out.append(Section("gauntlet-turns", "Agent gauntlet: where each turn's time goes",
                           f"Per request: TTFT = sent → first token-carrying chunk (the prefill of the whole "
                           f"transcript), decode = the rest of the request ({over}).", headers, rows, chart,
                           summary=why, notes=list(notes)))
    return out


def _counts(xs: list[Hashable]) -> dict[Hashable, int]:
    out: dict[Hashable, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out
