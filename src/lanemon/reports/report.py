"""Reports from an analysis dict (:func:`lanemon.reports.analyse.analyze`): Markdown, HTML, JSON, CSV.

Pure functions, no IO, no Textual.  Every renderer works from the same
intermediate: :func:`sections` turns the analysis into titled tables (and
chart specs), :func:`verdict` turns the numbers into sentences in the
write-up's style.  Markdown prints the tables (charts as text sparklines),
HTML adds inline SVG charts drawn here (one self-contained file: no scripts,
no external CSS, fonts or images; light and dark via ``prefers-color-scheme``).

Sections without data are left out; the verdict only says what the numbers
show (a lead under :data:`TIE` is called a tie).  Report order: verdict,
decode, TTFT, categories, prefill, needles, races, quality gate (qeval),
greedy agreement, logprob divergence (KL), agent gauntlet, environment.
"""

from __future__ import annotations

import csv
import html
import io
import math
from dataclasses import dataclass, field
from typing import Any

import orjson

FORMATS = ("md", "html", "json", "csv")
TIE = 1.03
"""Leads smaller than this ratio are reported as ties."""

SPARK = "▁▂▃▄▅▆▇█"
NUMBER_WORDS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight",
                9: "Nine", 10: "Ten", 11: "Eleven", 12: "Twelve"}

CSV_COLUMNS = (
    "bench", "lane", "cell_kind", "cell", "tok_s", "ttft_s", "ttft_p90_s", "ttft_p99_s", "per_stream_tok_s",
    "min_tok_s", "max_tok_s", "reps", "unstable", "prompt_tokens", "cache_hit_tok_s", "output_tokens",
    "tokens_estimated", "requests", "errors", "found", "winner", "error",
    "vs_lane", "rep", "passed", "reason", "task_kind", "seconds", "paired", "count", "p_value",
    "first_divergence_word", "exact", "words", "vs_words", "status", "kl", "kl_p50", "kl_p99", "positions",
    "tool_calls", "malformed_calls", "decode_s", "cached_tokens",
)
"""Columns of the CSV report (see docs/REPORTS.md)."""


# ----------------------------------------------------------------- formatting
def _num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def tok(v: Any) -> str:
    """``263`` / ``88.4`` / ``12,542`` (tok/s, unit said by the column)."""
    x = _num(v)
    if x is None:
        return "—"
    if x >= 10:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def secs(v: Any) -> str:
    x = _num(v)
    if x is None:
        return "—"
    if x < 0.1:
        return f"{x * 1000:.0f} ms"
    if x < 10:
        return f"{x:.2f} s"
    if x < 100:
        return f"{x:.1f} s"
    return f"{x:,.0f} s"


def ratio_text(lo: float, hi: float | None = None) -> str:
    a = f"{lo:.1f}"
    if hi is None or f"{hi:.1f}" == a:
        return f"{a}×"
    return f"{a}–{hi:.1f}×"


def length_label(n: Any) -> str:
    """Token counts as the write-up says them: ``2,000``, ``131K`` (≥ 10K), ``1.2M``."""
    x = _num(n)
    if x is None:
        return str(n)
    if x >= 1_000_000:
        return f"{x / 1e6:.1f}M"
    if x >= 10_000:
        return f"{x / 1000:.0f}K"
    return f"{x:,.0f}"


def _int_key(k: Any) -> float:
    try:
        return float(k)
    except (TypeError, ValueError):
        return math.inf


def _sorted_keys(d: dict[str, Any]) -> list[str]:
    return sorted(d, key=lambda k: (_int_key(k), str(k)))


def sparkline(values: list[float | None], top: float | None = None) -> str:
    xs = [v for v in values if v is not None]
    if not xs:
        return ""
    hi = top if top else max(xs)
    out = []
    for v in values:
        if v is None or hi <= 0:
            out.append(" ")
        else:
            out.append(SPARK[min(len(SPARK) - 1, max(0, round(v / hi * (len(SPARK) - 1))))])
    return "".join(out)


# ----------------------------------------------------------------- lane order
def lane_names(analysis: dict[str, Any]) -> list[str]:
    """Lanes in header order, then any that appear only in results."""
    names: list[str] = [lane["name"] for lane in analysis.get("environment", {}).get("lanes", []) if lane.get("name")]
    for bench in ("decode", "prefill", "needles", "race", "agree", "kl", "gauntlet"):
        for name in (analysis.get(bench) or {}).get("lanes", {}) or {}:
            if isinstance(name, str) and name not in names:
                names.append(name)
    for name in qeval_runs(analysis.get("qeval")):
        if name not in names:
            names.append(name)
    return names


def _present(analysis: dict[str, Any], bench: str) -> list[str]:
    lanes = (analysis.get(bench) or {}).get("lanes") or {}
    return [n for n in lane_names(analysis) if n in lanes]


# ----------------------------------------------------------------- the data
def decode_levels(decode: dict[str, Any], lane: str) -> dict[int, dict[str, Any]]:
    levels = ((decode.get("lanes") or {}).get(lane) or {}).get("levels") or {}
    out = {}
    for k, v in levels.items():
        try:
            out[int(float(k))] = v or {}
        except (TypeError, ValueError):
            continue
    return dict(sorted(out.items()))


def _agg(cell: dict[str, Any]) -> float | None:
    return _num(cell.get("aggregate_tok_s"))


def _crossover(decode: dict[str, Any], lanes: list[str]) -> dict[str, Any] | None:
    if "crossover" in decode:
        c = decode.get("crossover")
        return c if isinstance(c, dict) and c.get("between") else None
    # older/hand-made dicts without the key: the first change of leader
    if len(lanes) < 2:
        return None
    per = {n: decode_levels(decode, n) for n in lanes}
    common = sorted(set.intersection(*(set(k for k, c in p.items() if _agg(c) is not None) for p in per.values())))
    prev = None
    for lvl in common:
        leader = max(lanes, key=lambda n: _agg(per[n][lvl]) or 0)
        if prev is not None and leader != prev[1]:
            return {"leader_before": prev[1], "leader_after": leader, "between": [prev[0], lvl]}
        prev = (lvl, leader)
    return None


def _c1(decode: dict[str, Any], lane: str) -> tuple[int, dict[str, Any]] | None:
    levels = decode_levels(decode, lane)
    if not levels:
        return None
    lvl = 1 if 1 in levels else min(levels)
    return lvl, levels[lvl]


def prefill_cells(prefill: dict[str, Any], lane: str) -> dict[str, dict[str, Any]]:
    return ((prefill.get("lanes") or {}).get(lane) or {}).get("lengths") or {}


