"""Needles section: long-context retrieval, found or missed per context length."""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import clip, err_text, int_key, num, secs, sorted_keys, tok
from lanemon.reports.sections.section import Section


def needles_section(needles: dict[str, Any], lanes: list[str]) -> Section:
    cells = {n: ((needles["lanes"].get(n) or {}).get("lengths")) or {} for n in lanes}
    lengths = sorted_keys({k: None for n in lanes for k in cells[n]})
    headers = ["Context tokens"] + [f"{n}" for n in lanes]
    rows = []
    for length in lengths:
        row = [f"{int_key(length):,.0f}"]
        for n in lanes:
            c = cells[n].get(length)
            if not c:
                row.append("—")
            elif c.get("error"):
                row.append(f"error: {err_text(c['error'])}")
            else:
                mark = "found" if c.get("found") else "MISSED"
                depth = num(c.get("depth"))
                extra = [f"depth {depth:.0%}"] if depth is not None else []
                extra.append(f"TTFT {secs(c.get('ttft_s'))}")
                if num(c.get("prefill_tok_s")):
                    extra.append(f"{tok(c.get('prefill_tok_s'))} tok/s")
                if not c.get("found") and c.get("answer") is not None:
                    extra.append(f"answered {clip(c.get('answer'), 20)!r}, key {c.get('key')!r}")
                row.append(f"{mark} ({', '.join(extra)})")
        rows.append(row)
    return Section("needles", "Needles: long-context retrieval", "A random key hidden at a depth in a long "
                   "context; found = the reply contains it.", headers, rows)
