"""The prefill ladder's table model (``bench prefill`` prints it, the TUI bench screen and the report draw it):
one row per prompt length and lane, built on reports/tables.py's :class:`ResultTable` (pure, no Rich, no
Textual)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lanemon.measure.catalogue import NOT_MEASURED
from lanemon.reports.format import err_text, length_label, num
from lanemon.results.prefill import PrefillCell, PrefillResult, ratios_of
from lanemon.reports.tables import (BAD, GOOD, STRONG, WARN, Cell, Column, ResultTable, fig, goodput_cells, rate,
                                    secs, slo_targets_text)

#: how a prefix-cache hit was told apart (workloads/bench/prefill.py)
_HIT_SOURCE = {"cached_tokens": "the server's cached_tokens", "timing": "timing: the repeat > 2× the cold median"}


def prefill_table(result: PrefillResult | None, lanes: Sequence[str] | None = None) -> ResultTable:
    """The prefill ladder (``bench prefill`` prints it, the bench screen and the report draw it): one row per
    prompt length and lane (length-major).  ``prefill tok/s`` is the cold figure (prompt tokens / TTFT, unique
    prompts; the median over reps) with ``?`` where lanemon itself was starved and ``†`` unstable reps; the
    same prompt sent again is never counted as prefill: ``cache hit`` is its rate when it was a prefix-cache
    hit, ``no`` when it was not, ``—`` when it was not sent.  With two lanes the second/first ratio of the cold
    figures, on the length's first row.

    Ranks (:meth:`ResultTable.fit`): length, lane and the cold figure are never dropped; TTFT and the cache hit
    go last (a cell is never cut: the bench screen's 46 columns show them whole); the detail columns (the
    reps' range, the repeat's own rate) go first, unnamed.  ``result`` None (nothing yet): no rows."""
    by_lane = result.lanes if result is not None else {}
    names = [n for n in (lanes or []) if n in by_lane] + [n for n in by_lane if n not in (lanes or [])]
    per: dict[str, dict[str, PrefillCell]] = {n: by_lane[n].lengths for n in names}
    cells = [c for n in names for c in per[n].values()]
    ratios = ratios_of(result) if result is not None else None  # an older result's: the same one function
    compared = [x for x in ratios.compared if x in by_lane] if ratios is not None else []
    compared = compared if len(compared) == 2 else []
    show_hit = any(c.cache_hit_tok_s is not None or c.repeat_tok_s is not None for c in cells)
    show_goodput = any(c.goodput is not None for c in cells)
    show_range = any(len(c.reps or []) > 1 for c in cells)
    show_repeat = any(num(c.repeat_tok_s) is not None for c in cells)
    slo = (result.config.slo if result is not None else None) or None
    cols = [Column("length", 0), Column("lane", 0, "left"), fig("prefill_tok_s", 0), fig("ttft", 1)]
    if show_hit:
        cols += [fig("cache_hit_tok_s", 1)]
    if compared:
        cols += [fig("prefill_ratio", 3, prefix=f"{compared[1]}/{compared[0]}")]
    if show_goodput:
        cols += [fig("goodput", 2), fig("slo_held", 2)]
    cols += [fig("errors", 2), fig("prompt_tokens", 4), fig("requests", 5)]
    if show_range:
        cols += [fig("prefill_min", 7, detail=True), fig("prefill_max", 7, detail=True)]  # the reps' range
    if show_repeat:
        cols += [fig("repeat_tok_s", 6, detail=True)]
    lengths = sorted({k for n in names for k in per[n]}, key=_length_key)
    rows: list[list[Cell]] = []
    ends: set[int] = set()
    notes: list[str] = []
    failed: list[str] = []
    for length in lengths:
        first = True
        for n in names:
            c = per[n].get(length)
            if c is None:
                continue
            label = length_label(length)
            flag = ("?" if c.unreliable else "") + ("†" if c.unstable else "")
            v = num(c.prefill_tok_s)
            if v is None and c.skipped:
                figure = Cell("not sent", WARN)
            elif v is None and c.error:
                figure = Cell("error", BAD)
            else:
                figure = Cell(rate(v) + flag, WARN if "?" in flag else None)
            if c.error:
                failed.append(f"{n} {label}: {err_text(c.error, 120)}")
            row = [Cell(label if first else ""), Cell(n, STRONG), figure, Cell(secs(c.ttft_s))]
            if show_hit:
                hit = num(c.cache_hit_tok_s)
                row.append(Cell(rate(hit), GOOD) if hit is not None else Cell(NOT_MEASURED))
            if compared and ratios is not None:
                r = num(ratios.by_length.get(str(length)))
                row.append(Cell((f"{r:.2f}×" if r else "—") if n == compared[1] else ""))  # B/A beside B
            if show_goodput:
                row += goodput_cells(c.goodput)
            errs = int(num(c.errors) or 0)
            pt = num(c.prompt_tokens)
            row += [Cell(str(errs), BAD if errs else None),
                    Cell("—" if pt is None else f"{pt:,.0f}" + (" est." if c.tokens_estimated else "")),
                    Cell(str(c.requests))]
            if show_range:
                row += [Cell(rate(c.min)), Cell(rate(c.max))]
            if show_repeat:
                row.append(Cell(rate(c.repeat_tok_s)))
            rows.append(row)
            first = False
        if rows:
            ends.add(len(rows) - 1)
    if show_hit:
        how = sorted({_HIT_SOURCE.get(str(c.cache_hit_source), str(c.cache_hit_source))
                      for c in cells if c.cache_hit_tok_s is not None and c.cache_hit_source})
        notes.append("cache hit: the same prompt sent again was answered from the lane's prefix cache at that rate "
                     "(never counted as prefill); —: no hit (the repeat was no faster, or not sent)"
                     + (f"; told by {' and '.join(how)}" if how else ""))
    if any(c.tokens_estimated for c in cells):
        notes.append("est.: prompt tokens estimated from the lane's calibration (its stream sent no usage)")
    if show_goodput:
        notes.append(f"goodput: share of cold requests meeting every target and their rate; {slo_targets_text(slo)}")
    if failed:
        notes += failed[:8] + ([f"… and {len(failed) - 8} more cells with an error"] if len(failed) > 8 else [])
    legend = " · ".join((["? starved"] if any(c.unreliable for c in cells) else [])
                        + (["† unstable"] if any(c.unstable for c in cells) else []))
    return ResultTable("prefill", "cold prefill · prompt tokens / TTFT, 1-token reply, unique prompts", cols, rows,
                       notes, legend, ends)


def _length_key(k: Any) -> float:
    x = num(k)
    return float("inf") if x is None else x
