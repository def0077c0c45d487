"""Compare two sessions (or two lanes of one session), cell by cell (pure, no Textual).

:func:`compare` takes two :func:`lanemon.reports.analyse.analyze` dicts -- an OLD and a
NEW session -- and aligns what they have in common: the same bench, lane and
cell (decode level or prompt category, prefill/needles length, race prompt,
qeval task, gauntlet chain, ...) and metric.  Every aligned metric becomes one
row with both values, the ratio NEW / OLD, which side is better (each metric
knows its direction: TTFT and wall time lower, tok/s and pass counts higher)
and whether the change is **significant** -- beyond the runs' own spread -- or
**noise**:

* both cells have two or more rep values (``reps`` of a decode level or
  category, a prefill or needles length; a gauntlet lane's per-rep wall
  times): significant when the two rep ranges ``[min, max]`` do not overlap;
* otherwise a relative band: significant when ``|NEW/OLD - 1|`` exceeds the
  metric's default noise band (:data:`NOISE_BANDS`: 5 % for throughput,
  10 % for TTFT and other latencies, 10 % for KL), widened to the relative
  spread ``(max - min) / median`` of whichever side does have reps;
* counts (errors, needles found, gauntlet correct reps, agreement counts) are
  exact: any change is significant;
* the qeval score is a paired test: significant when the exact McNemar p
  over the tasks both sides ran is below 0.05
  (:func:`lanemon.workloads.qeval.compare_runs`); a single task that flipped
  is listed but never significant on its own.

:func:`compare_lanes` does the same between two lanes of ONE session (lane A
plays OLD, lane B plays NEW, so every ratio is B / A).  :func:`render`
writes the result as a Rich table (plain text), Markdown, self-contained
HTML or JSON; docs/COMPARE.md and the "compare" section of docs/JSON.md
describe the output.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lanemon.reports.charts import Chart, svg_chart
from lanemon.reports.data import qeval_runs
from lanemon.reports.format import esc, int_key, length_label, secs, tok
from lanemon.reports.render.html import CSS, html_page
from lanemon.reports.render.json import render_json
from lanemon.reports.render.markdown import md_table

FORMATS = ("table", "md", "html", "json")

NOISE_BANDS = {"throughput": 0.05, "latency": 0.10, "divergence": 0.10}
"""Relative noise band by metric kind when a cell has no reps (see the module docstring)."""

QEVAL_ALPHA = 0.05


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    better: str  # "higher" | "lower"
    kind: str  # "throughput" | "latency" | "divergence" | "count" | "score" | "task"
    unit: str  # "tok/s" | "s" | "nats" | ""


M = {m.name: m for m in (
    Metric("aggregate_tok_s", "aggregate tok/s", "higher", "throughput", "tok/s"),
    Metric("per_stream_tok_s_p50", "per-stream tok/s p50", "higher", "throughput", "tok/s"),
    Metric("per_stream_tok_s", "per-stream tok/s", "higher", "throughput", "tok/s"),
    Metric("prefill_tok_s", "prefill tok/s", "higher", "throughput", "tok/s"),
    Metric("decode_tok_s", "decode tok/s", "higher", "throughput", "tok/s"),
    Metric("ttft_p50_s", "TTFT p50", "lower", "latency", "s"),
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

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.bench, self.lane, self.cell_kind, self.cell, self.metric)


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _reps(values: Any) -> list[float]:
    return [v for v in (_num(x) for x in (values or [])) if v is not None]


def _sorted(d: dict[str, Any]) -> list[str]:
    return sorted(d, key=lambda k: (int_key(k), str(k)))


# ----------------------------------------------------------------- cells of one analysis
def cells(analysis: dict[str, Any]) -> list[Cell]:
    """Every comparable figure of one ``analyze()`` dict, in report order."""
    out: list[Cell] = []

    def add(bench, lane, kind, cell, metric, value, reps=(), extra=None):
        out.append(Cell(bench, str(lane), kind, str(cell), metric, _num(value), _reps(reps), extra))

    decode = analysis.get("decode") or {}
    for lane, d in (decode.get("lanes") or {}).items():
        levels = (d or {}).get("levels") or {}
        for lvl in _sorted(levels):
            c = levels[lvl] or {}
            add("decode", lane, "level", f"C{lvl}", "aggregate_tok_s", c.get("aggregate_tok_s"), c.get("reps"))
            add("decode", lane, "level", f"C{lvl}", "ttft_p50_s", c.get("ttft_p50_s"))
            add("decode", lane, "level", f"C{lvl}", "per_stream_tok_s_p50", c.get("per_stream_tok_s_p50"))
            add("decode", lane, "level", f"C{lvl}", "errors", c.get("errors") or 0)
        cats = (d or {}).get("categories") or {}
        for cat, c in cats.items():
            c = c or {}
            add("decode", lane, "category", cat, "per_stream_tok_s", c.get("per_stream_tok_s"), c.get("reps"))
            add("decode", lane, "category", cat, "ttft_p50_s", c.get("ttft_p50_s"))
    for bench in ("prefill", "needles"):
        b = analysis.get(bench) or {}
        for lane, d in (b.get("lanes") or {}).items():
            lengths = (d or {}).get("lengths") or {}
            for length in _sorted(lengths):
                c = lengths[length] or {}
                add(bench, lane, "length", length, "prefill_tok_s", c.get("prefill_tok_s"), c.get("reps"))
                add(bench, lane, "length", length, "ttft_s", c.get("ttft_s"))
                if bench == "prefill":
                    add(bench, lane, "length", length, "errors", c.get("errors") or 0)
                else:
                    add(bench, lane, "length", length, "found_count", c.get("found_count"))
    race = analysis.get("race") or {}
    seen: dict[str, int] = {}
    for r in race.get("races") or []:
        pid = str(r.get("prompt_id") or f"race {r.get('race')}")
        seen[pid] = seen.get(pid, 0) + 1
        cell = pid if seen[pid] == 1 else f"{pid}#{seen[pid]}"
        for lane, x in (r.get("lanes") or {}).items():
            x = x or {}
            if x.get("error"):
                add("race", lane, "race", cell, "total_s", None)
                continue
            for metric in ("ttft_s", "decode_tok_s", "total_s"):
                add("race", lane, "race", cell, metric, x.get(metric))
    q = analysis.get("qeval") or {}
    for lane, run in qeval_runs(q).items():
        add("qeval", lane, "score", "score", "passed", run.get("passed"), extra=run)
        for tid, t in (run.get("tasks") or {}).items():
            add("qeval", lane, "task", tid, "task_passed", 1 if (t or {}).get("passed") else 0)
    ag = analysis.get("agree") or {}
    if ag.get("total") and len(ag.get("lanes") or []) == 2:
        pair = "~".join(ag["lanes"])
        for metric in ("exact", "agree_ge_10_words", "median_first_divergence_word"):
            add("agree", pair, "prompts", f"{ag['total']} prompts", metric, ag.get(metric))
    kl = analysis.get("kl") or {}
    for lane, x in (kl.get("lanes") or {}).items():
        if (x or {}).get("status") == "ok" and x.get("kl") is not None:
            add("kl", lane, "reference", f"vs {kl.get('reference')}", "kl", x.get("kl"))
    g = analysis.get("gauntlet") or {}
    for lane, x in (g.get("lanes") or {}).items():
        x = x or {}
        if not x.get("reps"):
            continue
        add("gauntlet", lane, "chain", f"{(g.get('config') or {}).get('hops', '?')}-hop chain", "median_wall_s",
            x.get("median_wall_s"), x.get("wall_s"))
        add("gauntlet", lane, "chain", f"{(g.get('config') or {}).get('hops', '?')}-hop chain", "correct",
            x.get("correct"))
    return out


# ----------------------------------------------------------------- judging one pair
def _spread(reps: list[float]) -> float:
    if len(reps) < 2:
        return 0.0
    s = sorted(reps)
    mid = len(s) // 2
    med = s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    return (s[-1] - s[0]) / med if med else 0.0


def judge(metric: Metric, old: float | None, new: float | None, old_reps: Sequence[float] = (),
          new_reps: Sequence[float] = ()) -> dict[str, Any]:
    """``{"ratio", "better", "significant", "basis"}`` for one metric's OLD and NEW values."""
    if old is None or new is None:
        side = None if old is None and new is None else ("old" if new is None else "new")
        return {"ratio": None, "better": side if metric.kind != "task" else None, "significant": False,
                "basis": "missing on one side" if side else "missing"}
    ratio = round(new / old, 4) if old else None
    better = None
    if new != old:
        better = "new" if (new > old) == (metric.better == "higher") else "old"
    if metric.kind == "count":
        return {"ratio": ratio, "better": better, "significant": better is not None, "basis": "exact count"}
    if metric.kind == "task":
        return {"ratio": ratio, "better": better, "significant": False, "basis": "one task (see the score row)"}
    ro, rn = list(old_reps), list(new_reps)
    if len(ro) >= 2 and len(rn) >= 2:
        apart = max(ro) < min(rn) or max(rn) < min(ro)
        return {"ratio": ratio, "better": better, "significant": bool(apart and better),
                "basis": f"reps ({len(ro)} vs {len(rn)}): ranges {'apart' if apart else 'overlap'}"}
    band = NOISE_BANDS.get(metric.kind, 0.05)
    widened = max(band, _spread(ro), _spread(rn))
    if ratio is None:  # old is 0
        sig = bool(better)
    else:
        sig = bool(better) and abs(ratio - 1) > widened
    basis = f"band {widened:.0%}" + ("" if widened == band else f" (rep spread; default {band:.0%})")
    return {"ratio": ratio, "better": better, "significant": sig, "basis": basis}


