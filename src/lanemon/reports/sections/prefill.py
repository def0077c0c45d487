"""Prefill section: prompt tokens / TTFT by prompt length, cold (prefix-cache hits shown apart)."""

from __future__ import annotations

from lanemon.reports.charts import Chart
from lanemon.reports.data import prefill_cells
from lanemon.reports.format import kilo, length_label, num, sorted_keys
from lanemon.reports.sections.section import Section
from lanemon.reports.prefill_table import prefill_table
from lanemon.results.prefill import PrefillResult


def prefill_section(prefill: PrefillResult, lanes: list[str]) -> Section:
    # the table is the model `bench prefill` prints and the bench screen draws (reports/tables.py), whole:
    # the report has no width limit, so its detail columns (the reps' range, the repeat's rate) stay
    model = prefill_table(prefill, lanes)
    cells = {n: prefill_cells(prefill, n) for n in lanes}
    lengths = sorted_keys({k: None for n in lanes for k in cells[n]})
    series: dict[str, list[float | None]] = {n: [] for n in lanes}
    chart_notes: dict[tuple[str, int], str] = {}
    ranges: dict[tuple[str, int], tuple[float, float]] = {}
    any_unstable = any_starved = False
    for i, length in enumerate(lengths):
        for n in lanes:
            c = cells[n].get(length)
            if c is None:
                series[n].append(None)
                continue
            series[n].append(num(c.prefill_tok_s))
            mn, mx = num(c.min), num(c.max)
            if len(c.reps or []) > 1 and mn is not None and mx is not None and mx > mn:
                ranges[(n, i)] = (mn, mx)
            any_unstable = any_unstable or bool(c.unstable)
            any_starved = any_starved or bool(c.unreliable)
            hit = num(c.cache_hit_tok_s)
            if hit:
                chart_notes[(n, i)] = kilo(hit)
    notes = list(model.notes)
    if any_unstable:
        notes.append("† unstable: the reps of this cell differ by more than the bench's stability threshold.")
    if any_starved:
        notes.append("? lanemon itself was starved while this cell ran (held up for 2 % of the cell or more): its "
                     "figure is not lane speed.")
    chart = Chart("bars", "Cold prefill by prompt length", "prompt length (tokens)", "prefill (tok/s)",
                  [length_label(k) for k in lengths], series, notes=chart_notes, ranges=ranges,
                  note_legend="cache hit tok/s (a repeat from the prefix cache, not prefill)")
    caption = ("Cold prefill: prompt tokens / TTFT, unique prompts, 1-token reply; the median over reps where there "
               "are several (prefill min and max: the reps' range). The same prompt is then sent once more: a prefix-cache hit "
               "is its rate under cache hit, never counted as prefill (repeat tok/s: that request's rate, hit or "
               "not).")
    pair = next((lb.split("/") for lb in model.labels() if lb.count("/") == 1
                 and all(x in lanes for x in lb.split("/"))), None)
    if pair:
        caption += f" {pair[0]}/{pair[1]}: {pair[0]}'s cold prefill over {pair[1]}'s at that length."
    return Section("prefill", "Prefill: prompt tokens / TTFT, cold", caption, model.labels(), model.text_rows(), chart,
                   notes=notes, model=model)
