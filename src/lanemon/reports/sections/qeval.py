"""Quality gate (qeval) section: pass counts by task kind, missed tasks, the paired comparison."""

from __future__ import annotations

from typing import Any

from lanemon.reports.data import qeval_misses, qeval_runs
from lanemon.reports.format import num, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import Cell, Column, ResultTable, clip_words, fig
from lanemon.reports.verdict import TIE, paired_text, qeval_sentence
from lanemon.results.qeval import QevalCompare

def qeval_section(q: Any, order: list[str]) -> Section:
    runs = qeval_runs(q)
    lanes = [n for n in order if n in runs] + [n for n in runs if n not in order]
    compare = getattr(q, "compare", None)  # the analysis's QevalLanes (reports/analyse.py); None for a bare run
    compare = compare if isinstance(compare, QevalCompare) else None
    # each table is a model a screen fits to its width (ResultTable.fit): short labels, a reason cut between
    # words, then columns dropped by rank and named.  One row per lane and task kind, then the lane's whole run
    # ('all'): every figure is the run's own (workloads/qeval/run.py task_figures), labelled by the catalogue
    columns = [Column("Lane", 0, "left"), Column("kind", 0, "left"), fig("qeval_passed", 0), fig("qeval_tasks", 0),
               fig("qeval_median_s", 3), fig("qeval_tok_s", 4)]
    rows = []
    for n in lanes:
        r = runs[n]
        for i, (kind, k) in enumerate([*(r.kinds or {}).items(), ("all", r)]):
            rows.append([Cell(x) for x in (n if i == 0 else "", kind, str(k.passed), str(k.total), secs(k.median_s),
                                           tok(k.median_tok_s))])
    model = ResultTable("qeval", "Quality gate (qeval)", columns, rows)
    summary = qeval_sentence(q) or ""
    if compare:
        summary += f"; paired {compare.a.name} → {compare.b.name}: {paired_text(compare)}"
        rates = {n: num(runs[n].median_tok_s) for n in lanes[:2]}
        if all(rates.values()):
            (fa, va), (fb, vb) = sorted(rates.items(), key=lambda t: -t[1])
            if va / vb >= TIE:
                summary += f". Median single-stream inside qeval: {fa} faster ({tok(va)} vs {tok(vb)} tok/s E2E)"
    summary += "."
    more, more_models = [], []
    failed = list(dict.fromkeys(tid for n in lanes for tid in qeval_misses(runs[n])))  # bank order per lane
    if failed:
        paired_of = {}
        if compare:
            for ids, word in ((compare.kept_ids, "kept"), (compare.broke_ids, "broke"), (compare.fixed_ids, "fixed"),
                              (compare.both_failed_ids, "both failed")):
                for tid in ids:
                    paired_of[tid] = word
        cols = ([Column("Task", 0, "left"), Column("kind", 3, "left")]
                + [Column(f"{n} verdict", 0, "left", clip=True) for n in lanes] + ([Column("paired", 2, "left")] if compare else []))
        rr = []
        for tid in failed:
            kind = next((r.tasks[tid].kind for r in runs.values() if tid in r.tasks), "")
            row = [tid, str(kind or "")]
            for n in lanes:
                t = runs[n].tasks.get(tid)
                row.append("—" if t is None else "passed" if t.passed else clip_words(" ".join(str(t.reason or "failed").split()), 100))
            if compare:
                row.append(paired_of.get(tid, "—"))
            rr.append([Cell(x) for x in row])
        more_models.append(ResultTable("qeval-missed", "Tasks missed on any lane", cols, rr))
    if compare:
        a, b = compare.a, compare.b
        cols = [Column(f"Paired {a.name} → {b.name}", 0, "left"), fig("qeval_kept", 0), fig("qeval_broke", 0),
                fig("qeval_fixed", 0), fig("qeval_both_failed", 1), fig("qeval_p", 0), fig("qeval_left_out", 2)]
        more_models.append(ResultTable("qeval-paired", "Paired comparison (qeval compare)", cols, [[Cell(x) for x in (
            f"{a.passed}/{a.total} → {b.passed}/{b.total}", str(compare.kept), str(compare.broke),
            str(compare.fixed), str(compare.both_failed), f"{num(compare.p_value) or 0:.3f}", str(compare.left_out))]]))
    more = [(t.title, t.labels(), t.text_rows()) for t in more_models]
    caption = ("Auto-scored tasks (code with hidden tests in a sandbox, JSON, math, format) at temperature 0, "
               "re-scored from the recorded replies. broke = passes on the first lane, fails on the second; "
               "fixed = the reverse; p is the exact two-sided McNemar test on those discordant pairs.")
    return Section("qeval", model.title, caption, model.labels(), model.text_rows(), summary=summary, more=more,
                   more_models=more_models, model=model)