def _qeval_judge(old: Cell, new: Cell) -> dict[str, Any]:
    base = judge(M["passed"], old.value, new.value)
    try:
        from lanemon.workloads.qeval import compare_runs
    except ImportError:  # pragma: no cover - qeval is part of lanemon
        return {**base, "significant": False, "basis": "paired test unavailable"}
    paired = compare_runs(old.extra or {}, new.extra or {}, "old", "new")
    p = paired.get("p_value")
    sig = bool(base["better"]) and p is not None and p < QEVAL_ALPHA
    # the score compares the tasks both ran
    return {**base, "significant": sig,
            "basis": f"McNemar p = {p:.3f} (broke {paired.get('broke')}, fixed {paired.get('fixed')})"
            if p is not None else "McNemar: no paired tasks"}


# ----------------------------------------------------------------- environment
def side_env(analysis: dict[str, Any], lane: str | None = None) -> dict[str, Any]:
    env = analysis.get("environment") or {}
    out = {
        "recording": env.get("recording"),
        "created": env.get("created"),
        "command": env.get("command"),
        "lanemon": env.get("lanemon"),
        "duration_s": env.get("duration_s"),
        "lanes": [{"name": x.get("name"), "model": x.get("model"), "url": x.get("url")}
                  for x in env.get("lanes") or []],
    }
    if lane is not None:
        out["lane"] = lane
    return out