# ----------------------------------------------------------------- verdict
def _word(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def _two(ranked: list[tuple[str, float]]) -> tuple[str, float, str, float]:
    (a, va), (b, vb) = ranked[0], ranked[1]
    return a, va, b, vb


def _prefill_lead(analysis: dict[str, Any]) -> dict[str, Any] | None:
    """Which lane prefills faster (cold), by how much, over which lengths."""
    prefill = analysis.get("prefill") or {}
    lanes = _present(analysis, "prefill")
    if len(lanes) < 2:
        return None
    lengths = set.intersection(*(set(prefill_cells(prefill, n)) for n in lanes))
    wins: dict[str, list[tuple[float, float, str]]] = {n: [] for n in lanes}
    for length in _sorted_keys({k: None for k in lengths}):
        vals = [(n, _num(prefill_cells(prefill, n)[length].get("prefill_tok_s"))) for n in lanes]
        vals = [(n, v) for n, v in vals if v]
        if len(vals) < 2:
            continue
        vals.sort(key=lambda t: -t[1])
        wins[vals[0][0]].append((vals[0][1] / vals[1][1], _int_key(length), length))
    total = sum(len(w) for w in wins.values())
    if not total:
        return None
    leader = max(wins, key=lambda n: len(wins[n]))
    ratios = [r for r, _, _ in wins[leader]]
    return {"leader": leader, "others": [n for n in lanes if n != leader], "lo": min(ratios), "hi": max(ratios),
            "won": len(wins[leader]), "of": total, "cells": wins[leader]}


def verdict(analysis: dict[str, Any]) -> list[str]:
    """Sentences in the write-up's style, each backed by the numbers in ``analysis``."""
    out: list[str] = []
    decode = analysis.get("decode") or {}
    d_lanes = _present(analysis, "decode")
    pre = _prefill_lead(analysis)
    pre_used = False

    if len(d_lanes) >= 2:
        c1 = {n: _c1(decode, n) for n in d_lanes}
        lvl1 = min(c[0] for c in c1.values() if c)
        ranked = sorted(((n, _agg(decode_levels(decode, n).get(lvl1, {}))) for n in d_lanes),
                        key=lambda t: -(t[1] or 0))
        ranked = [(n, v) for n, v in ranked if v]
        cross = _crossover(decode, d_lanes)
        if len(ranked) >= 2:
            a, va, b, vb = _two(ranked)
            r = va / vb
            who = "One user" if lvl1 == 1 else f"{_word(lvl1)} concurrent users"
            short = pre is not None and pre["leader"] != a
            if r < TIE:
                s = f"{who}: {a} and {b} tie on decode at C{lvl1} ({tok(va)} vs {tok(vb)} tok/s)"
            else:
                s = (f"{who}{', short prompts' if short else ''} → {a}: ~{ratio_text(r)} faster decode at "
                     f"C{lvl1} ({tok(va)} vs {tok(vb)} tok/s)")
                s += _ttft_clause(decode, a, b, lvl1)
                s += _category_clause(decode, a, b, lvl1)
            out.append(s + ".")
            top = max(set.intersection(*(set(k for k, c in decode_levels(decode, n).items() if _agg(c))
                                         for n in (a, b))), default=None)
            if cross and cross.get("leader_after") in d_lanes:
                after, before = cross["leader_after"], cross.get("leader_before", a)
                lo_c, hi_c = cross["between"][0], cross["between"][-1]
                longp = pre is not None and pre["leader"] == after
                s = f"{_word(int(hi_c))} or more users{' or long prompts' if longp else ''} → {after}: overtakes " \
                    f"between C{lo_c} and C{hi_c}"
                lvls_after = decode_levels(decode, after)
                lvls_before = decode_levels(decode, before)
                if top is not None and _agg(lvls_after.get(top, {})) and _agg(lvls_before.get(top, {})):
                    s += f" (C{top}: {tok(_agg(lvls_after[top]))} vs {tok(_agg(lvls_before[top]))} tok/s)"
                if longp:
                    s += f"; prefill {ratio_text(pre['lo'], pre['hi'])} faster"
                    pre_used = True
                out.append(s + ".")
            elif top is not None and top != lvl1:
                va_t = _agg(decode_levels(decode, a)[top])
                vb_t = _agg(decode_levels(decode, b)[top])
                if va_t and vb_t:
                    if va_t / vb_t >= TIE:
                        out.append(f"No crossover up to C{top}: {a} still leads there ({tok(va_t)} vs "
                                   f"{tok(vb_t)} tok/s, {ratio_text(va_t / vb_t)}).")
                    elif vb_t / va_t < TIE:
                        out.append(f"At C{top} the lanes tie ({tok(va_t)} vs {tok(vb_t)} tok/s).")
    elif len(d_lanes) == 1:
        n = d_lanes[0]
        levels = decode_levels(decode, n)
        vals = [(k, _agg(c)) for k, c in levels.items() if _agg(c)]
        if vals:
            best = max(vals, key=lambda t: t[1])
            out.append(f"Decode on {n}: {tok(vals[0][1])} tok/s at C{vals[0][0]}, peaking at {tok(best[1])} tok/s "
                       f"at C{best[0]}.")

    if pre is not None and not pre_used:
        lead, others = pre["leader"], pre["others"]
        if pre["hi"] < TIE:
            out.append(f"Prefill: {lead} and {', '.join(others)} tie.")
        else:
            where = "" if pre["won"] == pre["of"] else f" at {pre['won']} of {pre['of']} lengths"
            best = max(pre["cells"], key=lambda c: c[1])
            length = best[2]
            prefill = analysis["prefill"]
            v_lead = _num(prefill_cells(prefill, lead)[length].get("prefill_tok_s"))
            v_oth = _num(prefill_cells(prefill, others[0])[length].get("prefill_tok_s"))
            out.append(f"Long prompts → {lead}: prefill {ratio_text(pre['lo'], pre['hi'])} faster{where} "
                       f"({tok(v_lead)} vs {tok(v_oth)} tok/s at {length_label(length)}).")
    hits = _cache_hits(analysis)
    if hits:
        parts = [f"{n} {tok(v)} tok/s at {length_label(length)}" for n, length, v in hits]
        out.append("Prefix-cache hits (" + "; ".join(parts) + ") are cache hits, not prefill, and are left out "
                   "of the prefill figures.")
    s = _needles_sentence(analysis)
    if s:
        out.append(s)
    s = _race_sentence(analysis)
    if s:
        out.append(s)
    for fn in (_qeval_verdict, _agree_verdict, _kl_verdict, _gauntlet_verdict):
        s = fn(analysis)
        if s:
            out.append(s)
    errs = _error_sentence(analysis)
    if errs:
        out.append(errs)
    return out


def _ttft_clause(decode: dict[str, Any], a: str, b: str, lvl: int) -> str:
    ta = _num(decode_levels(decode, a).get(lvl, {}).get("ttft_p50_s"))
    tb = _num(decode_levels(decode, b).get(lvl, {}).get("ttft_p50_s"))
    if ta is None or tb is None:
        return ""
    if max(ta, tb) / max(min(ta, tb), 1e-9) < TIE:
        return f"; same TTFT ({secs(ta)})"
    if ta < tb:
        return f", TTFT {secs(ta)} vs {secs(tb)}"
    return f", though {b} answers first (TTFT {secs(tb)} vs {secs(ta)})"


def _category_clause(decode: dict[str, Any], a: str, b: str, lvl: int) -> str:
    ca = ((decode.get("lanes") or {}).get(a) or {}).get("categories") or {}
    cb = ((decode.get("lanes") or {}).get(b) or {}).get("categories") or {}
    common = [c for c in ca if c in cb and _num(ca[c].get("per_stream_tok_s")) and _num(cb[c].get("per_stream_tok_s"))]
    if len(common) < 2:
        return ""
    diffs = sorted(((_num(ca[c]["per_stream_tok_s"]) / _num(cb[c]["per_stream_tok_s"]), c) for c in common),
                   reverse=True)
    faster = [c for r, c in diffs if r >= 1.0]
    if len(faster) == len(common):
        top = ", ".join(f"{c} {tok(ca[c]['per_stream_tok_s'])} vs {tok(cb[c]['per_stream_tok_s'])}"
                        for _, c in diffs[:2])
        return f"; faster in every prompt category ({top})"
    if not faster:
        top = ", ".join(f"{c} {tok(cb[c]['per_stream_tok_s'])} vs {tok(ca[c]['per_stream_tok_s'])}"
                        for _, c in diffs[::-1][:2])
        return f"; but {b} is faster per stream in every prompt category ({top})"
    return f"; faster in {len(faster)} of {len(common)} prompt categories"


def _cache_hits(analysis: dict[str, Any]) -> list[tuple[str, str, float]]:
    prefill = analysis.get("prefill") or {}
    out = []
    for n in _present(analysis, "prefill"):
        cells = prefill_cells(prefill, n)
        for length in _sorted_keys(cells):
            v = _num(cells[length].get("cache_hit_tok_s"))
            if v:
                out.append((n, length, v))
    return out


def _needles_sentence(analysis: dict[str, Any]) -> str | None:
    needles = analysis.get("needles") or {}
    lanes = _present(analysis, "needles")
    if not lanes:
        return None
    missed, lengths, total = [], set(), 0
    for n in lanes:
        cells = ((needles["lanes"].get(n) or {}).get("lengths")) or {}
        for length, c in cells.items():
            lengths.add(length)
            total += 1
            if not c.get("found"):
                missed.append(f"{n} at {length_label(length)}" + (" (error)" if c.get("error") else ""))
    if not total:
        return None
    ls = _sorted_keys({k: None for k in lengths})
    span = length_label(ls[0]) if len(ls) == 1 else f"{length_label(ls[0])}–{length_label(ls[-1])}"
    who = "both lanes" if len(lanes) == 2 else ("every lane" if len(lanes) > 2 else f"lane {lanes[0]}")
    if not missed:
        return f"Needles: all found on {who} ({span})."
    return f"Needles: missed by {', '.join(missed)}; {total - len(missed)} of {total} found."


def race_wins(race: dict[str, Any]) -> dict[str, int]:
    wins: dict[str, int] = {}
    for r in race.get("races") or []:
        w = r.get("winner")
        if w:
            wins[w] = wins.get(w, 0) + 1
    return wins


def _race_sentence(analysis: dict[str, Any]) -> str | None:
    race = analysis.get("race") or {}
    races = race.get("races") or []
    if not races:
        return None
    wins = race_wins(race)
    n = len(races)
    if not wins:
        return f"Races: no winner in {n} race{'s' if n != 1 else ''}."
    ranked = sorted(wins.items(), key=lambda t: -t[1])
    lead, k = ranked[0]
    rest = ", ".join(f"{name} {w}" for name, w in ranked[1:])
    if len(ranked) > 1 and ranked[1][1] == k:
        return f"Races: split, {', '.join(f'{name} {w}' for name, w in ranked)} of {n}."
    return f"Races → {lead}: won {k} of {n}" + (f" ({rest})" if rest else "") + "."


def _error_sentence(analysis: dict[str, Any]) -> str | None:
    decode = analysis.get("decode") or {}
    parts = []
    for n in _present(analysis, "decode"):
        errs = sum(int(_num(c.get("errors")) or 0) for c in decode_levels(decode, n).values())
        if errs:
            parts.append(f"{n} {errs}")
    if not parts:
        return None
    return f"Decode errors ({', '.join(parts)}) are counted, never averaged in; those cells cover completed " \
           f"requests only."


# ----------------------------------------------------------------- sections
@dataclass
class Chart:
    kind: str  # "line" | "bars"
    title: str
    x_title: str
    y_title: str
    x: list[str]
    series: dict[str, list[float | None]]
    notes: dict[tuple[str, int], str] = field(default_factory=dict)
    """(series, x index) -> small label drawn above that point/bar (e.g. "cache hit 12.5K")."""
    band: tuple[int, int] | None = None
    band_label: str = ""
    ranges: dict[tuple[str, int], tuple[float, float]] = field(default_factory=dict)
    """(series, x index) -> (min, max) over reps, drawn as a whisker."""
    stack: dict[str, list[float | None]] = field(default_factory=dict)
    """bars: series -> a second segment drawn (lighter) on top of that series' bar."""
    stack_label: tuple[str, str] = ("", "")
    """legend words for the (solid, light) segments of stacked bars."""
    integer: bool = False
    """values are counts: whole-number ticks and labels."""
    colors: dict[str, int] = field(default_factory=dict)
    """series -> colour index, for series that are not lane names."""


@dataclass
class Section:
    key: str
    title: str
    caption: str
    headers: list[str]
    rows: list[list[str]]
    chart: Chart | None = None
    spark: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    """the section's one-sentence finding (printed above the table)."""
    more: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)
    """further (title, headers, rows) tables, after the main one."""


