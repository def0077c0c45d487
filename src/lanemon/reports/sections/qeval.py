"""Quality gate (qeval) section: pass counts by task kind, missed tasks, the paired comparison."""

from __future__ import annotations

from typing import Any

from lanemon.measure.stats import median
from lanemon.reports.data import qeval_misses, qeval_rate, qeval_runs
from lanemon.reports.format import num, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import Cell, Column, ResultTable, clip_words
from lanemon.reports.verdict import TIE, paired_text, qeval_sentence
from lanemon.results.qeval import QevalCompare

QEVAL_KINDS = ("code", "json", "math", "format")


def qeval_section(q: Any, order: list[str]) -> Section:
    runs = qeval_runs(q)
    lanes = [n for n in order if n in runs] + [n for n in runs if n not in order]
    compare = getattr(q, "compare", None)  # the analysis's QevalLanes (reports/analyse.py); None for a bare run
    compare = compare if isinstance(compare, QevalCompare) else None
    kinds = [k for k in QEVAL_KINDS if any(t.kind == k for r in runs.values() for t in r.tasks.values())]
    kinds += sorted({t.kind for r in runs.values() for t in r.tasks.values()} - set(kinds))
    # each table is a model a screen fits to its width (ResultTable.fit): short labels, a reason cut between
    # words, then columns dropped by rank and named
    columns = ([Column("Lane", 0, "left"), Column("passed", 0)] + [Column(k, 2) for k in kinds]
               + [Column("median s/task", 3, short="med s/task"),
                  Column("median tok/s (E2E)", 4, short="med tok/s E2E")])
    rows = []
    for n in lanes:
        r = runs[n]
        tasks = r.tasks.values()
        row = [n, f"{r.passed}/{r.total}"]
        for k in kinds:
            of = [t for t in tasks if t.kind == k]
            row.append(f"{sum(1 for t in of if t.passed)}/{len(of)}" if of else "—")
        row += [secs(median([x for t in tasks if (x := num(t.seconds)) is not None])), tok(qeval_rate(r))]
        rows.append([Cell(x) for x in row])
    model = ResultTable("qeval", "Quality gate (qeval)", columns, rows)
    summary = qeval_sentence(q) or ""
    if compare:
        summary += f"; paired {compare.a.name} → {compare.b.name}: {paired_text(compare)}"
        rates = {n: qeval_rate(runs[n]) for n in lanes[:2]}
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
                + [Column(n, 0, "left", clip=True) for n in lanes] + ([Column("paired", 2, "left")] if compare else []))
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
        cols = [Column(f"Paired {a.name} → {b.name}", 0, "left"), Column("kept", 0), Column("broke", 0),
                Column("fixed", 0), Column("both failed", 1), Column("p (exact McNemar)", 0, short="p McNemar"),
                Column("left out", 2)]
        more_models.append(ResultTable("qeval-paired", "Paired comparison (qeval compare)", cols, [[Cell(x) for x in (
            f"{a.passed}/{a.total} → {b.passed}/{b.total}", str(compare.kept), str(compare.broke),
            str(compare.fixed), str(compare.both_failed), f"{num(compare.p_value) or 0:.3f}", str(compare.left_out))]]))
    more = [(t.title, t.labels(), t.text_rows()) for t in more_models]
    caption = ("Auto-scored tasks (code with hidden tests in a sandbox, JSON, math, format) at temperature 0, "
               "re-scored from the recorded replies. broke = passes on the first lane, fails on the second; "
               "fixed = the reverse; p is the exact two-sided McNemar test on those discordant pairs.")
    return Section("qeval", model.title, caption, model.labels(), model.text_rows(), summary=summary, more=more,
                   more_models=more_models, model=model)