# ----------------------------------------------------------------- compare
def _row(old: Cell | None, new: Cell | None, lane: str) -> dict[str, Any]:
    ref = old or new
    assert ref is not None
    metric = M[ref.metric]
    if ref.bench == "qeval" and ref.metric == "passed" and old is not None and new is not None:
        j = _qeval_judge(old, new)
    else:
        j = judge(metric, old.value if old else None, new.value if new else None,
                  old.reps if old else (), new.reps if new else ())
    return {
        "bench": ref.bench, "lane": lane, "cell_kind": ref.cell_kind, "cell": ref.cell, "metric": ref.metric,
        "label": metric.label, "unit": metric.unit, "direction": metric.better,
        "old": old.value if old else None, "new": new.value if new else None,
        "old_range": [min(old.reps), max(old.reps)] if old and len(old.reps) >= 2 else None,
        "new_range": [min(new.reps), max(new.reps)] if new and len(new.reps) >= 2 else None,
        **j,
    }


def _only(cs: list[Cell], keys: set[tuple], lane_of=lambda c: c.lane) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen = set()
    for c in cs:
        if c.key in keys:
            k = (c.bench, lane_of(c), c.cell_kind, c.cell)
            if k not in seen:
                seen.add(k)
                out.append({"bench": c.bench, "lane": lane_of(c), "cell_kind": c.cell_kind, "cell": c.cell})
    return out