def sections(analysis: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    decode = analysis.get("decode") or {}
    d_lanes = _present(analysis, "decode")
    if d_lanes:
        out += _decode_sections(decode, d_lanes)
    p_lanes = _present(analysis, "prefill")
    if p_lanes:
        out.append(_prefill_section(analysis["prefill"], p_lanes))
    n_lanes = _present(analysis, "needles")
    if n_lanes:
        out.append(_needles_section(analysis["needles"], n_lanes))
    race = analysis.get("race") or {}
    if race.get("races"):
        out.append(_race_section(race, lane_names(analysis)))
    order = lane_names(analysis)
    q = analysis.get("qeval")
    if qeval_runs(q):
        out.append(_qeval_section(q, order))
    ag = analysis.get("agree") or {}
    if ag.get("total") or ag.get("prompts"):
        out.append(_agree_section(ag))
    kl = analysis.get("kl") or {}
    if kl.get("lanes"):
        out.append(_kl_section(kl, order))
    g = analysis.get("gauntlet") or {}
    if _gauntlet_lanes(g, order):
        out += _gauntlet_sections(g, order)
    return out


def _decode_sections(decode: dict[str, Any], lanes: list[str]) -> list[Section]:
    out = []
    per = {n: decode_levels(decode, n) for n in lanes}
    levels = sorted(set().union(*(set(p) for p in per.values())))
    cross = _crossover(decode, lanes)
    headers = ["Concurrency"] + [f"{n} tok/s" for n in lanes] + (["Leader"] if len(lanes) > 1 else [])
    rows, any_unstable, any_est = [], False, False
    for lvl in levels:
        row = [f"C{lvl}"]
        vals = []
        for n in lanes:
            c = per[n].get(lvl)
            if not c:
                row.append("—")
                continue
            v = _agg(c)
            vals.append((n, v))
            cell = tok(v)
            mn, mx = _num(c.get("min")), _num(c.get("max"))
            if len(c.get("reps") or []) > 1 and mn is not None and mx is not None:
                cell += f" ({tok(mn)}–{tok(mx)})"
            if c.get("unstable"):
                cell += " †"
                any_unstable = True
            if c.get("tokens_estimated"):
                cell += " ~"
                any_est = True
            if _num(c.get("errors")):
                cell += f" [{int(_num(c.get('errors')))} err]"
            row.append(cell)
        if len(lanes) > 1:
            vals = [(n, v) for n, v in vals if v]
            if len(vals) >= 2:
                vals.sort(key=lambda t: -t[1])
                r = vals[0][1] / vals[1][1]
                row.append("tie" if r < TIE else f"{vals[0][0]} ({r:.2f}×)")
            else:
                row.append("—")
        rows.append(row)
    caption = "Aggregate decode throughput (total output tokens / wall time of the level) by concurrency."
    if cross:
        caption += (f" {cross.get('leader_before')} leads up to C{cross['between'][0]}, "
                    f"{cross.get('leader_after')} from C{cross['between'][-1]}.")
    notes = []
    if any_unstable:
        notes.append("† unstable: the reps of this cell differ by more than the bench's stability threshold.")
    if any_est:
        notes.append("~ token counts estimated from chunks (the lane sent no usage block).")
    top = max((v for p in per.values() for c in p.values() if (v := _agg(c))), default=0)
    spark = [f"{n}  {sparkline([_agg(per[n].get(lvl, {})) for lvl in levels], top)}  "
             f"C{levels[0]}→C{levels[-1]}" for n in lanes] if levels else []
    band = None
    if cross:
        try:
            band = (levels.index(int(cross["between"][0])), levels.index(int(cross["between"][-1])))
        except ValueError:
            band = None
    chart = Chart("line", "Aggregate decode vs concurrency", "concurrent streams (C)", "aggregate decode (tok/s)",
                  [f"C{lvl}" for lvl in levels], {n: [_agg(per[n].get(lvl, {})) for lvl in levels] for n in lanes},
                  band=band, band_label="crossover")
    # goodput (bench decode --slo): share and rate of requests meeting every target, per lane and level
    more = []
    slo = (decode.get("config") or {}).get("slo")
    if slo and any("goodput" in c for p in per.values() for c in p.values()):
        def _gp(c: dict[str, Any]) -> str:
            g = c.get("goodput") or {}
            share, rate = _num(g.get("share")), _num(g.get("rate_rps"))
            if share is None:
                return "—"
            return f"{share * 100:.0f}%" + (f" · {rate:.2f} req/s" if rate is not None else "")
        targets = ", ".join(f"{k.upper()} ≤ {v:g} s" for k, v in slo.items())
        more.append((f"Goodput (requests meeting {targets})", ["Concurrency"] + [f"{n} goodput" for n in lanes],
                     [[f"C{lvl}"] + [_gp(per[n].get(lvl) or {}) for n in lanes] for lvl in levels]))
    out.append(Section("decode", "Decode: aggregate throughput vs concurrency", caption, headers, rows, chart,
                       spark, notes, more=more))

    # TTFT and per-stream detail at C1
    c1 = {n: _c1(decode, n) for n in lanes}
    lvl1 = min((c[0] for c in c1.values() if c), default=1)
    headers = ["Lane", "TTFT p50", "TTFT p90", "TTFT p99", "per-stream p50 tok/s", "requests", "errors"]
    rows = []
    series: dict[str, list[float | None]] = {}
    for n in lanes:
        c = per[n].get(lvl1) or {}
        rows.append([n, secs(c.get("ttft_p50_s")), secs(c.get("ttft_p90_s")), secs(c.get("ttft_p99_s")),
                     tok(c.get("per_stream_tok_s_p50")) + (" ~" if c.get("tokens_estimated") else ""),
                     str(c.get("requests", "—")), str(c.get("errors", "—"))])
        series[n] = [_num(c.get("ttft_p50_s")), _num(c.get("ttft_p90_s")), _num(c.get("ttft_p99_s"))]
    chart = Chart("bars", f"TTFT at C{lvl1}", "percentile", "time to first token (s)", ["p50", "p90", "p99"], series)
    out.append(Section("ttft", f"Time to first token at C{lvl1}",
                       "Request sent → first token-carrying chunk, over the completed requests of the level.",
                       headers, rows, chart))

    # per-category at C1
    cats_by_lane = {n: ((decode.get("lanes") or {}).get(n) or {}).get("categories") or {} for n in lanes}
    cats: list[str] = []
    for n in lanes:
        for c in cats_by_lane[n]:
            if c not in cats:
                cats.append(c)
    if cats:
        headers = ["Category"] + [f"{n} tok/s" for n in lanes] + ([f"{lanes[0]}/{lanes[1]}"] if len(lanes) == 2 else [])
        rows = []
        for cat in cats:
            vals = [_num((cats_by_lane[n].get(cat) or {}).get("per_stream_tok_s")) for n in lanes]
            row = [cat] + [tok(v) + (f" [{e} err]" if (e := (cats_by_lane[n].get(cat) or {}).get("errors")) else "")
                           for n, v in zip(lanes, vals)]
            if len(lanes) == 2:
                row.append(f"{vals[0] / vals[1]:.2f}×" if vals[0] and vals[1] else "—")
            rows.append(row)
        chart = Chart("bars", f"Per-stream decode at C{lvl1} by prompt category", "prompt category",
                      "per-stream decode (tok/s)", cats,
                      {n: [_num((cats_by_lane[n].get(c) or {}).get("per_stream_tok_s")) for c in cats] for n in lanes})
        out.append(Section("categories", f"Per-category decode at C{lvl1}",
                           "Per-stream decode tok/s ((output tokens − 1) / (E2E − TTFT)), median per category.",
                           headers, rows, chart))
    return out


def _prefill_section(prefill: dict[str, Any], lanes: list[str]) -> Section:
    cells = {n: prefill_cells(prefill, n) for n in lanes}
    lengths = _sorted_keys({k: None for n in lanes for k in cells[n]})
    headers = ["Prompt tokens"] + [f"{n} prefill tok/s (TTFT)" for n in lanes]
    if len(lanes) == 2:
        headers.append(f"{lanes[1]}/{lanes[0]}")
    rows, notes = [], []
    series: dict[str, list[float | None]] = {n: [] for n in lanes}
    chart_notes: dict[tuple[str, int], str] = {}
    ranges: dict[tuple[str, int], tuple[float, float]] = {}
    any_unstable = any_hit = False
    for i, length in enumerate(lengths):
        row = [length_label(length) if _int_key(length) < 10_000 else f"{_int_key(length):,.0f}"]
        vals = []
        for n in lanes:
            c = cells[n].get(length)
            if not c:
                row.append("—")
                series[n].append(None)
                vals.append(None)
                continue
            v = _num(c.get("prefill_tok_s"))
            vals.append(v)
            series[n].append(v)
            if c.get("error") and v is None:
                row.append(f"error: {err_text(c.get('error'), 60)}")
                continue
            text = f"{tok(v)} ({secs(c.get('ttft_s'))})"
            mn, mx = _num(c.get("min")), _num(c.get("max"))
            if len(c.get("reps") or []) > 1 and mn is not None and mx is not None:
                text += f" [{tok(mn)}–{tok(mx)}]"
                if mx > mn:
                    ranges[(n, i)] = (mn, mx)
            if c.get("unstable"):
                text += " †"
                any_unstable = True
            hit = _num(c.get("cache_hit_tok_s"))
            if hit:
                text += f"; cache hit {tok(hit)}"
                chart_notes[(n, i)] = f"cache hit {_k(hit)}"
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
                  [length_label(k) for k in lengths], series, notes=chart_notes, ranges=ranges)
    return Section("prefill", "Prefill: prompt tokens / TTFT, cold", "Unique prompts, 1-token reply; median over "
                   "reps where there are several. TTFT in brackets.", headers, rows, chart, notes=notes)


def _k(v: float) -> str:
    return f"{v / 1000:.1f}K" if v >= 1000 else f"{v:.0f}"


def _short(text: Any, n: int = 60) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _needles_section(needles: dict[str, Any], lanes: list[str]) -> Section:
    cells = {n: ((needles["lanes"].get(n) or {}).get("lengths")) or {} for n in lanes}
    lengths = _sorted_keys({k: None for n in lanes for k in cells[n]})
    headers = ["Context tokens"] + [f"{n}" for n in lanes]
    rows = []
    for length in lengths:
        row = [f"{_int_key(length):,.0f}"]
        for n in lanes:
            c = cells[n].get(length)
            if not c:
                row.append("—")
            elif c.get("error"):
                row.append(f"error: {err_text(c['error'])}")
            else:
                mark = "found" if c.get("found") else "MISSED"
                depth = _num(c.get("depth"))
                extra = [f"depth {depth:.0%}"] if depth is not None else []
                extra.append(f"TTFT {secs(c.get('ttft_s'))}")
                if _num(c.get("prefill_tok_s")):
                    extra.append(f"{tok(c.get('prefill_tok_s'))} tok/s")
                if not c.get("found") and c.get("answer") is not None:
                    extra.append(f"answered {_short(c.get('answer'), 20)!r}, key {c.get('key')!r}")
                row.append(f"{mark} ({', '.join(extra)})")
        rows.append(row)
    return Section("needles", "Needles: long-context retrieval", "A random key hidden at a depth in a long "
                   "context; found = the reply contains it.", headers, rows)


def _race_section(race: dict[str, Any], order: list[str]) -> Section:
    races = race.get("races") or []
    lanes = [n for n in order if any(n in (r.get("lanes") or {}) for r in races)]
    for r in races:
        for n in r.get("lanes") or {}:
            if n not in lanes:
                lanes.append(n)
    headers = ["Race", "Prompt"] + [f"{n} TTFT / tok/s / total" for n in lanes] + ["Winner", "Margin"]
    rows = []
    for r in races:
        row = [str(r.get("race", "")), _short(r.get("prompt") or "", 40)]
        for n in lanes:
            c = (r.get("lanes") or {}).get(n)
            if not c:
                row.append("—")
            elif c.get("error"):
                row.append(f"error: {err_text(c['error'], 30)}")
            else:
                row.append(f"{secs(c.get('ttft_s'))} / {tok(c.get('decode_tok_s'))}"
                           f"{' ~' if c.get('tokens_estimated') else ''} / {secs(c.get('total_s'))}")
        row.append(r.get("winner") or "—")
        row.append(_margin(r.get("margin")))
        rows.append(row)
    wins = race_wins(race)
    caption = "Same prompt sent to every lane at once; the winner finishes first."
    if wins:
        caption += " Wins: " + ", ".join(f"{n} {wins.get(n, 0)}" for n in lanes) + f" of {len(races)}."
    return Section("race", "Races", caption, headers, rows)


