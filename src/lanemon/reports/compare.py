"""Compare two sessions (or two lanes of one session), cell by cell (pure, no Textual).

:func:`compare` takes two :func:`lanemon.reports.analyse.analyze` analyses -- an OLD and a
NEW session -- and returns a :class:`~lanemon.results.compare.Comparison`: it aligns what they have in common: the same bench, lane and
cell (decode level or prompt category, prefill/needles length, race prompt,
qeval task, gauntlet chain, ...) and metric.  Every aligned metric becomes one
row with both values, the ratio NEW / OLD, which side is better (each metric
knows its direction: TTFT and wall time lower, tok/s and pass counts higher)
and whether the change is **significant** -- beyond the runs' own spread -- or
**noise** (docs/COMPARE.md, docs/METRICS.md "Noise and significance"):

* figures with reps on both sides (``reps`` of a decode level's aggregates and
  TTFT, a category, a prefill or needles length; a gauntlet lane's per-rep
  wall times): an exact two-sided permutation test on the reps
  (:func:`lanemon.measure.stats.rep_test`), only with at least
  :data:`~lanemon.measure.stats.MIN_REPS` reps a side; the p-values of all
  tested rows of one comparison are corrected together (Benjamini-Hochberg)
  and a row is significant when its adjusted p < 0.05;
* every other figure is never called significant: the row says whether the
  change is inside or beyond the shared noise band
  (:func:`lanemon.measure.stats.noise_band`: 5 % throughput, 10 % latency and
  KL, widened to a side's rep spread) and that it was not tested;
* a cell lanemon ran while it was itself starved (``unreliable``, its
  requests client-bound) is never significant;
* counts (errors, needles found, gauntlet correct reps, agreement counts) are
  exact: any change is significant;
* the qeval score is a paired test: the exact McNemar p over the tasks both
  sides ran joins the corrected family; with no discordant pairs the row says
  so (no p-value).  A single task that flipped is listed but never
  significant on its own.

:func:`compare_lanes` does the same between two lanes of ONE session (lane A
plays OLD, lane B plays NEW, so every ratio is B / A).  :func:`render`
writes the result as a Rich table (plain text), Markdown, self-contained
HTML or JSON; docs/COMPARE.md and the "compare" section of docs/JSON.md
describe the output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec.structs import replace

from lanemon.measure import stats as st
from lanemon.reports.data import qeval_runs
from lanemon.results.qeval import QevalResult
from lanemon.reports.format import int_key
from lanemon.reports.format import num as _num
from lanemon.results.analysis import Analysis
from lanemon.results.compare import CompareRow, CompareSummary, Comparison, Judgement, OnlyIn, Side, SideLane

NOISE_BANDS = dict(st.DEFAULT_BANDS)
"""Default relative noise band by metric kind (:data:`lanemon.measure.stats.DEFAULT_BANDS`)."""

QEVAL_ALPHA = st.ALPHA


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    better: str  # "higher" | "lower"
    kind: str  # "throughput" | "latency" | "divergence" | "count" | "score" | "task"
    unit: str  # "tok/s" | "s" | "nats" | ""


M = {m.name: m for m in (
    Metric("steady_tok_s", "aggregate tok/s (steady state)", "higher", "throughput", "tok/s"),
    Metric("aggregate_tok_s", "aggregate tok/s (first send → last end)", "higher", "throughput", "tok/s"),
    Metric("per_stream_tok_s_p50", "per-stream tok/s p50", "higher", "throughput", "tok/s"),
    Metric("per_stream_tok_s", "per-stream tok/s", "higher", "throughput", "tok/s"),
    Metric("prefill_tok_s", "prefill tok/s", "higher", "throughput", "tok/s"),
    Metric("decode_tok_s", "decode tok/s", "higher", "throughput", "tok/s"),
    Metric("ttft_p50_s", "TTFT p50", "lower", "latency", "s"),
    # energy and cost (docs/GPU.md): judged like throughput (no reps: never tested, only banded)
    Metric("tokens_per_joule", "output tokens per joule", "higher", "throughput", "tok/J"),
    Metric("usd_per_1m_output_tokens", "USD per 1M output tokens", "lower", "throughput", "USD"),
    Metric("ttft_s", "TTFT", "lower", "latency", "s"),
    Metric("total_s", "total (E2E)", "lower", "latency", "s"),
    Metric("median_wall_s", "median wall", "lower", "latency", "s"),
    Metric("errors", "errors", "lower", "count", ""),
    Metric("found_count", "needles found", "higher", "count", ""),
    Metric("correct", "correct reps", "higher", "count", ""),
    Metric("exact", "exact matches", "higher", "count", ""),
    Metric("agree_ge_10_words", "agree ≥ 10 words", "higher", "count", ""),
    Metric("median_first_divergence_word", "median first divergence word", "higher", "count", ""),
    Metric("kl", "KL mean", "lower", "divergence", "nats"),
    Metric("passed", "tasks passed", "higher", "score", ""),
    Metric("task_passed", "task passed", "higher", "task", ""),
)}


@dataclass
class Cell:
    bench: str
    lane: str
    cell_kind: str
    cell: str
    metric: str
    value: float | None
    reps: list[float] = field(default_factory=list)
    extra: Any = None  # qeval: the lane's run (for the paired test)
    unreliable: bool = False  # lanemon was starved while the cell ran (client-bound requests)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.bench, self.lane, self.cell_kind, self.cell, self.metric)




def _reps(values: Any) -> list[float]:
    return [v for v in (_num(x) for x in (values or [])) if v is not None]


def _sorted(d: Iterable[str]) -> list[str]:
    return sorted(d, key=lambda k: (int_key(k), str(k)))


# ----------------------------------------------------------------- cells of one analysis
def cells(analysis: Analysis) -> list[Cell]:
    """Every comparable figure of one analysis (:func:`lanemon.reports.analyse.analyze`), in report order."""
    out: list[Cell] = []

    def add(bench, lane, kind, cell, metric, value, reps=(), extra=None, unreliable=False):
        out.append(Cell(bench, str(lane), kind, str(cell), metric, _num(value), _reps(reps), extra,
                        bool(unreliable)))

    decode = analysis.decode
    for lane, d in (decode.lanes if decode is not None else {}).items():
        levels = d.levels
        for lvl in _sorted(levels):
            c = levels[lvl]
            bad = c.unreliable
            if c.steady_tok_s is not None or c.steady_reps is not None:  # measured (recordings since it was)
                add("decode", lane, "level", f"C{lvl}", "steady_tok_s", c.steady_tok_s, c.steady_reps,
                    unreliable=bad)
            add("decode", lane, "level", f"C{lvl}", "aggregate_tok_s", c.aggregate_tok_s, c.reps, unreliable=bad)
            add("decode", lane, "level", f"C{lvl}", "ttft_p50_s", c.ttft_p50_s, c.ttft_p50_reps, unreliable=bad)
            add("decode", lane, "level", f"C{lvl}", "per_stream_tok_s_p50", c.per_stream_tok_s_p50, unreliable=bad)
            for metric, value in (("tokens_per_joule", c.tokens_per_joule),  # only where the run measured them
                                  ("usd_per_1m_output_tokens", c.usd_per_1m_output_tokens)):
                if value is not None:
                    add("decode", lane, "level", f"C{lvl}", metric, value, unreliable=bad)
            add("decode", lane, "level", f"C{lvl}", "errors", c.errors or 0)
        for cat, c in d.categories.items():
            add("decode", lane, "category", cat, "per_stream_tok_s", c.per_stream_tok_s, c.reps,
                unreliable=c.unreliable)
            add("decode", lane, "category", cat, "ttft_p50_s", c.ttft_p50_s, unreliable=c.unreliable)
    prefill = analysis.prefill
    for lane, p in (prefill.lanes if prefill is not None else {}).items():
        for length in _sorted(p.lengths):
            pc = p.lengths[length]
            add("prefill", lane, "length", length, "prefill_tok_s", pc.prefill_tok_s, pc.reps, unreliable=pc.unreliable)
            add("prefill", lane, "length", length, "ttft_s", pc.ttft_s, unreliable=pc.unreliable)
            add("prefill", lane, "length", length, "errors", pc.errors or 0)
    needles = analysis.needles
    for lane, nl in (needles.lanes if needles is not None else {}).items():
        for length in _sorted(nl.lengths):
            nc = nl.lengths[length]
            add("needles", lane, "length", length, "prefill_tok_s", nc.prefill_tok_s, nc.reps, unreliable=nc.unreliable)
            add("needles", lane, "length", length, "ttft_s", nc.ttft_s, unreliable=nc.unreliable)
            add("needles", lane, "length", length, "found_count", nc.found_count)
    seen: dict[str, int] = {}
    for r in analysis.race.races if analysis.race is not None else []:
        pid = str(r.prompt_id or f"race {r.race}")
        seen[pid] = seen.get(pid, 0) + 1
        cell = pid if seen[pid] == 1 else f"{pid}#{seen[pid]}"
        for lane, x in r.lanes.items():
            if x.error:
                add("race", lane, "race", cell, "total_s", None)
                continue
            for metric, value in (("ttft_s", x.ttft_s), ("decode_tok_s", x.decode_tok_s), ("total_s", x.total_s)):
                add("race", lane, "race", cell, metric, value)
    for lane, run in qeval_runs(analysis.qeval).items():
        add("qeval", lane, "score", "score", "passed", run.passed, extra=run)
        for tid, t in run.tasks.items():
            add("qeval", lane, "task", tid, "task_passed", 1 if t.passed else 0)
    ag = analysis.agree
    if ag is not None and ag.total and len(ag.lanes) == 2:
        pair = "~".join(ag.lanes)
        for metric, value in (("exact", ag.exact), ("agree_ge_10_words", ag.agree_ge_10_words),
                              ("median_first_divergence_word", ag.median_first_divergence_word)):
            add("agree", pair, "prompts", f"{ag.total} prompts", metric, value)
    kl = analysis.kl
    for lane, x in kl.lanes.items() if kl is not None else ():
        if x.status == "ok" and x.kl is not None:
            add("kl", lane, "reference", f"vs {kl.reference}", "kl", x.kl)
    g = analysis.gauntlet
    for lane, x in (g.lanes if g is not None else {}).items():
        if not x.reps:
            continue
        chain = f"{'?' if g.config.hops is None else g.config.hops}-hop chain"
        add("gauntlet", lane, "chain", chain, "median_wall_s", x.median_wall_s, x.wall_s)
        add("gauntlet", lane, "chain", chain, "correct", x.correct)
    return out


# ----------------------------------------------------------------- judging one pair
def judge(metric: Metric, old: float | None, new: float | None, old_reps: Sequence[float] = (),
          new_reps: Sequence[float] = (), *, unreliable: bool = False) -> Judgement:
    """One metric's OLD vs NEW: ratio, better side, significance, band, test and its basis.

    ``p`` is the uncorrected p-value of the permutation test on the reps (None when not tested); a tested
    row's ``significant`` is provisional (p < 0.05) until :func:`correct` sees the whole comparison.
    """
    if old is None or new is None:
        side = None if old is None and new is None else ("old" if new is None else "new")
        return Judgement(better=side if metric.kind != "task" else None,
                         basis="missing on one side" if side else "missing")
    ratio = round(new / old, 4) if old else None
    better = None
    if new != old:
        better = "new" if (new > old) == (metric.better == "higher") else "old"
    if metric.kind == "count":
        return Judgement(ratio=ratio, better=better, significant=better is not None, basis="exact count")
    if metric.kind == "task":
        return Judgement(ratio=ratio, better=better, basis="one task (see the score row)")
    band = st.noise_band(metric.kind, old_reps, new_reps)
    gap = st.rel_gap(old, new)
    beyond = bool(better) and (gap is None or abs(gap) > band.band + 1e-9)
    band_txt = f"noise band {band.band:.0%}" + (" (from the reps)" if band.from_reps else "")
    out = Judgement(ratio=ratio, better=better, band=band.band, beyond_band=beyond)
    if unreliable:
        return replace(out, basis="not judged: lanemon was starved while the cell ran (client-bound)")
    test = st.rep_test(old_reps, new_reps)
    if not test.testable or test.p is None:
        where = "beyond" if beyond else "within"
        return replace(out, basis=f"{where} {band_txt}; not tested: {test.n_old} vs {test.n_new} reps "
                                  f"(a test needs {st.MIN_REPS} a side)")
    p = test.p
    return replace(out, p=p, test="permutation", significant=bool(better) and p < st.ALPHA,
                   basis=f"permutation test on {test.n_old} vs {test.n_new} reps: p = {p:.3f}; {band_txt}")


def correct(rows: list[CompareRow]) -> None:
    """Benjamini-Hochberg across the tested rows of one comparison: ``p_adjusted`` and the final
    ``significant`` of every row with a p-value (in place)."""
    adjusted = st.benjamini_hochberg([r.p for r in rows])
    tested = sum(1 for p in adjusted if p is not None)
    for r, adj in zip(rows, adjusted):
        r.p_adjusted = None if adj is None else round(adj, 6)
        if adj is None:
            continue
        r.significant = bool(r.better) and adj < st.ALPHA
        r.basis += f"; adjusted p = {adj:.3f} over {tested} tested rows (Benjamini-Hochberg)"


def _qeval_judge(old: Cell, new: Cell) -> Judgement:
    base = judge(M["passed"], old.value, new.value)
    try:
        from lanemon.workloads.qeval import compare_runs
    except ImportError:  # pragma: no cover - qeval is part of lanemon
        return replace(base, significant=False, basis="paired test unavailable")
    if not (isinstance(old.extra, QevalResult) and isinstance(new.extra, QevalResult)):
        return replace(base, significant=False, basis="McNemar: no paired tasks")
    paired = compare_runs(old.extra, new.extra, "old", "new")
    broke, fixed = paired.broke, paired.fixed
    if not paired.a.total:
        return replace(base, significant=False, basis="McNemar: no paired tasks")
    if broke + fixed == 0:
        return replace(base, significant=False, basis="McNemar: no discordant pairs (no task changed)")
    p = paired.p_value
    return replace(base, p=p, test="mcnemar", significant=bool(base.better) and p < st.ALPHA,
                   basis=f"McNemar p = {p:.3f} (broke {broke}, fixed {fixed})")


# ----------------------------------------------------------------- environment
def side_env(analysis: Analysis, lane: str | None = None) -> Side:
    env = analysis.environment
    simulated = [x.name for x in env.lanes if x.simulated and x.name]
    out = Side(simulated=sorted(set(simulated) | set(env.simulated)), recording=env.recording or None,
               created=env.created, command=env.command, lanemon=env.lanemon, duration_s=env.duration_s,
               lanes=[SideLane(name=x.name, model=x.model, url=x.url) for x in env.lanes])
    if lane is not None:
        out.lane = lane
    return out


# ----------------------------------------------------------------- compare
def _row(old: Cell | None, new: Cell | None, lane: str) -> CompareRow:
    ref = old or new
    assert ref is not None
    metric = M[ref.metric]
    if ref.bench == "qeval" and ref.metric == "passed" and old is not None and new is not None:
        j = _qeval_judge(old, new)
    else:
        j = judge(metric, old.value if old else None, new.value if new else None,
                  old.reps if old else (), new.reps if new else (),
                  unreliable=bool((old and old.unreliable) or (new and new.unreliable)))
    return CompareRow(
        bench=ref.bench, lane=lane, cell_kind=ref.cell_kind, cell=ref.cell, metric=ref.metric,
        label=metric.label, unit=metric.unit, direction=metric.better,  # type: ignore[arg-type]
        old=old.value if old else None, new=new.value if new else None,
        old_range=[min(old.reps), max(old.reps)] if old and len(old.reps) >= 2 else None,
        new_range=[min(new.reps), max(new.reps)] if new and len(new.reps) >= 2 else None,
        old_reps=len(old.reps) if old else 0, new_reps=len(new.reps) if new else 0,
        unreliable=bool((old and old.unreliable) or (new and new.unreliable)),
        ratio=j.ratio, better=j.better, significant=j.significant, basis=j.basis, band=j.band,
        beyond_band=j.beyond_band, p=j.p, test=j.test)


def _whole(c: Cell) -> tuple:
    """A cell without its metric: (bench, kind, cell)."""
    return (c.bench, c.cell_kind, c.cell)


def _only(cs: list[Cell], others: list[Cell], lane_of=lambda c: c.lane,
          same=lambda c: (c.bench, c.lane, c.cell_kind, c.cell)) -> list[OnlyIn]:
    """The cells of ``cs`` of which ``others`` has no figure at all (``same`` says which cell is which): a cell
    where one side measured a figure more (tokens per joule with GPU telemetry) is compared, not "only in"."""
    there = {same(c) for c in others}
    out: list[OnlyIn] = []
    seen = set()
    for c in cs:
        if same(c) not in there:
            k = (c.bench, lane_of(c), c.cell_kind, c.cell)
            if k not in seen:
                seen.add(k)
                out.append(OnlyIn(bench=c.bench, lane=lane_of(c), cell_kind=c.cell_kind, cell=c.cell))
    return out


def _summary(rows: list[CompareRow], only_old: list, only_new: list) -> CompareSummary:
    return CompareSummary(
        significant_better=sum(1 for r in rows if r.significant and r.better == "new"),
        significant_worse=sum(1 for r in rows if r.significant and r.better == "old"),
        noise=sum(1 for r in rows if not r.significant),
        tested=sum(1 for r in rows if r.p is not None),
        untested_beyond_band=sum(1 for r in rows if r.p is None and r.beyond_band),
        unreliable=sum(1 for r in rows if r.unreliable),
        rows=len(rows), only_old=len(only_old), only_new=len(only_new))


def _keep_task_row(row: CompareRow) -> bool:
    # qeval tasks: only those that changed (the score row carries the paired test)
    return row.metric != "task_passed" or row.old != row.new


def _lane_ok(lane: str, wanted: set[str] | None) -> bool:
    return wanted is None or all(part in wanted for part in lane.split("~"))


def compare(old: Analysis, new: Analysis, *, lanes: Sequence[str] | None = None) -> Comparison:
    """OLD vs NEW session (docs/JSON.md, "compare")."""
    wanted = set(lanes) if lanes else None
    co = [c for c in cells(old) if _lane_ok(c.lane, wanted)]
    cn = [c for c in cells(new) if _lane_ok(c.lane, wanted)]
    by_new = {c.key: c for c in cn}
    rows = [_row(c, by_new[c.key], c.lane) for c in co if c.key in by_new]
    rows = [r for r in rows if _keep_task_row(r)]
    correct(rows)
    only_old = _only(co, cn)
    only_new = _only(cn, co)
    so, sn = side_env(old), side_env(new)
    warnings, interrupted = _warned(old, "old: ", new, "new: ")
    return _with_lead(Comparison(
        mode="sessions", simulated=sorted(set(so.simulated) | set(sn.simulated)), old=so, new=sn, rows=rows,
        only_old=only_old, only_new=only_new, summary=_summary(rows, only_old, only_new),
        noise_bands=dict(NOISE_BANDS), alpha=st.ALPHA, min_reps=st.MIN_REPS, warnings=warnings,
        interrupted=interrupted))


def compare_lanes(analysis: Analysis, a: str, b: str) -> Comparison:
    """Lane ``a`` (as OLD) vs lane ``b`` (as NEW) within one session; every ratio is b / a."""
    all_cells = cells(analysis)
    pair = f"{a} vs {b}"

    def strip(c: Cell) -> tuple:
        return (c.bench, c.cell_kind, c.cell, c.metric)

    ca = [c for c in all_cells if c.lane == a]
    cb = [c for c in all_cells if c.lane == b]
    by_b = {strip(c): c for c in cb}
    rows = [_row(c, by_b[strip(c)], pair) for c in ca if strip(c) in by_b]
    rows = [r for r in rows if _keep_task_row(r)]
    correct(rows)
    only_old = _only(ca, cb, same=_whole)
    only_new = _only(cb, ca, same=_whole)
    warnings, interrupted = _warned(analysis, "")
    return _with_lead(Comparison(
        mode="lanes", simulated=[n for n in side_env(analysis).simulated if n in (a, b)],
        old=side_env(analysis, a), new=side_env(analysis, b), rows=rows, only_old=only_old, only_new=only_new,
        summary=_summary(rows, only_old, only_new), noise_bands=dict(NOISE_BANDS), alpha=st.ALPHA,
        min_reps=st.MIN_REPS, warnings=warnings, interrupted=interrupted))


def _with_lead(result: Comparison) -> Comparison:
    """``lead``: the headline every compare starts with (compare_text.lead)."""
    result.lead = lead(result)
    return result


def _warned(*pairs: Any) -> tuple[list[str], list[str]]:
    """(``warnings``: each side's, named when two; ``interrupted``: what an interrupted side did not run, said
    once, not again among the warnings) of ``(analysis, prefix, ...)``."""
    warnings: list[str] = []
    interrupted: list[str] = []
    for analysis, prefix in zip(pairs[::2], pairs[1::2]):
        cut = _interrupted(analysis, "")
        interrupted += [prefix + t for t in cut]
        warnings += [prefix + w for w in analysis.warnings if w not in cut]
    return warnings, interrupted


def _interrupted(analysis: Analysis, prefix: str) -> list[str]:
    """What each interrupted bench of a session did not run, in words (reports/analyse.interrupted_text)."""
    from lanemon.reports.analyse import interrupted_text

    return [prefix + t for t in (interrupted_text(b, analysis.bench(b)) for b in analysis.benches()) if t]


def recording_lanes(analysis: Analysis) -> list[str]:
    """Lane names with results in a session (environment lanes first)."""
    names = [x.name for x in analysis.environment.lanes]
    for c in cells(analysis):
        for part in c.lane.split("~"):
            if part not in names:
                names.append(part)
    return [n for n in names if n]


# the text side (kept importable from here: ``cmp.render``, ``cmp.value_text``, ...)
from lanemon.reports.compare_text import (  # noqa: E402
    EXTRA_CSS, FORMATS, HEADERS, NOTE, _charts, _headers, _only_text, cell_text, change_text, chart_series, headline,
    lane_order, lead, range_text, ratio_str, render, render_html, render_json, render_markdown, render_table,
    rich_renderables, series_sides, side_names, side_title, simulated_text, summary_line, table_rows, value_text)

_TEXT = (EXTRA_CSS, HEADERS, NOTE, _charts, _headers, _only_text, cell_text, change_text, chart_series, headline, lead,
         lane_order, range_text, ratio_str, render_html, render_json, render_markdown, render_table,
         rich_renderables, series_sides, side_names, side_title, simulated_text, summary_line, table_rows, value_text)
"""Re-exported for callers that use ``compare.render``, ``compare.value_text``, ... (ui, cli)."""

__all__ = ["FORMATS", "NOISE_BANDS", "cells", "compare", "compare_lanes", "correct", "judge", "render",
           "recording_lanes"]