def _summary(rows: list[dict[str, Any]], only_old: list, only_new: list) -> dict[str, Any]:
    return {
        "significant_better": sum(1 for r in rows if r["significant"] and r["better"] == "new"),
        "significant_worse": sum(1 for r in rows if r["significant"] and r["better"] == "old"),
        "noise": sum(1 for r in rows if not r["significant"]),
        "rows": len(rows),
        "only_old": len(only_old),
        "only_new": len(only_new),
    }


def _keep_task_row(row: dict[str, Any]) -> bool:
    # qeval tasks: only those that changed (the score row carries the paired test)
    return row["metric"] != "task_passed" or row["old"] != row["new"]


def _lane_ok(lane: str, wanted: set[str] | None) -> bool:
    return wanted is None or all(part in wanted for part in lane.split("~"))


def compare(old: dict[str, Any], new: dict[str, Any], *, lanes: Sequence[str] | None = None) -> dict[str, Any]:
    """OLD vs NEW session: the documented compare dict (docs/JSON.md, "compare")."""
    wanted = set(lanes) if lanes else None
    co = [c for c in cells(old) if _lane_ok(c.lane, wanted)]
    cn = [c for c in cells(new) if _lane_ok(c.lane, wanted)]
    by_new = {c.key: c for c in cn}
    by_old = {c.key: c for c in co}
    rows = [_row(c, by_new[c.key], c.lane) for c in co if c.key in by_new]
    rows = [r for r in rows if _keep_task_row(r)]
    only_old = _only(co, set(by_old) - set(by_new))
    only_new = _only(cn, set(by_new) - set(by_old))
    return {"mode": "sessions", "old": side_env(old), "new": side_env(new), "rows": rows,
            "only_old": only_old, "only_new": only_new, "summary": _summary(rows, only_old, only_new),
            "noise_bands": dict(NOISE_BANDS), "warnings": list(old.get("warnings") or [])
            + list(new.get("warnings") or [])}