def _margin(m: Any) -> str:
    """``0.20 s (1.12×)`` from a race's margin (``total_s_delta``, ``total_s_ratio``)."""
    if not isinstance(m, dict) or not m:
        return "—"
    delta, ratio = _num(m.get("total_s_delta")), _num(m.get("total_s_ratio"))
    if delta is None:
        return "—"
    text = f"{delta:.2f} s" if delta >= 0.1 else f"{delta * 1000:.0f} ms"
    return text + (f" ({ratio:.2f}×)" if ratio else "")


def err_text(e: Any, n: int = 40) -> str:
    """An error as one short line: ``http: 503 Service Unavailable``."""
    if isinstance(e, dict):
        cls, msg = e.get("cls"), e.get("message")
        text = f"{cls}: {msg}" if cls and msg else str(cls or msg or "error")
    else:
        text = str(e)
    return _short(text, n)


# ----------------------------------------------------------------- quality, agreement, KL, agents
QEVAL_KINDS = ("code", "json", "math", "format")


def _median(xs: list[float]) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _int_text(v: Any) -> str:
    x = _num(v)
    if x is None:
        return "—"
    return f"{x:.0f}" if x == int(x) else f"{x:.1f}"


def qeval_runs(q: Any) -> dict[str, dict[str, Any]]:
    """Lane -> ``qeval run`` result, from ``analysis["qeval"]`` (per-lane) or one bare run dict."""
    if not isinstance(q, dict):
        return {}
    if "tasks" in q:
        return {str(q.get("lane") or "?"): q}
    return {n: r for n, r in (q.get("lanes") or {}).items() if isinstance(r, dict) and r.get("tasks") is not None}


def _qeval_misses(run: dict[str, Any]) -> list[str]:
    return [tid for tid, t in (run.get("tasks") or {}).items() if not t.get("passed")]


def _qeval_rate(run: dict[str, Any]) -> float | None:
    """Median E2E reply rate (completion tokens / seconds) over the tasks."""
    rates = [c / s for t in (run.get("tasks") or {}).values()
             if (c := _num(t.get("completion_tokens"))) and (s := _num(t.get("seconds")))]
    return _median(rates)


def _paired_text(c: dict[str, Any]) -> str:
    p = _num(c.get("p_value")) or 0.0
    return f"kept {c.get('kept')}, broke {c.get('broke')}, fixed {c.get('fixed')}, p = {p:.3f}"


def qeval_sentence(q: Any) -> str | None:
    """``A 71/75, B 71/75, the same four misses (code_interval_intersect, ...)``."""
    runs = qeval_runs(q)
    if not runs:
        return None
    score = ", ".join(f"{n} {r.get('passed')}/{r.get('total')}" + (  # skipped: no sandbox, or no recorded verdict
        f" ({len(r['skipped'])} not scored)" if isinstance(r.get("skipped"), dict) and r["skipped"] else "")
        for n, r in runs.items())
    misses = {n: _qeval_misses(r) for n, r in runs.items()}
    first = next(iter(misses.values()))
    if all(not m for m in misses.values()):
        return f"{score}, no misses"
    if len(runs) == 1:
        return f"{score}; {'misses' if len(first) > 1 else 'missed'}: {', '.join(first)}"
    if all(set(m) == set(first) for m in misses.values()):
        k = len(first)
        what = "miss" if k == 1 else f"{_word(k).lower()} misses"
        return f"{score}, the same {what} ({', '.join(first)})"
    return score + "; misses: " + "; ".join(f"{n} {', '.join(m) if m else 'none'}" for n, m in misses.items())


def _qeval_verdict(analysis: dict[str, Any]) -> str | None:
    q = analysis.get("qeval")
    s = qeval_sentence(q)
    if s is None:
        return None
    c = q.get("compare") if isinstance(q, dict) else None
    if not c:
        return f"Quality gate (qeval): {s}."
    broke, fixed, p = int(c.get("broke") or 0), int(c.get("fixed") or 0), _num(c.get("p_value"))
    a, b = (c.get("a") or {}).get("name"), (c.get("b") or {}).get("name")
    if broke == 0 and fixed == 0:
        return f"Quality gate: identical — {s}; {_paired_text(c)}."
    if p is not None and p < 0.05:
        lead = b if fixed > broke else a
        return f"Quality gate → {lead}: {s}; {_paired_text(c)}."
    return f"Quality gate: no significant difference — {s}; {_paired_text(c)}."


def _qeval_section(q: Any, order: list[str]) -> Section:
    runs = qeval_runs(q)
    lanes = [n for n in order if n in runs] + [n for n in runs if n not in order]
    compare = q.get("compare") if isinstance(q, dict) else None
    kinds = [k for k in QEVAL_KINDS if any(t.get("kind") == k for r in runs.values() for t in r["tasks"].values())]
    kinds += sorted({t.get("kind") for r in runs.values() for t in r["tasks"].values()} - set(kinds) - {None})
    headers = ["Lane", "passed"] + kinds + ["median s/task", "median tok/s (E2E)"]
    rows = []
    for n in lanes:
        r = runs[n]
        tasks = r["tasks"].values()
        row = [n, f"{r.get('passed')}/{r.get('total')}"]
        for k in kinds:
            of = [t for t in tasks if t.get("kind") == k]
            row.append(f"{sum(1 for t in of if t.get('passed'))}/{len(of)}" if of else "—")
        row += [secs(_median([_num(t.get("seconds")) for t in tasks])), tok(_qeval_rate(r))]
        rows.append(row)
    summary = qeval_sentence(q) or ""
    if compare:
        summary += f"; paired {compare['a']['name']} → {compare['b']['name']}: {_paired_text(compare)}"
        rates = {n: _qeval_rate(runs[n]) for n in lanes[:2]}
        if all(rates.values()):
            (fa, va), (fb, vb) = sorted(rates.items(), key=lambda t: -t[1])
            if va / vb >= TIE:
                summary += f". Median single-stream inside qeval: {fa} faster ({tok(va)} vs {tok(vb)} tok/s E2E)"
    summary += "."
    more = []
    failed = list(dict.fromkeys(tid for n in lanes for tid in _qeval_misses(runs[n])))  # bank order per lane
    if failed:
        paired_of = {}
        if compare:
            for key, word in (("kept", "kept"), ("broke", "broke"), ("fixed", "fixed"), ("both_failed", "both failed")):
                for tid in compare.get(f"{key}_ids") or []:
                    paired_of[tid] = word
        h = ["Task", "kind"] + lanes + (["paired"] if compare else [])
        rr = []
        for tid in failed:
            kind = next((r["tasks"][tid].get("kind") for r in runs.values() if tid in r["tasks"]), "")
            row = [tid, str(kind or "")]
            for n in lanes:
                t = runs[n]["tasks"].get(tid)
                row.append("—" if t is None else "passed" if t.get("passed") else _short(t.get("reason") or "failed", 70))
            if compare:
                row.append(paired_of.get(tid, "—"))
            rr.append(row)
        more.append(("Tasks missed on any lane", h, rr))
    if compare:
        h = [f"Paired {compare['a']['name']} → {compare['b']['name']}", "kept", "broke", "fixed", "both failed",
             "p (exact McNemar)", "left out"]
        more.append(("Paired comparison (qeval compare)", h, [[
            f"{compare['a']['passed']}/{compare['a']['total']} → {compare['b']['passed']}/{compare['b']['total']}",
            str(compare.get("kept")), str(compare.get("broke")), str(compare.get("fixed")),
            str(compare.get("both_failed")), f"{_num(compare.get('p_value')) or 0:.3f}", str(compare.get("left_out", 0))]]))
    caption = ("Auto-scored tasks (code with hidden tests in a sandbox, JSON, math, format) at temperature 0, "
               "re-scored from the recorded replies. broke = passes on the first lane, fails on the second; "
               "fixed = the reverse; p is the exact two-sided McNemar test on those discordant pairs.")
    return Section("qeval", "Quality gate (qeval)", caption, headers, rows, summary=summary, more=more)


def agree_sentence(ag: dict[str, Any]) -> str | None:
    """``0/40 exact matches with a median first divergence at word 2 (9/40 agree ..., 18/40 diverge at word 0)``."""
    total = ag.get("total")
    if not total:
        return None
    return (f"{ag.get('exact')}/{total} exact matches with a median first divergence at word "
            f"{_int_text(ag.get('median_first_divergence_word'))} ({ag.get('agree_ge_10_words')}/{total} agree for "
            f"ten or more words, {ag.get('diverge_at_0')}/{total} diverge at word 0)")


def _agree_pair(ag: dict[str, Any]) -> tuple[str, str]:
    lanes = list(ag.get("lanes") or []) + ["A", "B"]
    return str(lanes[0]), str(lanes[1])


def _agree_verdict(analysis: dict[str, Any]) -> str | None:
    ag = analysis.get("agree") or {}
    s = agree_sentence(ag)
    if s is None:
        return None
    a, b = _agree_pair(ag)
    if ag.get("exact") == ag.get("total"):
        return f"Greedy agreement {a} vs {b}: {ag['exact']}/{ag['total']} exact matches."
    return f"Greedy agreement {a} vs {b}: {s}; a divergence signature, not a quality verdict."


def _where_they_part(row: dict[str, Any], a: str, b: str) -> str:
    if row.get("error"):
        return f"error: {_short(row['error'], 50)}"
    if row.get("exact"):
        return "exact"
    ta, tb = row.get("a_text"), row.get("b_text")
    if ta is None or tb is None:
        return ""
    wa, wb = str(ta).split(), str(tb).split()
    d = int(row.get("first_divergence_word") or 0)
    lead = " ".join(wa[max(0, d - 3):d])
    xa = _short(wa[d], 18) if d < len(wa) else "(end)"
    xb = _short(wb[d], 18) if d < len(wb) else "(end)"
    return f"{'… ' + _short(lead, 30) + ' ' if lead else ''}→ {a} “{xa}” / {b} “{xb}”"


