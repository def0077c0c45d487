"""Agent gauntlet sections: correct reps and wall time per lane, and where each turn's time goes."""

from __future__ import annotations

from lanemon.measure.catalogue import label
from lanemon.reports.charts import Chart
from lanemon.reports.data import gauntlet_lanes
from lanemon.reports.format import num, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.verdict import gauntlet_why
from lanemon.results.gauntlet import GauntletLane, GauntletResult

REP_FIGURES = ("gauntlet_tool_calls", "gauntlet_malformed", "gauntlet_turns", "gauntlet_wall", "gauntlet_ttft_sum",
               "gauntlet_decode_sum", "gauntlet_first_prompt", "gauntlet_last_prompt")
"""The per-rep figures (measure/catalogue.py) of the rep tables, the report's and ``gauntlet --headless``'s."""

REP_LABELS = ["rep", "ok", *(label(m) for m in REP_FIGURES), "end"]


def rep_cells(x: GauntletLane, r: int) -> list[str]:
    """Rep ``r`` of lane ``x`` under :data:`REP_LABELS`: the result's per-rep figures, as the report writes them."""
    flags = x.correct_per_rep
    return [str(r + 1), "✓" if r < len(flags) and flags[r] else "✗", str(x.tool_calls[r]), str(x.malformed_calls[r]),
            str(x.turn_count[r]), secs(x.wall_s[r]), secs(x.ttft_sum_s[r]), secs(x.decode_sum_s[r]),
            tok(x.first_prompt_tokens[r]), tok(x.last_prompt_tokens[r]), str(x.stopped[r])]


def gauntlet_sections(g: GauntletResult, order: list[str]) -> list[Section]:
    lanes = gauntlet_lanes(g, order)
    d = g.lanes
    cfg = g.config
    headers = ["Lane", *(label(m) for m in ("gauntlet_correct", "gauntlet_reps", "gauntlet_median_wall"))]
    rows = [[n, str(d[n].correct), str(d[n].reps), secs(d[n].median_wall_s)] for n in lanes]
    per_rep = [[n if r == 0 else "", *rep_cells(d[n], r)] for n in lanes for r in range(d[n].reps)]
    more = [("Agent gauntlet: each rep", ["Lane", *REP_LABELS], per_rep)]
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
    out = [Section("gauntlet", "Agent gauntlet", caption, headers, rows, chart, summary=summary, notes=notes,
                   more=more)]

    by_turn = {n: {c.turn: c for c in d[n].by_turn} for n in lanes}
    turn_ids = sorted(set().union(*(set(by_turn[n]) for n in lanes)))
    if turn_ids:
        headers = ["Turn"] + [f"{n} {label(m)}" for n in lanes for m in ("prompt_tokens", "ttft", "gauntlet_decode")]
        rows = []
        for t in turn_ids:
            row = [str(t)]
            for n in lanes:
                c = by_turn[n].get(t)
                row += [tok(c.prompt_tokens), secs(c.ttft_s), secs(c.decode_s)] if c is not None else [
                    tok(None), secs(None), secs(None)]
            rows.append(row)
        x = [str(t) for t in turn_ids]
        chart = Chart("bars", "Per-turn request time: TTFT (prefill of the transcript) + decode", "turn",
                      "seconds per request (s)", x,
                      {n: [num(c.ttft_s) if (c := by_turn[n].get(t)) is not None else None for t in turn_ids]
                       for n in lanes},
                      stack={n: [num(c.decode_s) if (c := by_turn[n].get(t)) is not None else None for t in turn_ids]
                             for n in lanes},
                      stack_label=("TTFT (solid)", "decode (light)"))
        why, _ = gauntlet_why(g, lanes)
        reps = {len(d[n].turns) for n in lanes}
        over = "one rep" if reps == {1} else "median over reps, per turn; each rep's sums are in the rep table"
        out.append(Section("gauntlet-turns", "Agent gauntlet: where each turn's time goes",
                           f"Per request: TTFT = sent → first token-carrying chunk (the prefill of the whole "
                           f"transcript), decode = the rest of the request ({over}).", headers, rows, chart,
                           summary=why, notes=list(notes)))
    return out

