"""Needles section: long-context retrieval, found or missed per context length."""

from __future__ import annotations

from lanemon.measure.catalogue import NOT_MEASURED, label
from lanemon.reports.format import clip, err_text, int_key, num, secs, sorted_keys, tok
from lanemon.reports.sections.section import Section
from lanemon.results.common import UNSET
from lanemon.results.needles import NeedleResult


def needles_section(result: NeedleResult, lanes: list[str]) -> Section:
    """``result``: the bench's typed result.  One row per length and lane (as ``bench needles`` prints it): found
    or missed and the depth in words, then one figure per column under the catalogue's label (NeedleCell)."""
    cells = {n: result.lanes[n].lengths if n in result.lanes else {} for n in lanes}
    lengths = sorted_keys({k: None for n in lanes for k in cells[n]})
    headers = ["length", "lane", "found", "depth", *(label(f) for f in FIGURES)]
    rows, notes = [], []
    for length in lengths:
        for n in lanes:
            c = cells[n].get(length)
            if c is None:
                continue
            where = f"{int_key(length):,.0f}"
            if c.error:
                rows.append([where, n, f"error: {err_text(c.error)}", NOT_MEASURED,
                             *(NOT_MEASURED for _ in FIGURES)])
                continue
            depth = num(c.depth)
            rows.append([where, n, "found" if c.found else "MISSED",
                         f"{depth:.0%}" if depth is not None else NOT_MEASURED,
                         secs(num(c.ttft_s)), tok(num(c.prefill_tok_s)),
                         NOT_MEASURED if c.prompt_tokens in (None, UNSET) else f"{c.prompt_tokens:,}"])
            if not c.found and isinstance(c.answer, str):
                key = c.key if isinstance(c.key, str) else None
                notes.append(f"{n} at {where}: answered {clip(c.answer, 20)!r}, key {key!r}")
    return Section("needles", "Needles: long-context retrieval", "A random key hidden at a depth in a long "
                   "context; found = the reply contains it.", headers, rows, notes=notes)


FIGURES = ("ttft", "prefill_tok_s", "prompt_tokens")
"""The figures of a length (NeedleCell: ttft_s, prefill_tok_s, prompt_tokens), by catalogue entry."""
