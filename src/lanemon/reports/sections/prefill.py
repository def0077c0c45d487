"""Prefill section: prompt tokens / TTFT by prompt length, cold (prefix-cache hits shown apart)."""

from __future__ import annotations

from typing import Any

from lanemon.reports.charts import Chart
from lanemon.reports.data import prefill_cells
from lanemon.reports.format import err_text, int_key, kilo, length_label, num, secs, sorted_keys, tok
from lanemon.reports.sections.section import Section


def prefill_section(prefill: dict[str, Any], lanes: list[str]) -> Section:
    cells = {n: prefill_cells(prefill, n) for n in lanes}
    lengths = sorted_keys({k: None for n in lanes for k in cells[n]})
    headers = ["Prompt tokens"] + [f"{n} prefill tok/s (TTFT)" for n in lanes]
    if len(lanes) == 2:
        headers.append(f"{lanes[1]}/{lanes[0]}")
    rows, notes = [], []
    series: dict[str, list[float | None]] = {n: [] for n in lanes}
    chart_notes: dict[tuple[str, int], str] = {}
    ranges: dict[tuple[str, int], tuple[float, float]] = {}
    any_unstable = any_hit = False
    for i, length in enumerate(lengths):
        row = [length_label(length) if int_key(length) < 10_000 else f"{int_key(length):,.0f}"]
        vals = []
        for n in lanes:
            c = cells[n].get(length)
            if not c:
                row.append("—")
                series[n].append(None)
                vals.append(None)
                continue
            v = num(c.get("prefill_tok_s"))
            vals.append(v)
            series[n].append(v)
            if c.get("error") and v is None:
                row.append(f"error: {err_text(c.get('error'), 60)}")
                continue
            text = f"{tok(v)} ({secs(c.get('ttft_s'))})"
            mn, mx = num(c.get("min")), num(c.get("max"))
            if len(c.get("reps") or []) > 1 and mn is not None and mx is not None:
                text += f" [{tok(mn)}–{tok(mx)}]"
                if mx > mn:
                    ranges[(n, i)] = (mn, mx)
            if c.get("unstable"):
                text += " †"
                any_unstable = True
            hit = num(c.get("cache_hit_tok_s"))
            if hit:
                text += f"; cache hit {tok(hit)}"
                chart_notes[(n, i)] = kilo(hit)
                any_hit = True
            row.append(text)
        if len(lanes) == 2:
            row.append(f"{vals[1] / vals[0]:.2f}×" if vals[0] and vals[1] else "—")
        rows.append(row)
    if any_hit:
        notes.append("cache hit: the same prompt was answered from the lane's prefix cache; that rate is shown "
                     "apart and never counted as prefill.")
    if any_unstable:
        notes.append("† unstable: the reps of this cell differ by more than the bench's stability threshold.")
    chart = Chart("bars", "Cold prefill by prompt length", "prompt length (tokens)", "prefill (tok/s)",
                  [length_label(k) for k in lengths], series, notes=chart_notes, ranges=ranges,
                  note_legend="cache hit tok/s (a repeat from the prefix cache, not prefill)")
    return Section("prefill", "Prefill: prompt tokens / TTFT, cold", "Unique prompts, 1-token reply; median over "
                   "reps where there are several. TTFT in brackets.", headers, rows, chart, notes=notes)