def _agree_section(ag: dict[str, Any]) -> Section:
    a, b = _agree_pair(ag)
    hist = ag.get("histogram") or {}
    total = int(ag.get("total") or 0)
    labels = list(hist)
    rows = [[("exact match" if k == "exact" else f"word {k.replace('-', '–')}"), str(v),
             f"{v / total:.0%}" if total else "—"] for k, v in hist.items()]
    cfg = ag.get("config") or {}
    what = f"{total} raw-text prompts" + (f" × {cfg['tokens']} tokens" if cfg.get("tokens") else "")
    summary = f"{a} vs {b}, greedy (temperature 0) on {what}: {agree_sentence(ag) or 'no prompt compared'}"
    if ag.get("errors"):
        e = int(ag["errors"])
        summary += f"; {e} prompt{'s' if e != 1 else ''} errored and {'are' if e != 1 else 'is'} left out"
    summary += "."
    chart = Chart("bars", "Where the continuations first differ", "first differing word (0-based)", "prompts",
                  [("exact" if k == "exact" else k.replace("-", "–")) for k in labels],
                  {f"{a} vs {b}": [float(hist[k]) for k in labels]}, integer=True, colors={f"{a} vs {b}": 3})
    top = max(hist.values(), default=0)
    width = max(len(k) for k in labels) if labels else 0
    spark = [f"{k:>{width}} {'█' * round(v / top * 30) if top else ''}{' ' if v else ''}{v}" for k, v in hist.items()]
    prompts = ag.get("prompts") or []
    more = []
    if prompts:
        h = ["Prompt", "first differing word", f"{a} words", f"{b} words", "where they part"]
        more.append(("Per prompt", h, [[str(r.get("id")), "—" if r.get("error") else str(r.get("first_divergence_word")),
                                        str(r.get("a_words", "—")), str(r.get("b_words", "—")), _where_they_part(r, a, b)]
                                       for r in prompts]))
    caption = ("Per prompt, the first whitespace-separated word where the two continuations differ; an exact match "
               "agrees on every word. A signature of quantization on open-ended text, not a quality verdict "
               "(that is the quality gate).")
    return Section("agree", "Greedy agreement", caption, ["First difference at", "prompts", "share"], rows, chart,
                   spark, summary=summary, more=more)


def _kl_num(v: Any) -> str:
    x = _num(v)
    if x is None:
        return "—"
    if x == 0:
        return "0"
    return f"{x:.4f}" if x >= 0.001 else f"{x:.2e}"


def kl_lane_text(kl: dict[str, Any], n: str) -> str:
    """``KL(B ‖ A) = 0.0123 nats/token (...)`` or ``not exposed by lane A: HTTP 400: ...``."""
    c = (kl.get("lanes") or {}).get(n) or {}
    ref = kl.get("reference")
    st, msg = c.get("status"), c.get("message")
    if st == "ok":
        if n == ref:
            return f"{n} is the reference"
        return (f"KL({ref} ‖ {n}) = {_kl_num(c.get('kl'))} nats/token (p50 {_kl_num(c.get('kl_p50'))}, "
                f"p99 {_kl_num(c.get('kl_p99'))}, {c.get('positions', 0):,} positions)")
    if st == "not_exposed":
        return f"not exposed by lane {n}: {_short(msg or 'no logprobs', 90)}"
    if st == "skipped":
        return f"{n} skipped: {_short(msg or '', 90)}"
    return f"{n} {st or 'unknown'}: {_short(msg or '', 90)}"


def _kl_lanes(kl: dict[str, Any], order: list[str]) -> list[str]:
    lanes = kl.get("lanes") or {}
    return [n for n in order if n in lanes] + [n for n in lanes if n not in order]


def _kl_verdict(analysis: dict[str, Any]) -> str | None:
    kl = analysis.get("kl") or {}
    lanes = _kl_lanes(kl, lane_names(analysis))
    if not lanes:
        return None
    ref = kl.get("reference")
    ok = [n for n in lanes if n != ref and (kl["lanes"][n] or {}).get("status") == "ok"]
    if ok:
        return "Logprob divergence: " + "; ".join(kl_lane_text(kl, n) for n in ok) + "."
    why = [kl_lane_text(kl, n) for n in lanes if (kl["lanes"][n] or {}).get("status") != "ok"]
    return "No KL between lanes: " + "; ".join(why) + "."


def _kl_section(kl: dict[str, Any], order: list[str]) -> Section:
    lanes = _kl_lanes(kl, order)
    ref = kl.get("reference")
    headers = ["Lane", "role", "status", "KL mean (nats/token)", "p50", "p99", "positions", "message"]
    rows = []
    for n in lanes:
        c = kl["lanes"][n] or {}
        rows.append([n, "reference" if n == ref else "compared", str(c.get("status") or "—").replace("_", " "),
                     _kl_num(c.get("kl")), _kl_num(c.get("kl_p50")), _kl_num(c.get("kl_p99")),
                     f"{c.get('positions', 0):,}", _short(c.get("message") or "", 90)])
    summary = (_kl_verdict({"kl": kl, "environment": {"lanes": [{"name": n} for n in lanes]}}) or "").replace(
        "Logprob divergence: ", "", 1)
    cfg = kl.get("config") or {}
    caption = (f"Teacher-forced KL({ref} ‖ lane) per token: {ref} continues each prompt greedily, every lane scores "
               f"that text with top-{kl.get('k') or cfg.get('k') or '?'} prompt logprobs (echo); estimator "
               f"{kl.get('estimator') or 'topk_tail'}, a lower bound of the full-vocabulary KL, over positions where "
               f"both lanes scored the same token.")
    if cfg.get("prompts"):
        caption += f" {cfg['prompts']} prompts × {cfg.get('tokens', '?')} tokens."
    return Section("kl", f"Logprob divergence (KL vs {ref})", caption, headers, rows, summary=summary)


def _gauntlet_lanes(g: dict[str, Any], order: list[str]) -> list[str]:
    lanes = {n: d for n, d in (g.get("lanes") or {}).items() if isinstance(d, dict) and d.get("reps")}
    return [n for n in order if n in lanes] + [n for n in lanes if n not in order]


def _turn_split(d: dict[str, Any]) -> dict[str, Any]:
    """A lane's TTFT / decode seconds: median over reps of the per-rep sums, and per turn (median over reps)."""
    reps = d.get("turns") or []
    ttft_sums, dec_sums = [], []
    per_turn: dict[int, dict[str, list[float]]] = {}
    for turns in reps:
        ttft_sums.append(sum(_num(t.get("ttft_s")) or 0.0 for t in turns))
        dec_sums.append(sum(_num(t.get("decode_s")) or 0.0 for t in turns))
        for t in turns:
            cell = per_turn.setdefault(int(t.get("turn", 0)), {"ttft": [], "decode": [], "prompt": [], "out": [],
                                                              "tool": []})
            for key, src in (("ttft", "ttft_s"), ("decode", "decode_s"), ("prompt", "prompt_tokens"),
                             ("out", "completion_tokens")):
                if _num(t.get(src)) is not None:
                    cell[key].append(_num(t.get(src)))
            cell["tool"].append(bool(t.get("calls")))
    turns = {k: {"ttft": _median(v["ttft"]), "decode": _median(v["decode"]), "prompt": _median(v["prompt"]),
                 "out": _median(v["out"]), "tool": any(v["tool"])} for k, v in sorted(per_turn.items())}
    return {"ttft": _median(ttft_sums), "decode": _median(dec_sums), "turns": turns}


def _gauntlet_why(g: dict[str, Any], lanes: list[str]) -> tuple[str, str]:
    """(sentence on where the time goes, verdict clause) from the per-turn TTFT/decode split."""
    split = {n: _turn_split(g["lanes"][n]) for n in lanes}
    share = []
    for n in lanes:
        p, d = split[n]["ttft"], split[n]["decode"]
        if p is not None and d is not None and p + d > 0:
            share.append(f"{p / (p + d):.0%} of {n}'s")
    first = lanes[0]
    tt = split[first]["turns"]
    prompts = [v["prompt"] for v in tt.values() if v["prompt"]]
    outs = [v["out"] for k, v in tt.items() if v["out"] and v["tool"]]
    head = "Every turn re-sends the system prompt and the growing transcript"
    if prompts:
        head += f" ({tok(prompts[0])} → {tok(prompts[-1])} prompt tokens on {first})"
    if outs:
        head += f" for a ~{_median(outs):.0f}-token tool call"
    head += f", so TTFT (prefill) is {' and '.join(share)} request time" if share else ""
    clause = ""
    if len(lanes) >= 2:
        walls = {n: _num(g["lanes"][n].get("median_wall_s")) for n in lanes}
        ranked = sorted((n for n in lanes if walls[n] is not None), key=lambda n: walls[n])
        if len(ranked) >= 2 and walls[ranked[1]] / max(walls[ranked[0]], 1e-9) >= TIE:
            fast, slow = ranked[0], ranked[1]
            pf, ps = split[fast]["ttft"], split[slow]["ttft"]
            df, ds = split[fast]["decode"], split[slow]["decode"]
            if None not in (pf, ps, df, ds) and min(pf, ps, df, ds) > 0:
                p_lead, p_lag = ps / pf >= TIE, pf / ps >= TIE  # a lead under TIE is no lead
                d_lead, d_lag = ds / df >= TIE, df / ds >= TIE
                pre = f"TTFT {secs(pf)} vs {secs(ps)} over the chain"
                if p_lead and d_lag:
                    clause = (f"{fast}'s faster prefill of the growing transcript ({pre}) outweighs {slow}'s "
                              f"decode edge ({secs(ds)} vs {secs(df)})")
                elif p_lead and d_lead:
                    clause = f"{fast} is faster at both prefill ({pre}) and decode ({secs(df)} vs {secs(ds)})"
                elif p_lead:
                    clause = (f"the gap is {fast}'s faster prefill of the growing transcript ({pre}); decode is "
                              f"even ({secs(df)} vs {secs(ds)})")
                elif d_lead and p_lag:
                    clause = (f"{fast}'s faster decode ({secs(df)} vs {secs(ds)} over the chain) outweighs {slow}'s "
                              f"faster prefill (TTFT {secs(ps)} vs {secs(pf)})")
                elif d_lead:
                    clause = (f"the gap is {fast}'s faster decode ({secs(df)} vs {secs(ds)} over the chain); "
                              f"prefill is even (TTFT {secs(pf)} vs {secs(ps)})")
    sentence = head + (f"; {clause}" if clause else "") + "."
    return sentence, clause


