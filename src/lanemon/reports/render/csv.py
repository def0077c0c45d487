"""The CSV report: one row per cell (decode level or category, prefill/needles length, race lane, qeval task,
agreement prompt, KL lane, gauntlet rep and turn), columns :data:`CSV_COLUMNS` (docs/REPORTS.md)."""

from __future__ import annotations

import csv
import io
from typing import Any

from msgspec import UNSET

from lanemon.reports.data import agree_pair, decode_levels, level_basis, prefill_cells, present_lanes, qeval_runs
from lanemon.reports.format import err_text, sorted_keys
from lanemon.results.analysis import Analysis, as_analysis

CsvValue = str | int | float | bool | None
Row = dict[str, CsvValue]
"""One CSV row: column -> value (:data:`CSV_COLUMNS`)."""


CSV_COLUMNS = (
    "bench", "lane", "cell_kind", "cell", "tok_s", "ttft_s", "ttft_p90_s", "ttft_p99_s", "per_stream_tok_s",
    "min_tok_s", "max_tok_s", "reps", "unstable", "prompt_tokens", "cache_hit_tok_s", "output_tokens",
    "tokens_estimated", "requests", "errors", "found", "winner", "error",
    "vs_lane", "rep", "passed", "reason", "task_kind", "seconds", "paired", "count", "p_value",
    "first_divergence_word", "exact", "words", "vs_words", "status", "kl", "kl_p50", "kl_p99", "positions",
    "tool_calls", "malformed_calls", "decode_s", "cached_tokens", "tok_s_basis", "span_tok_s", "unreliable",
    "run_interrupted",
)
"""Columns of the CSV report (see docs/REPORTS.md)."""


def csv_rows(analysis: Analysis) -> list[Row]:
    rows: list[Row] = []
    decode = analysis.decode
    for n in present_lanes(analysis, "decode") if decode is not None else []:
        for lvl, c in decode_levels(decode, n).items():
            # tok_s is the figure the level is judged on (steady where recorded, else the span; tok_s_basis
            # says which), its reps' min/max beside it; the span always in span_tok_s
            value, reps, basis = level_basis(c)
            vals = [v for v in reps if isinstance(v, (int, float))]
            steady = basis == "steady"
            rows.append({"bench": "decode", "lane": n, "cell_kind": "level", "cell": lvl,
                         "tok_s": value, "ttft_s": c.ttft_p50_s,
                         "ttft_p90_s": c.ttft_p90_s, "ttft_p99_s": c.ttft_p99_s,
                         "per_stream_tok_s": c.per_stream_tok_s_p50,
                         "min_tok_s": min(vals) if steady and vals else c.min,
                         "max_tok_s": max(vals) if steady and vals else c.max, "reps": len(reps),
                         "unstable": c.steady_unstable if steady else c.unstable,
                         "output_tokens": c.output_tokens, "tokens_estimated": c.tokens_estimated,
                         "requests": c.requests, "errors": c.errors,
                         "tok_s_basis": basis if value is not None else None,
                         "span_tok_s": c.aggregate_tok_s, "unreliable": c.unreliable})
        for cat, c in decode.lanes[n].categories.items():
            rows.append({"bench": "decode", "lane": n, "cell_kind": "category", "cell": cat,
                         "tok_s": c.per_stream_tok_s, "per_stream_tok_s": c.per_stream_tok_s,
                         "requests": c.requests, "errors": c.errors})
    prefill = analysis.prefill
    for n in present_lanes(analysis, "prefill") if prefill is not None else []:
        cells = prefill_cells(prefill, n)
        for length in sorted_keys(cells):
            p = cells[length]
            rows.append({"bench": "prefill", "lane": n, "cell_kind": "length", "cell": length,
                         "tok_s": p.prefill_tok_s, "ttft_s": p.ttft_s, "min_tok_s": p.min,
                         "max_tok_s": p.max, "reps": len(p.reps or []), "unstable": p.unstable,
                         "prompt_tokens": p.prompt_tokens, "cache_hit_tok_s": p.cache_hit_tok_s,
                         "error": err_text(p.error, 200) if p.error else None})
    needles = analysis.needles
    for n in present_lanes(analysis, "needles") if needles is not None else []:
        lengths = needles.lanes[n].lengths
        for length in sorted_keys(lengths):
            x = lengths[length]
            rows.append({"bench": "needles", "lane": n, "cell_kind": "length", "cell": length,
                         "tok_s": x.prefill_tok_s, "ttft_s": x.ttft_s, "found": x.found,
                         "error": err_text(x.error, 200) if x.error else None})
    for r in analysis.race.races if analysis.race is not None else []:
        for n, rc in r.lanes.items():
            rows.append({"bench": "race", "lane": n, "cell_kind": "race", "cell": r.race,
                         "tok_s": rc.decode_tok_s, "ttft_s": rc.ttft_s,
                         "output_tokens": rc.output_tokens, "tokens_estimated": rc.tokens_estimated,
                         "winner": r.winner == n, "error": err_text(rc.error, 200) if rc.error else None})
    rows += quality_csv_rows(analysis)
    return rows