def compare_lanes(analysis: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    """Lane ``a`` (as OLD) vs lane ``b`` (as NEW) within one session; every ratio is b / a."""
    all_cells = cells(analysis)
    pair = f"{a} vs {b}"

    def strip(c: Cell) -> tuple:
        return (c.bench, c.cell_kind, c.cell, c.metric)

    ca = [c for c in all_cells if c.lane == a]
    cb = [c for c in all_cells if c.lane == b]
    by_b = {strip(c): c for c in cb}
    by_a = {strip(c): c for c in ca}
    rows = [_row(c, by_b[strip(c)], pair) for c in ca if strip(c) in by_b]
    rows = [r for r in rows if _keep_task_row(r)]
    only_a = [c for c in ca if strip(c) not in by_b]
    only_b = [c for c in cb if strip(c) not in by_a]
    only_old = _only(only_a, {c.key for c in only_a})
    only_new = _only(only_b, {c.key for c in only_b})
    env = side_env(analysis)
    return {"mode": "lanes", "old": {**env, "lane": a}, "new": {**env, "lane": b}, "rows": rows,
            "only_old": only_old, "only_new": only_new, "summary": _summary(rows, only_old, only_new),
            "noise_bands": dict(NOISE_BANDS), "warnings": list(analysis.get("warnings") or [])}


def recording_lanes(analysis: dict[str, Any]) -> list[str]:
    """Lane names with results in a session (environment lanes first)."""
    names = [x.get("name") for x in (analysis.get("environment") or {}).get("lanes") or []]
    for c in cells(analysis):
        for part in c.lane.split("~"):
            if part not in names:
                names.append(part)
    return [n for n in names if n]


# ----------------------------------------------------------------- text helpers
def value_text(v: Any, unit: str, metric: str = "") -> str:
    if v is None:
        return "—"
    if metric == "task_passed":
        return "pass" if v else "fail"
    if unit == "tok/s":
        return tok(v)
    if unit == "s":
        return secs(v)
    if unit == "nats":
        return f"{v:.4f}"
    return f"{v:g}"


def range_text(r: Any, unit: str) -> str:
    return "" if not r else f" ({value_text(r[0], unit)}–{value_text(r[1], unit)})"


def ratio_str(r: dict[str, Any]) -> str:
    return "—" if r.get("ratio") is None else f"{r['ratio']:.3f}×"


def change_text(r: dict[str, Any], names: tuple[str, str] = ("old", "new")) -> str:
    """``better, significant`` / ``worse, noise`` / ``same`` (from NEW's point of view)."""
    if r["better"] is None:
        return "same" if r["old"] == r["new"] else "—"
    word = "better" if r["better"] == "new" else "worse"
    if names != ("old", "new"):
        word = f"{names[1]} {word}"
    return f"{word}, {'significant' if r['significant'] else 'noise'}"


def side_names(result: dict[str, Any]) -> tuple[str, str]:
    if result.get("mode") == "lanes":
        return str(result["old"].get("lane")), str(result["new"].get("lane"))
    return "old", "new"


def side_title(result: dict[str, Any], side: str) -> str:
    env = result[side]
    if result.get("mode") == "lanes":
        model = next((x.get("model") for x in env.get("lanes") or [] if x.get("name") == env.get("lane")), None)
        return f"lane {env.get('lane')}" + (f" ({model})" if model else "")
    bits = [str(env.get("recording") or "?")]
    if env.get("created"):
        bits.append(str(env["created"]))
    if env.get("command"):
        bits.append(str(env["command"]))
    return " · ".join(bits)


def cell_text(r: dict[str, Any]) -> str:
    if r["cell_kind"] == "length":
        return f"{length_label(r['cell'])} tok"
    if r["cell_kind"] == "category":
        return f"{r['cell']} (C1)"
    return str(r["cell"])


def summary_line(result: dict[str, Any]) -> str:
    s = result["summary"]
    a, b = side_names(result)
    who = "new" if (a, b) == ("old", "new") else b
    return (f"{s['rows']} figures compared: {s['significant_better']} significantly better in {who}, "
            f"{s['significant_worse']} significantly worse, {s['noise']} within noise; "
            f"{s['only_old']} cells only in {a}, {s['only_new']} only in {b}.")


def headline(result: dict[str, Any], n: int = 5) -> list[str]:
    """The largest significant changes as sentences (worse first)."""
    a, b = side_names(result)
    sig = [r for r in result["rows"] if r["significant"] and r["better"]]
    sig.sort(key=lambda r: (r["better"] != "old", -abs(math.log(r["ratio"])) if r.get("ratio") else 0))
    out = []
    for r in sig[:n]:
        lane = "" if result.get("mode") == "lanes" else f" on {r['lane']}"
        word = "better" if r["better"] == "new" else "worse"
        out.append(f"{r['bench']} {cell_text(r)} {r['label']}{lane}: {value_text(r['old'], r['unit'], r['metric'])}"
                   f" → {value_text(r['new'], r['unit'], r['metric'])} ({ratio_str(r)}), {b} {word}")
    return out


HEADERS = ["bench", "lane", "cell", "metric", "old", "new", "ratio", "change"]


def _headers(result: dict[str, Any]) -> list[str]:
    """Table columns; in lanes mode there is no lane column (every row is "A vs B")."""
    a, b = side_names(result)
    if result.get("mode") == "lanes":
        return ["bench", "cell", "metric", a, b, f"{b}/{a}", "change"]
    return ["bench", "lane", "cell", "metric", a, b, "ratio", "change"]


def table_rows(result: dict[str, Any]) -> list[list[str]]:
    names = side_names(result)
    lanes_mode = result.get("mode") == "lanes"
    return [[r["bench"]] + ([] if lanes_mode else [r["lane"]]) + [
             cell_text(r), r["label"],
             value_text(r["old"], r["unit"], r["metric"]) + range_text(r["old_range"], r["unit"]),
             value_text(r["new"], r["unit"], r["metric"]) + range_text(r["new_range"], r["unit"]),
             ratio_str(r), change_text(r, names)] for r in result["rows"]]


def _only_text(items: list[dict[str, Any]]) -> list[str]:
    return [f"{x['bench']} {x['lane']} {cell_text({**x, 'cell': x['cell']})}" for x in items]


NOTE = ("Significant = beyond the runs' own spread: rep ranges (min–max) that do not overlap; without reps a "
        "change larger than the noise band (5 % throughput, 10 % TTFT/latency, 10 % KL, widened to a side's rep "
        "spread); counts must match exactly; the qeval score uses the paired exact McNemar test (p < 0.05).")


# ----------------------------------------------------------------- renderers
def rich_renderables(result: dict[str, Any]) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    a, b = side_names(result)
    out: list[Any] = [Text(f"{a}: {side_title(result, 'old')}"), Text(f"{b}: {side_title(result, 'new')}"),
                      Text(summary_line(result), style="bold")]
    t = Table(show_lines=False, header_style="bold")
    for h in _headers(result):
        t.add_column(h, justify="right" if h not in ("bench", "lane", "cell", "metric", "change") else "left")
    for r, cells_ in zip(result["rows"], table_rows(result)):
        style = None
        if r["significant"]:
            style = "bold green" if r["better"] == "new" else "bold red"
        elif r["better"] is not None:
            style = "dim"
        t.add_row(*cells_, style=style)
    out.append(t)
    for label, items in ((f"only in {a}", result["only_old"]), (f"only in {b}", result["only_new"])):
        if items:
            out.append(Text(f"{label}: " + ", ".join(_only_text(items))))
    for w in result.get("warnings") or []:
        out.append(Text(f"warning: {w}", style="yellow"))
    out.append(Text(NOTE, style="dim"))
    return out


def render_table(result: dict[str, Any], width: int = 150) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False, highlight=False)
    for r in rich_renderables(result):
        console.print(r)
    return buf.getvalue()