def _gauntlet_verdict(analysis: dict[str, Any]) -> str | None:
    g = analysis.get("gauntlet") or {}
    lanes = _gauntlet_lanes(g, lane_names(analysis))
    if not lanes:
        return None
    d = g["lanes"]
    summary = g.get("summary") or ""
    hops = (g.get("config") or {}).get("hops", "?")
    if len(lanes) == 1:
        return f"Agents: {summary}." if summary else None
    walls = {n: _num(d[n].get("median_wall_s")) for n in lanes}
    ranked = sorted((n for n in lanes if walls[n] is not None), key=lambda n: walls[n])
    if len(ranked) < 2:
        return f"Agents: {summary}." if summary else None
    fast, slow = ranked[0], ranked[1]
    rate = {n: d[n]["correct"] / d[n]["reps"] for n in lanes}
    of = "median of " + str(d[fast]["reps"]) if d[fast]["reps"] == d[slow]["reps"] else "medians"
    _, clause = _gauntlet_why(g, lanes)
    if rate[slow] > rate[fast]:
        return (f"Agents: {fast} finishes the {hops}-hop chain faster ({secs(walls[fast])} vs {secs(walls[slow])}, "
                f"{of}) but {slow} is correct more often ({d[slow]['correct']}/{d[slow]['reps']} vs "
                f"{d[fast]['correct']}/{d[fast]['reps']}).")
    if walls[slow] / max(walls[fast], 1e-9) < TIE:
        return (f"Agents: {fast} and {slow} tie on the {hops}-hop chain ({secs(walls[fast])} vs "
                f"{secs(walls[slow])}, {of}).")
    body = summary[len(fast) + 1:] if summary.startswith(f"{fast} finished") else (
        f"finished the {hops}-hop chain in {secs(walls[fast])} vs {slow} {secs(walls[slow])} ({of})")
    return f"Agents → {fast}: {body}" + (f"; {clause}" if clause else "") + "."


def _gauntlet_sections(g: dict[str, Any], order: list[str]) -> list[Section]:
    lanes = _gauntlet_lanes(g, order)
    d = g["lanes"]
    cfg = g.get("config") or {}
    headers = ["Lane", "correct", "tool calls", "median wall", "wall per rep", "malformed calls", "stopped"]
    rows = []
    for n in lanes:
        x = d[n]
        calls = x.get("tool_calls") or []
        rows.append([n, f"{x.get('correct')}/{x.get('reps')}",
                     (str(calls[0]) if calls and min(calls) == max(calls) else ", ".join(map(str, calls))) or "—",
                     secs(x.get("median_wall_s")), ", ".join(secs(w) for w in x.get("wall_s") or []),
                     str(sum(x.get("malformed_calls") or [])),
                     ", ".join(f"{k} ×{v}" if v > 1 else str(k) for k, v in
                               _counts(x.get("stopped") or []).items())])
    nreps = max(len(d[n].get("wall_s") or []) for n in lanes)
    chart = Chart("bars", "Wall time per rep", "rep (a fresh agent session each)", "wall time (s)",
                  [f"rep {i + 1}" for i in range(nreps)],
                  {n: [(_num(w[i]) if i < len(w) else None) for i in range(nreps)]
                   for n in lanes for w in [d[n].get("wall_s") or []]})
    caption = (f"A fresh agent session per rep: a {cfg.get('system_prompt_tokens', '?'):,}-token system prompt, one "
               f"read_file tool and a chain of {cfg.get('hops', '?')} files, each naming the next; correct = the final "
               f"answer holds the secret. Wall = rep start → final answer." if isinstance(
                   cfg.get("system_prompt_tokens"), int) else
               f"A fresh agent session per rep, one read_file tool, a chain of {cfg.get('hops', '?')} files; "
               f"correct = the final answer holds the secret.")
    notes = []
    ts = _num(cfg.get("time_scale"))
    if ts:
        notes.append(f"Times as measured on simulated lanes run at time scale {ts:g} (--demo): divide by {ts:g} "
                     f"for the simulated lanes' own seconds.")
    summary = (g.get("summary") or "") + "."
    out = [Section("gauntlet", "Agent gauntlet", caption, headers, rows, chart, summary=summary, notes=notes)]

    split = {n: _turn_split(d[n]) for n in lanes}
    turn_ids = sorted(set().union(*(set(split[n]["turns"]) for n in lanes)))
    if turn_ids:
        headers = ["Turn"] + [h for n in lanes for h in (f"{n} prompt tok", f"{n} TTFT", f"{n} decode")]
        rows = []
        for t in turn_ids:
            row = [str(t)]
            for n in lanes:
                c = split[n]["turns"].get(t) or {}
                row += [tok(c.get("prompt")), secs(c.get("ttft")), secs(c.get("decode"))]
            rows.append(row)
        total = ["all turns"]
        for n in lanes:
            total += ["", secs(split[n]["ttft"]), secs(split[n]["decode"])]
        rows.append(total)
        x = [str(t) for t in turn_ids]
        chart = Chart("bars", "Per-turn request time: TTFT (prefill of the transcript) + decode", "turn",
                      "seconds per request (s)", x,
                      {n: [(split[n]["turns"].get(t) or {}).get("ttft") for t in turn_ids] for n in lanes},
                      stack={n: [(split[n]["turns"].get(t) or {}).get("decode") for t in turn_ids] for n in lanes},
                      stack_label=("TTFT (solid)", "decode (light)"))
        why, _ = _gauntlet_why(g, lanes)
        reps = {len(d[n].get("turns") or []) for n in lanes}
        over = "one rep" if reps == {1} else "median over reps, per turn; the totals are the median of the per-rep sums"
        out.append(Section("gauntlet-turns", "Agent gauntlet: where each turn's time goes",
                           f"Per request: TTFT = sent → first token-carrying chunk (the prefill of the whole "
                           f"transcript), decode = the rest of the request ({over}).", headers, rows, chart,
                           summary=why, notes=list(notes)))
    return out


def _counts(xs: list[Any]) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


def _quality_csv_rows(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    q = analysis.get("qeval")
    runs = qeval_runs(q)
    compare = q.get("compare") if isinstance(q, dict) else None
    paired: dict[str, str] = {}
    pair: tuple[str, str] | None = None
    if compare:
        pair = (compare["a"]["name"], compare["b"]["name"])
        for key in ("kept", "broke", "fixed", "both_failed"):
            for tid in compare.get(f"{key}_ids") or []:
                paired[tid] = key
    for n, r in runs.items():
        for tid, t in (r.get("tasks") or {}).items():
            in_pair = pair is not None and n in pair
            rows.append({"bench": "qeval", "lane": n, "cell_kind": "task", "cell": tid, "task_kind": t.get("kind"),
                         "passed": t.get("passed"), "reason": t.get("reason"), "prompt_tokens": t.get("prompt_tokens"),
                         "output_tokens": t.get("completion_tokens"), "seconds": t.get("seconds"),
                         "vs_lane": (pair[1] if n == pair[0] else pair[0]) if in_pair else None,
                         "paired": paired.get(tid) if in_pair else None})
    if compare:
        for key in ("kept", "broke", "fixed", "both_failed"):
            rows.append({"bench": "qeval", "lane": pair[0], "vs_lane": pair[1], "cell_kind": "paired", "cell": key,
                         "count": compare.get(key), "p_value": compare.get("p_value")})
    ag = analysis.get("agree") or {}
    if ag.get("total") or ag.get("prompts"):
        a, b = _agree_pair(ag)
        for r in ag.get("prompts") or []:
            rows.append({"bench": "agree", "lane": a, "vs_lane": b, "cell_kind": "prompt", "cell": r.get("id"),
                         "first_divergence_word": r.get("first_divergence_word"), "exact": r.get("exact"),
                         "words": r.get("a_words"), "vs_words": r.get("b_words"), "error": r.get("error")})
        for k, v in (ag.get("histogram") or {}).items():
            rows.append({"bench": "agree", "lane": a, "vs_lane": b, "cell_kind": "bucket", "cell": k, "count": v})
    kl = analysis.get("kl") or {}
    for n, c in (kl.get("lanes") or {}).items():
        c = c or {}
        rows.append({"bench": "kl", "lane": n, "vs_lane": kl.get("reference"), "cell_kind": "lane", "cell": n,
                     "status": c.get("status"), "kl": c.get("kl"), "kl_p50": c.get("kl_p50"), "kl_p99": c.get("kl_p99"),
                     "positions": c.get("positions"), "reason": c.get("message")})
    g = analysis.get("gauntlet") or {}
    for n, x in (g.get("lanes") or {}).items():
        walls, turns = x.get("wall_s") or [], x.get("turns") or []
        for i in range(len(walls)):
            def at(key: str, i: int = i) -> Any:
                v = x.get(key) or []
                return v[i] if i < len(v) else None
            rows.append({"bench": "gauntlet", "lane": n, "cell_kind": "rep", "cell": i, "rep": i,
                         "passed": at("correct_per_rep"), "tool_calls": at("tool_calls"),
                         "malformed_calls": at("malformed_calls"), "seconds": walls[i], "reason": at("stopped"),
                         "requests": len(turns[i]) if i < len(turns) else None})
        for i, rep_turns in enumerate(turns):
            for t in rep_turns:
                rows.append({"bench": "gauntlet", "lane": n, "cell_kind": "turn", "cell": t.get("turn"), "rep": i,
                             "prompt_tokens": t.get("prompt_tokens"), "cached_tokens": t.get("cached_tokens"),
                             "ttft_s": t.get("ttft_s"), "decode_s": t.get("decode_s"),
                             "output_tokens": t.get("completion_tokens"), "tool_calls": t.get("calls"),
                             "error": t.get("error")})
    return rows


def environment_rows(env: dict[str, Any]) -> list[list[str]]:
    rows = []
    for lane in env.get("lanes") or []:
        rows.append([f"lane {lane.get('name')}", f"{lane.get('url') or '—'} · model {lane.get('model') or '—'}"])
    rows.append(["lanemon", f"{env.get('lanemon') or '?'} (recording schema {env.get('schema') or '?'}); "
                            f"report by {env.get('reported_by')}"])
    rows.append(["recorded", str(env.get("created") or "—")])
    if env.get("duration_s") is not None:
        rows.append(["duration", f"{env['duration_s']:.1f} s, {env.get('events', 0):,} events"])
    rows.append(["command", str(env.get("command") or "—")])
    host = env.get("host") or {}
    if host:
        mem = host.get("memory_bytes")
        bits = [str(host.get("platform", "?")), f"Python {host.get('python', '?')}", f"{host.get('cpus', '?')} CPUs"]
        if mem:
            bits.append(f"{mem / 2**30:.0f} GiB")
        rows.append(["host", ", ".join(bits)])
    if env.get("recording"):
        rows.append(["recording", str(env["recording"])])
    return rows


def title(analysis: dict[str, Any]) -> str:
    lanes = analysis.get("environment", {}).get("lanes") or [{"name": n} for n in lane_names(analysis)]
    names = [f"{lane['name']} ({lane['model']})" if lane.get("model") else str(lane["name"]) for lane in lanes]
    benches = [b for b in ("decode", "prefill", "needles", "race", "qeval", "agree", "kl", "gauntlet")
               if analysis.get(b)]
    head = " vs ".join(names) if names else "lanemon session"
    return f"{head}: {', '.join(benches)}" if benches else head


# ----------------------------------------------------------------- markdown
def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_md_cell(h) for h in headers) + " |",
           "|" + "|".join("---:" if i and _numeric_column(rows, i) else "---" for i in range(len(headers))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(_md_cell(c) for c in r) + " |")
    return out


