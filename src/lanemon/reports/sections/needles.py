"""Needles section: long-context retrieval, found or missed per context length."""

from __future__ import annotations

from lanemon.reports.format import clip, err_text, int_key, num, secs, sorted_keys, tok
from lanemon.reports.sections.section import Section
from lanemon.results.needles import NeedleResult


def needles_section(result: NeedleResult, lanes: list[str]) -> Section:
    """``result``: the bench's typed result."""
    cells = {n: result.lanes[n].lengths if n in result.lanes else {} for n in lanes}
    lengths = sorted_keys({k: None for n in lanes for k in cells[n]})
    headers = ["Context tokens"] + [f"{n}" for n in lanes]
    rows = []
    for length in lengths:
        row = [f"{int_key(length):,.0f}"]
        for n in lanes:
            c = cells[n].get(length)
            if c is None:
                row.append("—")
            elif c.error:
                row.append(f"error: {err_text(c.error)}")
            else:
                mark = "found" if c.found else "MISSED"
                depth = num(c.depth)
                extra = [f"depth {depth:.0%}"] if depth is not None else []
                extra.append(f"TTFT {secs(num(c.ttft_s))}")
                if num(c.prefill_tok_s):
                    extra.append(f"{tok(num(c.prefill_tok_s))} tok/s")
                if not c.found and isinstance(c.answer, str):
                    key = c.key if isinstance(c.key, str) else None
                    extra.append(f"answered {clip(c.answer, 20)!r}, key {key!r}")
                row.append(f"{mark} ({', '.join(extra)})")
        rows.append(row)
    return Section("needles", "Needles: long-context retrieval", "A random key hidden at a depth in a long "
                   "context; found = the reply contains it.", headers, rows)