def render_markdown(result: dict[str, Any]) -> str:
    a, b = side_names(result)
    title = f"Compare: lane {a} vs lane {b}" if result.get("mode") == "lanes" else "Compare: old vs new session"
    lines = [f"# {title}", "", f"- **{a}**: {side_title(result, 'old')}", f"- **{b}**: {side_title(result, 'new')}",
             "", f"**{summary_line(result)}**", ""]
    for w in result.get("warnings") or []:
        lines += [f"> **Warning:** {w}", ""]
    head = headline(result)
    if head:
        lines += ["## Significant changes", ""] + [f"- {s}" for s in head] + [""]
    lines += ["## All figures", ""]
    rows = table_rows(result)
    for r, cells_ in zip(result["rows"], rows):
        if r["significant"]:
            cells_[-1] = f"**{cells_[-1]}**"
    lines += md_table(_headers(result), rows) + [""]
    for label, items in ((f"Only in {a}", result["only_old"]), (f"Only in {b}", result["only_new"])):
        if items:
            lines += [f"## {label}", ""] + [f"- {x}" for x in _only_text(items)] + [""]
    lines += [f"_{NOTE}_", ""]
    return "\n".join(lines)


def chart_series(result: dict[str, Any], bench: str, metric: str, cell_kind: str
                 ) -> tuple[list[str], dict[str, list[float | None]]]:
    """(cells in order, {"LANE old"/"LANE new" or the two lane names: values}) of one metric's rows."""
    rows = [r for r in result["rows"] if r["bench"] == bench and r["metric"] == metric and r["cell_kind"] == cell_kind]
    xs: list[str] = []
    for r in rows:
        if r["cell"] not in xs:
            xs.append(r["cell"])
    xs.sort(key=lambda c: (int_key(c.lstrip("C")), c))
    a, b = side_names(result)
    series: dict[str, list[float | None]] = {}
    lanes_mode = result.get("mode") == "lanes"
    for r in rows:
        for side, name in (("old", a), ("new", b)):
            key = name if lanes_mode else f"{r['lane']} {name}"
            series.setdefault(key, [None] * len(xs))[xs.index(r["cell"])] = r[side]
    return xs, series