def render_markdown(analysis: dict[str, Any]) -> str:
    env = analysis.get("environment", {})
    lines = [f"# {title(analysis)}", ""]
    meta = [x for x in (env.get("created"), env.get("command") and f"`{env.get('command')}`") if x]
    if meta:
        lines += [" · ".join(meta), ""]
    for w in analysis.get("warnings") or []:
        lines += [f"> **Warning:** {w}", ""]
    v = verdict(analysis)
    secs_ = sections(analysis)
    if v:
        lines += ["## Verdict", ""] + [f"- {s}" for s in v] + [""]
    if not secs_:
        lines += ["_This recording holds no bench or race results._", ""]
    for s in secs_:
        lines += [f"## {s.title}", ""]
        if s.summary:
            lines += [f"**{s.summary}**", ""]
        lines += [s.caption, ""]
        lines += _md_table(s.headers, s.rows) + [""]
        for note in s.notes:
            lines += [f"{note}  "]
        if s.notes:
            lines.append("")
        if s.spark:
            lines += ["```"] + s.spark + ["```", ""]
        for sub, headers, rows in s.more:
            lines += [f"### {sub}", ""] + _md_table(headers, rows) + [""]
    lines += ["## Environment", ""] + _md_table(["Item", "Value"], environment_rows(env)) + [""]
    return "\n".join(lines)