def quality_csv_rows(analysis: Analysis) -> list[Row]:
    rows: list[Row] = []
    q = analysis.qeval
    runs = qeval_runs(q)
    compare = q.compare if q is not None else None
    paired: dict[str, str] = {}
    pair: tuple[str, str] | None = None
    groups: tuple[tuple[str, list[str], int], ...] = ()
    if compare:
        pair = (compare.a.name, compare.b.name)
        groups = (("kept", compare.kept_ids, compare.kept), ("broke", compare.broke_ids, compare.broke),
                  ("fixed", compare.fixed_ids, compare.fixed),
                  ("both_failed", compare.both_failed_ids, compare.both_failed))
        for key, ids, _ in groups:
            for tid in ids:
                paired[tid] = key
    for n, r in runs.items():
        for tid, t in r.tasks.items():
            in_pair = pair is not None and n in pair
            rows.append({"bench": "qeval", "lane": n, "cell_kind": "task", "cell": tid, "task_kind": t.kind,
                         "passed": t.passed, "reason": t.reason, "prompt_tokens": t.prompt_tokens,
                         "output_tokens": t.completion_tokens, "seconds": t.seconds,
                         "vs_lane": (pair[1] if n == pair[0] else pair[0]) if in_pair else None,
                         "paired": paired.get(tid) if in_pair else None})
    if compare and pair is not None:
        for key, _, count in groups:
            rows.append({"bench": "qeval", "lane": pair[0], "vs_lane": pair[1], "cell_kind": "paired", "cell": key,
                         "count": count, "p_value": compare.p_value})
    ag = analysis.agree
    if ag is not None and (ag.total or ag.prompts):
        a, b = agree_pair(ag)
        for pr in ag.prompts:
            rows.append({"bench": "agree", "lane": a, "vs_lane": b, "cell_kind": "prompt", "cell": pr.id,
                         "first_divergence_word": pr.first_divergence_word, "exact": pr.exact,
                         "words": pr.a_words, "vs_words": pr.b_words, "error": pr.error})
        for k, v in ag.histogram.items():
            rows.append({"bench": "agree", "lane": a, "vs_lane": b, "cell_kind": "bucket", "cell": k, "count": v})
    kl = analysis.kl
    for n, c in kl.lanes.items() if kl is not None else ():
        rows.append({"bench": "kl", "lane": n, "vs_lane": kl.reference, "cell_kind": "lane", "cell": n,
                     "status": c.status, "kl": c.kl, "kl_p50": c.kl_p50, "kl_p99": c.kl_p99,
                     "positions": c.positions, "reason": c.message})
    g = analysis.gauntlet
    for n, x in (g.lanes if g is not None else {}).items():
        walls, turns = x.wall_s, x.turns
        for i in range(len(walls)):
            def at(values: list[Any], i: int = i) -> Any:
                return values[i] if i < len(values) else None
            rows.append({"bench": "gauntlet", "lane": n, "cell_kind": "rep", "cell": i, "rep": i,
                         "passed": at(x.correct_per_rep), "tool_calls": at(x.tool_calls),
                         "malformed_calls": at(x.malformed_calls), "seconds": walls[i], "reason": at(x.stopped),
                         "requests": len(turns[i]) if i < len(turns) else None})
        for i, rep_turns in enumerate(turns):
            for t in rep_turns:
                rows.append({"bench": "gauntlet", "lane": n, "cell_kind": "turn", "cell": t.turn, "rep": i,
                             "prompt_tokens": t.prompt_tokens, "cached_tokens": t.cached_tokens,
                             "ttft_s": t.ttft_s, "decode_s": t.decode_s,
                             "output_tokens": t.completion_tokens, "tool_calls": t.calls,
                             "error": None if t.error is UNSET else t.error})
    return rows


def _interrupted(result: Any) -> bool:
    """An interrupted run: a typed result's ``interrupted``, a per-lane one's (qeval: a dict) ``interrupted`` key."""
    return bool(result.get("interrupted")) if isinstance(result, dict) else bool(getattr(result, "interrupted", False))


def csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return round(v, 4)
    return v


def render_csv(analysis: Analysis | dict[str, Any]) -> str:
    analysis = as_analysis(analysis)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    cut = {b for b in analysis.benches() if _interrupted(analysis.bench(b))}
    for row in csv_rows(analysis):
        w.writerow({k: csv_value(v) for k, v in {**row, "run_interrupted": row.get("bench") in cut}.items()})
    return buf.getvalue()
