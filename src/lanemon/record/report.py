"""Reports from an analysis dict (:func:`lanemon.results.analyze`): Markdown, HTML, JSON, CSV.

Pure functions, no IO, no Textual.  Every renderer works from the same
intermediate: :func:`sections` turns the analysis into titled tables (and
chart specs), :func:`verdict` turns the numbers into sentences in the
write-up's style.  Markdown prints the tables (charts as text sparklines),
HTML adds inline SVG charts drawn here (one self-contained file: no scripts,
no external CSS, fonts or images; light and dark via ``prefers-color-scheme``).

Sections without data are left out; the verdict only says what the numbers
show (a lead under :data:`TIE` is called a tie).
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
    for bench in ("decode", "prefill", "needles", "race"):
        for name in (analysis.get(bench) or {}).get("lanes", {}) or {}:
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
    out.append(Section("decode", "Decode: aggregate throughput vs concurrency", caption, headers, rows, chart,
                       spark, notes))

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
    benches = [b for b in ("decode", "prefill", "needles", "race") if analysis.get(b)]
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
        lines += [f"## {s.title}", "", s.caption, ""]
        lines += _md_table(s.headers, s.rows) + [""]
        for note in s.notes:
            lines += [f"{note}  "]
        if s.notes:
            lines.append("")
        if s.spark:
            lines += ["```"] + s.spark + ["```", ""]
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


def _e(s: Any) -> str:
    return html.escape(str(s), quote=True)


def svg_chart(chart: Chart, lanes: list[str], width: int = 760, height: int = 330) -> str:
    """One chart as an inline ``<svg>`` (colours from CSS classes ``s0``..``s5``)."""
    left, right, top, bottom = 64, 16, 44, 58
    pw, ph = width - left - right, height - top - bottom
    vals = [v for s in chart.series.values() for v in s if v is not None] + [hi for _, hi in chart.ranges.values()]
    if not vals:
        return ""
    unit_s = chart.y_title.endswith("(s)")
    ymax, step = nice_max(max(vals) * (1.12 if chart.notes else 1.0))  # headroom for the notes
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
    color = {name: f"s{lanes.index(name) % 6 if name in lanes else 0}" for name in chart.series}
    fmtv = (lambda v: f"{v:.2f}") if unit_s else (lambda v: tok(v))

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
                parts.append(f'<rect class="bar {color[name]}" x="{x0 + 1:.1f}" y="{y(v):.1f}" width="{bw - 2:.1f}" '
                             f'height="{top + ph - y(v):.1f}"><title>{_e(name)} {_e(chart.x[i])}: {fmtv(v)}'
                             f"</title></rect>")
                rng = chart.ranges.get((name, i))
                label_y = y(v)
                if rng:
                    cx = x0 + bw / 2
                    parts.append(f'<path class="whisker" d="M{cx:.1f} {y(rng[0]):.1f}V{y(rng[1]):.1f}'
                                 f'M{cx - 5:.1f} {y(rng[0]):.1f}h10M{cx - 5:.1f} {y(rng[1]):.1f}h10">'
                                 f"<title>{_e(name)} {_e(chart.x[i])}: reps {fmtv(rng[0])}–{fmtv(rng[1])}</title></path>")
                    label_y = min(label_y, y(rng[1]))
                if bw >= 26:
                    parts.append(f'<text class="vlabel" x="{x0 + bw / 2:.1f}" y="{label_y - 5:.1f}" '
                                 f'text-anchor="middle">{_e(fmtv(v) if unit_s else _k(v) if v >= 10000 else tok(v))}'
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
td.t, th.t { text-align: left; }
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
        body.append("</section>")
    body.append('<section id="environment"><h2>Environment</h2>'
                + _html_table(["", ""], environment_rows(env), "env") + "</section>")
    body.append(f"<footer>Generated by lanemon {_e(env.get('reported_by') or '')} from the recording alone; "
                f"definitions follow vLLM bench serve (TTFT, TPOT, ITL).</footer>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(t)}</title><style>{CSS}</style></head><body><main>"
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