# ----------------------------------------------------------------- json / csv
def render_json(analysis: dict[str, Any]) -> str:
    return orjson.dumps(analysis, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def csv_rows(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    decode = analysis.get("decode") or {}
    for n in _present(analysis, "decode"):
        for lvl, c in decode_levels(decode, n).items():
            rows.append({"bench": "decode", "lane": n, "cell_kind": "level", "cell": lvl,
                         "tok_s": c.get("aggregate_tok_s"), "ttft_s": c.get("ttft_p50_s"),
                         "ttft_p90_s": c.get("ttft_p90_s"), "ttft_p99_s": c.get("ttft_p99_s"),
                         "per_stream_tok_s": c.get("per_stream_tok_s_p50"), "min_tok_s": c.get("min"),
                         "max_tok_s": c.get("max"), "reps": len(c.get("reps") or []), "unstable": c.get("unstable"),
                         "output_tokens": c.get("output_tokens"), "tokens_estimated": c.get("tokens_estimated"),
                         "requests": c.get("requests"), "errors": c.get("errors")})
        cats = ((decode.get("lanes") or {}).get(n) or {}).get("categories") or {}
        for cat, c in cats.items():
            rows.append({"bench": "decode", "lane": n, "cell_kind": "category", "cell": cat,
                         "tok_s": c.get("per_stream_tok_s"), "per_stream_tok_s": c.get("per_stream_tok_s"),
                         "requests": c.get("requests"), "errors": c.get("errors")})
    prefill = analysis.get("prefill") or {}
    for n in _present(analysis, "prefill"):
        cells = prefill_cells(prefill, n)
        for length in _sorted_keys(cells):
            c = cells[length]
            rows.append({"bench": "prefill", "lane": n, "cell_kind": "length", "cell": length,
                         "tok_s": c.get("prefill_tok_s"), "ttft_s": c.get("ttft_s"), "min_tok_s": c.get("min"),
                         "max_tok_s": c.get("max"), "reps": len(c.get("reps") or []), "unstable": c.get("unstable"),
                         "prompt_tokens": c.get("prompt_tokens"), "cache_hit_tok_s": c.get("cache_hit_tok_s"),
                         "error": err_text(c["error"], 200) if c.get("error") else None})
    needles = analysis.get("needles") or {}
    for n in _present(analysis, "needles"):
        cells = ((needles["lanes"].get(n) or {}).get("lengths")) or {}
        for length in _sorted_keys(cells):
            c = cells[length]
            rows.append({"bench": "needles", "lane": n, "cell_kind": "length", "cell": length,
                         "tok_s": c.get("prefill_tok_s"), "ttft_s": c.get("ttft_s"), "found": c.get("found"),
                         "error": err_text(c["error"], 200) if c.get("error") else None})
    race = analysis.get("race") or {}
    for r in race.get("races") or []:
        for n, c in (r.get("lanes") or {}).items():
            rows.append({"bench": "race", "lane": n, "cell_kind": "race", "cell": r.get("race"),
                         "tok_s": c.get("decode_tok_s"), "ttft_s": c.get("ttft_s"),
                         "output_tokens": c.get("output_tokens"), "tokens_estimated": c.get("tokens_estimated"),
                         "winner": r.get("winner") == n, "error": err_text(c["error"], 200) if c.get("error") else None})
    rows += _quality_csv_rows(analysis)
    return rows


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return round(v, 4)
    return v


def render_csv(analysis: dict[str, Any]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for row in csv_rows(analysis):
        w.writerow({k: _csv_value(v) for k, v in row.items()})
    return buf.getvalue()


# ----------------------------------------------------------------- SVG charts
def nice_max(v: float) -> tuple[float, float]:
    """(axis max, tick step) with 4–6 round ticks."""
    if v <= 0:
        return 1.0, 0.2
    raw = v / 5
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if step >= raw:
            break
    top = math.ceil(v * 1.0001 / step) * step
    if top - v < step * 0.15:
        top += step
    return top, step


def _tick(v: float, step: float) -> str:
    if step >= 1000 and v >= 1000:
        return f"{v / 1000:g}K"
    if step >= 1:
        return f"{v:,.0f}"
    return f"{v:.{max(0, -math.floor(math.log10(step)))}f}".rstrip("0").rstrip(".") if v else "0"


def _bar_label(v: float, fmtv, as_is: bool) -> str:
    return fmtv(v) if as_is else _k(v) if v >= 10000 else tok(v)


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def svg_chart(chart: Chart, lanes: list[str], width: int = 760, height: int = 330) -> str:
    """One chart as an inline ``<svg>`` (colours from CSS classes ``s0``..``s5``)."""
    left, right, top, bottom = 64, 16, 44, 58
    pw, ph = width - left - right, height - top - bottom
    vals = [v for s in chart.series.values() for v in s if v is not None] + [hi for _, hi in chart.ranges.values()]
    vals += [(v or 0) + (chart.stack[name][i] or 0) for name, s in chart.series.items() if name in chart.stack
             for i, v in enumerate(s) if i < len(chart.stack[name])]
    if not vals:
        return ""
    unit_s = chart.y_title.endswith("(s)")
    ymax, step = nice_max(max(vals) * (1.12 if chart.notes else 1.0))  # headroom for the notes
    if chart.integer and step < 1:
        step, ymax = 1.0, float(math.ceil(max(vals)) + 1)
    n = len(chart.x)
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
             f'aria-label="{_e(chart.title)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{_e(chart.title)}</title>"]

    def y(v: float) -> float:
        return top + ph - v / ymax * ph

    # grid + y ticks
    k = 0
    while k * step <= ymax + 1e-9:
        v = k * step
        yy = y(v)
        parts.append(f'<line class="grid" x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end">{_e(_tick(v, step))}</text>')
        k += 1
    parts.append(f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"/>')
    parts.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}"/>')
    # axis titles
    parts.append(f'<text class="atitle" x="{left + pw / 2:.1f}" y="{height - 12}" text-anchor="middle">'
                 f'{_e(chart.x_title)}</text>')
    parts.append(f'<text class="atitle" transform="translate(16 {top + ph / 2:.1f}) rotate(-90)" '
                 f'text-anchor="middle">{_e(chart.y_title)}</text>')
    slot = pw / max(n, 1)

    def xc(i: int) -> float:
        return left + slot * (i + 0.5)

    for i, label in enumerate(chart.x):
        parts.append(f'<text class="tick" x="{xc(i):.1f}" y="{top + ph + 18}" text-anchor="middle">{_e(label)}</text>')
    color = {name: f"s{chart.colors[name] % 6 if name in chart.colors else lanes.index(name) % 6 if name in lanes else 0}"
             for name in chart.series}
    fmtv = (lambda v: f"{v:.0f}") if chart.integer else (lambda v: f"{v:.2f}") if unit_s else (lambda v: tok(v))

    if chart.kind == "line":
        if chart.band is not None:
            a, b = chart.band
            x0, x1 = xc(a), xc(b)
            parts.append(f'<rect class="band" x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" height="{ph}"/>')
            parts.append(f'<line class="bandline" x1="{(x0 + x1) / 2:.1f}" y1="{top}" x2="{(x0 + x1) / 2:.1f}" '
                         f'y2="{top + ph}"/>')
            parts.append(f'<text class="bandlabel" x="{(x0 + x1) / 2:.1f}" y="{top + 14}" text-anchor="middle">'
                         f'{_e(chart.band_label)}</text>')
        for name, series in chart.series.items():
            pts = [(xc(i), y(v)) for i, v in enumerate(series) if v is not None]
            if len(pts) > 1:
                d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
                parts.append(f'<polyline class="line {color[name]}" points="{d}"/>')
            for i, v in enumerate(series):
                if v is None:
                    continue
                parts.append(f'<circle class="dot {color[name]}" cx="{xc(i):.1f}" cy="{y(v):.1f}" r="3.5">'
                             f"<title>{_e(name)} {_e(chart.x[i])}: {fmtv(v)}</title></circle>")
            # label the last point
            last = [(i, v) for i, v in enumerate(series) if v is not None]
            if last:
                i, v = last[-1]
                others = [s[i] for nm, s in chart.series.items() if nm != name and i < len(s) and s[i] is not None]
                above = not others or v >= max(others)
                yy = y(v) - 9 if above else y(v) + 17
                parts.append(f'<text class="vlabel {color[name]}t" x="{xc(i):.1f}" y="{yy:.1f}" '
                             f'text-anchor="middle">{_e(fmtv(v))}</text>')
    else:
        m = max(len(chart.series), 1)
        group = slot * 0.72
        bw = group / m
        for j, (name, series) in enumerate(chart.series.items()):
            for i, v in enumerate(series):
                if v is None:
                    continue
                x0 = xc(i) - group / 2 + j * bw
                gap = 1 if bw >= 6 else 0.3
                solid_word = chart.stack_label[0].split(" (")[0] + " "
                parts.append(f'<rect class="bar {color[name]}" x="{x0 + gap:.1f}" y="{y(v):.1f}" '
                             f'width="{bw - 2 * gap:.1f}" height="{top + ph - y(v):.1f}"><title>{_e(name)} '
                             f'{_e(chart.x[i])}: {_e(solid_word if name in chart.stack else "")}'
                             f"{fmtv(v)}</title></rect>")
                label_y, label_v = y(v), v
                extra = chart.stack.get(name, [])
                if i < len(extra) and extra[i]:
                    hi = v + extra[i]
                    parts.append(f'<rect class="bar light {color[name]}" x="{x0 + gap:.1f}" y="{y(hi):.1f}" '
                                 f'width="{bw - 2 * gap:.1f}" height="{y(v) - y(hi):.1f}"><title>{_e(name)} '
                                 f'{_e(chart.x[i])}: {_e(chart.stack_label[1].split(" (")[0])} {fmtv(extra[i])} '
                                 f"(total {fmtv(hi)})</title></rect>")
                    label_y, label_v = y(hi), hi
                rng = chart.ranges.get((name, i))
                if rng:
                    cx = x0 + bw / 2
                    parts.append(f'<path class="whisker" d="M{cx:.1f} {y(rng[0]):.1f}V{y(rng[1]):.1f}'
                                 f'M{cx - 5:.1f} {y(rng[0]):.1f}h10M{cx - 5:.1f} {y(rng[1]):.1f}h10">'
                                 f"<title>{_e(name)} {_e(chart.x[i])}: reps {fmtv(rng[0])}–{fmtv(rng[1])}</title></path>")
                    label_y = min(label_y, y(rng[1]))
                if bw >= 26:
                    parts.append(f'<text class="vlabel" x="{x0 + bw / 2:.1f}" y="{label_y - 5:.1f}" '
                                 f'text-anchor="middle">{_e(_bar_label(label_v, fmtv, unit_s or chart.integer))}'
                                 f"</text>")
                note = chart.notes.get((name, i))
                if note:
                    parts.append(f'<text class="note" x="{x0 + bw / 2:.1f}" y="{label_y - 19:.1f}" '
                                 f'text-anchor="middle">{_e(note)}</text>')
    # legend
    lx = left + 4
    for name in chart.series:
        parts.append(f'<rect class="{color[name]}" x="{lx}" y="14" width="12" height="12" rx="2"/>')
        parts.append(f'<text class="legend" x="{lx + 17}" y="24">{_e(name)}</text>')
        lx += 30 + 8 * len(str(name))
    if chart.stack and any(chart.stack_label):
        lx += 10
        for k, label in enumerate(chart.stack_label):
            parts.append(f'<rect class="{"bar light " if k else ""}swatch" x="{lx}" y="14" width="12" height="12" '
                         f'rx="2"/>')
            parts.append(f'<text class="legend" x="{lx + 17}" y="24">{_e(label)}</text>')
            lx += 30 + 7 * len(label)
    parts.append("</svg>")
    return "".join(parts)


# ----------------------------------------------------------------- html
CSS = """
:root { color-scheme: light dark;
  --bg: #ffffff; --fg: #1b2330; --muted: #5b6676; --rule: #dde3ea; --card: #f6f8fa; --grid: #e6eaef;
  --c0: #2166ac; --c1: #d95f02; --c2: #1b9e77; --c3: #7570b3; --c4: #e7298a; --c5: #66a61e;
  --band: rgba(120,120,140,.12); --note: #a63d00; --warn-bg: #fff4d6; --warn-fg: #6b4b00; }
@media (prefers-color-scheme: dark) { :root {
  --bg: #0f141b; --fg: #dbe2ea; --muted: #93a0b0; --rule: #2a3340; --card: #161d27; --grid: #242d39;
  --c0: #5fa8e8; --c1: #f5a05f; --c2: #4fd1a5; --c3: #a9a4ef; --c4: #f47cbf; --c5: #9bd36a;
  --band: rgba(200,200,220,.10); --note: #ffb37a; --warn-bg: #3a2f12; --warn-fg: #f3d58b; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 980px; margin: 0 auto; padding: 32px 28px 48px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 6px; padding-top: 10px; border-top: 1px solid var(--rule); }
.sub { color: var(--muted); margin: 0 0 18px; }
.verdict { background: var(--card); border-left: 4px solid var(--c0); padding: 12px 18px; border-radius: 6px; }
.verdict h2 { border: 0; margin: 0 0 6px; padding: 0; font-size: 17px; }
.verdict ul { margin: 0; padding-left: 20px; } .verdict li { margin: 4px 0; }
.warn { background: var(--warn-bg); color: var(--warn-fg); padding: 8px 14px; border-radius: 6px; margin: 10px 0; }
.caption { color: var(--muted); margin: 0 0 10px; }
figure { margin: 12px 0 14px; padding: 10px 8px 4px; background: var(--card); border-radius: 8px; }
figcaption { color: var(--muted); font-size: 13px; padding: 2px 8px 6px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; margin: 6px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--rule); text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
th { font-weight: 600; color: var(--muted); border-bottom: 2px solid var(--rule); }
table.env td { text-align: left; } table.env td:first-child { color: var(--muted); width: 120px; }
.notes { color: var(--muted); font-size: 13px; margin: 4px 0 0; }
footer { color: var(--muted); font-size: 12px; margin-top: 36px; }
svg.chart { display: block; font-family: inherit; }
svg .grid { stroke: var(--grid); stroke-width: 1; }
svg .axis { stroke: var(--muted); stroke-width: 1; }
svg .tick, svg .legend { fill: var(--muted); font-size: 12px; }
svg .legend { fill: var(--fg); font-size: 13px; }
svg .atitle { fill: var(--muted); font-size: 12.5px; }
svg .vlabel { fill: var(--fg); font-size: 11.5px; }
svg .note { fill: var(--note); font-size: 11.5px; font-weight: 600; }
svg .band { fill: var(--band); } svg .bandline { stroke: var(--muted); stroke-dasharray: 4 4; }
svg .bandlabel { fill: var(--muted); font-size: 12px; font-style: italic; }
svg .line { fill: none; stroke-width: 2.5; stroke-linejoin: round; }
svg .dot { stroke: var(--bg); stroke-width: 1.5; }
svg .whisker { stroke: var(--fg); stroke-width: 1.5; fill: none; opacity: .75; }
svg .bar.light { opacity: .42; } svg .swatch { fill: var(--muted); }
td.t, th.t { text-align: left; }
.lead { margin: 2px 0 10px; font-weight: 500; }
h3 { font-size: 15px; margin: 18px 0 4px; color: var(--muted); }
""" + "".join(f"svg .s{i} {{ fill: var(--c{i}); }} svg .line.s{i} {{ stroke: var(--c{i}); fill: none; }} "
              f"svg .s{i}t {{ fill: var(--c{i}); font-weight: 600; }}\n" for i in range(6))


def _numeric_column(rows: list[list[str]], j: int) -> bool:
    """A column reads as numbers when every cell starts like one (right-aligned then)."""
    cells = [r[j] for r in rows if j < len(r) and r[j] not in ("—", "")]
    return bool(cells) and all(c[:1].isdigit() or c[:1] in "~−-" or c.startswith(("tie", "error")) for c in cells)


def _html_table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    out = [f'<table{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>']
    width = max([len(headers)] + [len(r) for r in rows])
    align = ["" if j and _numeric_column(rows, j) else ' class="t"' for j in range(width)]
    if any(headers):
        out.append("<thead><tr>" + "".join(f"<th{align[j]}>{_e(h)}</th>" for j, h in enumerate(headers))
                   + "</tr></thead>")
    out.append("<tbody>")
    for r in rows:
        out.append("<tr>" + "".join(f"<td{align[j]}>{_e(c)}</td>" for j, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def render_html(analysis: dict[str, Any]) -> str:
    env = analysis.get("environment", {})
    lanes = lane_names(analysis)
    t = title(analysis)
    body = [f"<h1>{_e(t)}</h1>"]
    meta = [x for x in (env.get("created") and f"Recorded {env.get('created')}",
                        env.get("command") and f"command: {env.get('command')}",
                        f"lanemon {env.get('lanemon') or '?'}") if x]
    body.append(f'<p class="sub">{_e(" · ".join(meta))}</p>')
    for w in analysis.get("warnings") or []:
        body.append(f'<p class="warn"><strong>Warning:</strong> {_e(w)}</p>')
    v = verdict(analysis)
    if v:
        body.append('<section class="verdict"><h2>Verdict</h2><ul>' + "".join(f"<li>{_e(s)}</li>" for s in v)
                    + "</ul></section>")
    secs_ = sections(analysis)
    if not secs_:
        body.append('<p class="caption">This recording holds no bench or race results.</p>')
    fig = 0
    for s in secs_:
        body.append(f'<section id="{_e(s.key)}"><h2>{_e(s.title)}</h2>')
        if s.summary:
            body.append(f'<p class="lead">{_e(s.summary)}</p>')
        if s.chart is not None:
            svg = svg_chart(s.chart, lanes)
            if svg:
                fig += 1
                body.append(f"<figure>{svg}<figcaption>Figure {fig}. {_e(s.chart.title)}. {_e(s.caption)}"
                            f"</figcaption></figure>")
            else:
                body.append(f'<p class="caption">{_e(s.caption)}</p>')
        else:
            body.append(f'<p class="caption">{_e(s.caption)}</p>')
        body.append(_html_table(s.headers, s.rows))
        for note in s.notes:
            body.append(f'<p class="notes">{_e(note)}</p>')
        for sub, headers, rows in s.more:
            body.append(f"<h3>{_e(sub)}</h3>" + _html_table(headers, rows))
        body.append("</section>")
    body.append('<section id="environment"><h2>Environment</h2>'
                + _html_table(["", ""], environment_rows(env), "env") + "</section>")
    body.append(f"<footer>Generated by lanemon {_e(env.get('reported_by') or '')} from the recording alone; "
                f"definitions follow vLLM bench serve (TTFT, TPOT, ITL).</footer>")
    return html_page(t, body)


def html_page(title: str, body: list[str], css: str = CSS) -> str:
    """One self-contained HTML page: ``body`` sections inside ``<main>``, the styles inline."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{css}</style></head><body><main>"
            + "\n".join(body) + "</main></body></html>\n")


def render(analysis: dict[str, Any], fmt: str) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "md":
        return render_markdown(analysis)
    if fmt == "html":
        return render_html(analysis)
    if fmt == "json":
        return render_json(analysis)
    if fmt == "csv":
        return render_csv(analysis)
    raise ValueError(f"unknown report format {fmt!r} (choose: {', '.join(FORMATS)})")