def _charts(result: dict[str, Any]) -> list[Chart]:
    charts = []
    xs, series = chart_series(result, "decode", "aggregate_tok_s", "level")
    if xs:
        charts.append(Chart("line", "Decode: aggregate throughput vs concurrency, overlaid", "concurrent streams",
                                "aggregate tok/s", xs, series, colors={k: i for i, k in enumerate(series)}))
    for bench, title in (("prefill", "Prefill ladder, overlaid"), ("needles", "Needles: prefill by context")):
        xs, series = chart_series(result, bench, "prefill_tok_s", "length")
        if xs:
            charts.append(Chart("bars", title, "prompt tokens", "prefill tok/s",
                                    [length_label(x) for x in xs], series,
                                    colors={k: i for i, k in enumerate(series)}))
    xs, series = chart_series(result, "decode", "per_stream_tok_s", "category")
    if xs:
        charts.append(Chart("bars", "Per-stream decode at C1 by category", "category", "tok/s", xs, series,
                                colors={k: i for i, k in enumerate(series)}))
    return charts


EXTRA_CSS = """
tr.better td { background: rgba(27,158,119,.14); } tr.worse td { background: rgba(217,95,2,.16); }
tr.better td:last-child, tr.worse td:last-child { font-weight: 600; } tr.noise td { color: var(--muted); }
"""


def render_html(result: dict[str, Any]) -> str:
    e = esc
    a, b = side_names(result)
    title = f"Compare: lane {a} vs lane {b}" if result.get("mode") == "lanes" else "Compare: old vs new session"
    body = [f"<h1>{e(title)}</h1>",
            f'<p class="sub">{e(a)}: {e(side_title(result, "old"))}<br>{e(b)}: {e(side_title(result, "new"))}</p>']
    for w in result.get("warnings") or []:
        body.append(f'<p class="warn"><strong>Warning:</strong> {e(w)}</p>')
    head = headline(result)
    body.append('<section class="verdict"><h2>Summary</h2><p>' + e(summary_line(result)) + "</p>"
                + ("<ul>" + "".join(f"<li>{e(s)}</li>" for s in head) + "</ul>" if head else "") + "</section>")
    for i, chart in enumerate(_charts(result), 1):
        svg = svg_chart(chart, [])
        if svg:
            body.append(f"<figure>{svg}<figcaption>Figure {i}. {e(chart.title)}.</figcaption></figure>")
    body.append("<h2>All figures</h2>")
    heads = _headers(result)

    first_num = heads.index("metric") + 1

    def align(j: int) -> str:
        return "" if first_num <= j < first_num + 3 else ' class="t"'

    t = ["<table><thead><tr>" + "".join(f"<th{align(j)}>{e(h)}</th>" for j, h in enumerate(heads))
         + "</tr></thead><tbody>"]
    for r, cells_ in zip(result["rows"], table_rows(result)):
        cls = ("better" if r["better"] == "new" else "worse") if r["significant"] else "noise"
        t.append(f'<tr class="{cls}" title="{e(r["basis"])}">'
                 + "".join(f"<td{align(j)}>{e(c)}</td>" for j, c in enumerate(cells_)) + "</tr>")
    t.append("</tbody></table>")
    body.append("".join(t))
    for label, items in ((f"Only in {a}", result["only_old"]), (f"Only in {b}", result["only_new"])):
        if items:
            body.append(f"<h2>{e(label)}</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in _only_text(items)) + "</ul>")
    body.append(f'<p class="notes">{e(NOTE)}</p>')
    return html_page(title, body, CSS + EXTRA_CSS)


def render(result: dict[str, Any], fmt: str) -> str:
    if fmt == "table":
        return render_table(result)
    if fmt == "md":
        return render_markdown(result)
    if fmt == "html":
        return render_html(result)
    if fmt == "json":
        return render_json(result)
    raise ValueError(f"unknown compare format {fmt!r} (choose: {', '.join(FORMATS)})")


__all__ = ["FORMATS", "NOISE_BANDS", "cells", "compare", "compare_lanes", "judge", "render", "recording_lanes"]
