"""The verdict: sentences in the write-up's style, each backed by the numbers in the analysis.

:func:`verdict` goes bench by bench (decode and its crossover, prefill, prefix-cache hits,
needles, races, the quality gate, greedy agreement, KL, the agent gauntlet, decode errors).
It only says what the numbers show: a lead inside the shared noise band
(:func:`lanemon.measure.stats.noise_band`, the one the decode ladder and ``compare``
use; :data:`TIE` is its default for throughput) is called a tie, and every
decode winner or crossover says the band it was judged against.  The
sentence helpers here (:func:`qeval_sentence`, :func:`agree_sentence`, :func:`kl_lane_text`,
:func:`gauntlet_why`) are also the one-line summaries of their report sections.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from lanemon.measure import stats as st
from lanemon.measure.stats import median
from lanemon.reports.data import (agree_pair, agg, crossover, decode_levels, first_level, gauntlet_lanes, kl_lanes,
                                  lane_names, prefill_cells, present_lanes, qeval_misses, qeval_runs, race_wins)
from lanemon.reports.format import int_key, int_text, kl_num, length_label, number_word, num, ratio_text, secs, \
    clip, sorted_keys, tok
from lanemon.results.agree import AgreeResult
from lanemon.results.analysis import Analysis, as_analysis
from lanemon.results.common import as_result
from lanemon.results.decode import DecodeCell, DecodeResult
from lanemon.results.gauntlet import GauntletResult
from lanemon.results.kl import KlResult
from lanemon.results.qeval import QevalCompare

TIE = 1 + st.DEFAULT_BANDS["throughput"]
"""Leads smaller than this ratio are reported as ties (the shared noise band's default for throughput)."""


def _dec(cell: DecodeCell | None) -> float | None:
    """A decode level's aggregate: the steady-state figure where the results have one."""
    if cell is None:
        return None
    v = num(cell.steady_tok_s)
    return v if v is not None else agg(cell)


def _band(cell_a: DecodeCell, cell_b: DecodeCell) -> st.NoiseBand:
    if cell_a.steady_tok_s is not None:
        return st.noise_band("throughput", cell_a.steady_reps or [], cell_b.steady_reps or [])
    return st.noise_band("throughput", cell_a.reps or [], cell_b.reps or [])


def _band_text(band: st.NoiseBand) -> str:
    return f"noise band {band.band * 100:.0f} %" + (" from the reps" if band.from_reps else "")


def _two(ranked: list[tuple[str, float]]) -> tuple[str, float, str, float]:
    (a, va), (b, vb) = ranked[0], ranked[1]
    return a, va, b, vb


class PrefillLead(NamedTuple):
    """Which lane prefills faster (cold), by how much, over which lengths (:func:`_prefill_lead`)."""

    leader: str
    others: list[str]
    lo: float
    """The leader's smallest ratio over the runner-up at a length it won."""
    hi: float
    """Its largest."""
    won: int
    """Lengths the leader won."""
    of: int
    """Lengths with a figure on two lanes or more."""
    cells: list[tuple[float, float, str]]
    """(ratio, length, length's key) of each length the leader won."""


def _prefill_lead(analysis: Analysis) -> PrefillLead | None:
    """Which lane prefills faster (cold), by how much, over which lengths."""
    prefill = analysis.prefill
    lanes = present_lanes(analysis, "prefill")
    if prefill is None or len(lanes) < 2:
        return None
    lengths = set.intersection(*(set(prefill_cells(prefill, n)) for n in lanes))
    wins: dict[str, list[tuple[float, float, str]]] = {n: [] for n in lanes}
    for length in sorted_keys({k: None for k in lengths}):
        vals = [(n, num(prefill_cells(prefill, n)[length].prefill_tok_s)) for n in lanes]
        vals = [(n, v) for n, v in vals if v]
        if len(vals) < 2:
            continue
        vals.sort(key=lambda t: -t[1])
        wins[vals[0][0]].append((vals[0][1] / vals[1][1], int_key(length), length))
    total = sum(len(w) for w in wins.values())
    if not total:
        return None
    leader = max(wins, key=lambda n: len(wins[n]))
    ratios = [r for r, _, _ in wins[leader]]
    return PrefillLead(leader=leader, others=[n for n in lanes if n != leader], lo=min(ratios), hi=max(ratios),
                       won=len(wins[leader]), of=total, cells=wins[leader])


def verdict(analysis: Analysis | dict[str, Any]) -> list[str]:
    """Sentences in the write-up's style, each backed by the numbers in ``analysis`` (an :class:`Analysis` or
    its JSON form).  An interrupted run leads with what did not run, so no sentence after it reads as a whole
    run's."""
    from lanemon.reports.analyse import interrupted_text

    analysis = as_analysis(analysis)
    out: list[str] = [t for t in (interrupted_text(b, analysis.bench(b)) for b in analysis.benches()) if t]
    out = [t[0].upper() + t[1:] + "." for t in out]
    decode = analysis.decode
    d_lanes = present_lanes(analysis, "decode") if decode is not None else []
    pre = _prefill_lead(analysis)
    pre_used = False

    if decode is not None and len(d_lanes) >= 2:
        c1 = {n: first_level(decode, n) for n in d_lanes}
        lvl1 = min(c[0] for c in c1.values() if c)
        ranked = sorted(((n, _dec(decode_levels(decode, n).get(lvl1))) for n in d_lanes),
                        key=lambda t: -(t[1] or 0))
        ranked = [(n, v) for n, v in ranked if v]
        cross = crossover(decode, d_lanes)
        if len(ranked) >= 2:
            a, va, b, vb = _two(ranked)
            r = va / vb
            who = "One user" if lvl1 == 1 else f"{number_word(lvl1)} concurrent users"
            short = pre is not None and pre.leader != a
            band = _band(decode_levels(decode, a)[lvl1], decode_levels(decode, b)[lvl1])
            if r - 1 <= band.band + 1e-9:
                s = f"{who}: {a} and {b} tie on decode at C{lvl1} ({tok(va)} vs {tok(vb)} tok/s, {_band_text(band)})"
            else:
                s = (f"{who}{', short prompts' if short else ''} → {a}: ~{ratio_text(r)} faster decode at "
                     f"C{lvl1} ({tok(va)} vs {tok(vb)} tok/s, {_band_text(band)})")
                s += _ttft_clause(decode, a, b, lvl1)
                s += _category_clause(decode, a, b, lvl1)
            out.append(s + ".")
            top = max(set.intersection(*(set(k for k, c in decode_levels(decode, n).items() if _dec(c))
                                         for n in (a, b))), default=None)
            if cross is not None and cross.leader_after in d_lanes:
                after, before = cross.leader_after, cross.leader_before
                lo_c, hi_c = cross.between[0], cross.between[-1]
                longp = pre is not None and pre.leader == after
                s = f"{number_word(int(hi_c))} or more users{' or long prompts' if longp else ''} → {after}: overtakes " \
                    f"between C{lo_c} and C{hi_c}"
                lvls_after = decode_levels(decode, after)
                lvls_before = decode_levels(decode, before)
                bits = []
                gap = next((g for g in cross.levels if g.level == int(hi_c)), None)
                if gap is not None and gap.gap is not None:  # the results' own judgement at the first level after
                    lead = gap.gap if after == (cross.compared or [None, after])[1] else -gap.gap
                    bits.append(f"C{hi_c}: {after} {lead * 100:+.1f} % against a noise band of "
                                f"{gap.band * 100:.0f} %")
                if top is not None and _dec(lvls_after.get(top)) and _dec(lvls_before.get(top)):
                    band = _band(lvls_after[top], lvls_before[top])
                    bits.append(f"C{top}: {tok(_dec(lvls_after[top]))} vs {tok(_dec(lvls_before[top]))} tok/s, "
                                f"{_band_text(band)}")
                if bits:
                    s += " (" + "; ".join(bits) + ")"
                if longp:
                    s += f"; prefill {ratio_text(pre.lo, pre.hi)} faster"
                    pre_used = True
                out.append(s + ".")
            elif top is not None and top != lvl1:
                ca_t, cb_t = decode_levels(decode, a)[top], decode_levels(decode, b)[top]
                va_t, vb_t = _dec(ca_t), _dec(cb_t)
                band = _band(ca_t, cb_t)
                if va_t and vb_t:
                    if va_t / vb_t - 1 > band.band + 1e-9:
                        out.append(f"No crossover up to C{top}: {a} still leads there ({tok(va_t)} vs "
                                   f"{tok(vb_t)} tok/s, {ratio_text(va_t / vb_t)}, {_band_text(band)}).")
                    elif abs(vb_t / va_t - 1) <= band.band + 1e-9:
                        out.append(f"At C{top} the lanes tie ({tok(va_t)} vs {tok(vb_t)} tok/s, {_band_text(band)}).")
    elif decode is not None and len(d_lanes) == 1:
        n = d_lanes[0]
        levels = decode_levels(decode, n)
        vals = [(k, _dec(c)) for k, c in levels.items() if _dec(c) and not c.unreliable]
        if vals:
            best = max(vals, key=lambda t: t[1])
            out.append(f"Decode on {n}: {tok(vals[0][1])} tok/s at C{vals[0][0]}, peaking at {tok(best[1])} tok/s "
                       f"at C{best[0]}.")

    if pre is not None and not pre_used:
        lead, others = pre.leader, pre.others
        if pre.hi < TIE:
            out.append(f"Prefill: {lead} and {', '.join(others)} tie.")
        else:
            where = "" if pre.won == pre.of else f" at {pre.won} of {pre.of} lengths"
            best = max(pre.cells, key=lambda c: c[1])
            length = best[2]
            prefill = analysis.prefill
            assert prefill is not None  # pre is None without it
            v_lead = num(prefill_cells(prefill, lead)[length].prefill_tok_s)
            v_oth = num(prefill_cells(prefill, others[0])[length].prefill_tok_s)
            out.append(f"Long prompts → {lead}: prefill {ratio_text(pre.lo, pre.hi)} faster{where} "
                       f"({tok(v_lead)} vs {tok(v_oth)} tok/s at {length_label(length)}).")
    hits = _cache_hits(analysis)
    if hits:
        parts = [f"{n} {tok(v)} tok/s at {length_label(length)}" for n, length, v in hits]
        out.append("Prefix-cache hits (" + "; ".join(parts) + ") are cache hits, not prefill, and are left out "
                   "of the prefill figures.")
    for fn in (_needles_sentence, _race_sentence, _qeval_verdict, _agree_verdict, kl_verdict, _gauntlet_verdict,
               _error_sentence):
        s = fn(analysis)
        if s:
            out.append(s)
    return out


def _ttft_clause(decode: DecodeResult, a: str, b: str, lvl: int) -> str:
    ca, cb = decode_levels(decode, a).get(lvl), decode_levels(decode, b).get(lvl)
    ta = num(ca.ttft_p50_s) if ca is not None else None
    tb = num(cb.ttft_p50_s) if cb is not None else None
    if ta is None or tb is None:
        return ""
    if max(ta, tb) / max(min(ta, tb), 1e-9) < TIE:
        return f"; same TTFT ({secs(ta)})"
    if ta < tb:
        return f", TTFT {secs(ta)} vs {secs(tb)}"
    return f", though {b} answers first (TTFT {secs(tb)} vs {secs(ta)})"


def _category_clause(decode: DecodeResult, a: str, b: str, lvl: int) -> str:
    la, lb = decode.lanes.get(a), decode.lanes.get(b)
    ca = {k: num(c.per_stream_tok_s) for k, c in (la.categories if la is not None else {}).items()}
    cb = {k: num(c.per_stream_tok_s) for k, c in (lb.categories if lb is not None else {}).items()}
    common = [c for c in ca if c in cb and ca[c] and cb[c]]
    if len(common) < 2:
        return ""
    diffs = sorted(((ca[c] / cb[c], c) for c in common), reverse=True)  # type: ignore[operator]
    faster = [c for r, c in diffs if r >= 1.0]
    if len(faster) == len(common):
        top = ", ".join(f"{c} {tok(ca[c])} vs {tok(cb[c])}" for _, c in diffs[:2])
        return f"; faster in every prompt category ({top})"
    if not faster:
        top = ", ".join(f"{c} {tok(cb[c])} vs {tok(ca[c])}" for _, c in diffs[::-1][:2])
        return f"; but {b} is faster per stream in every prompt category ({top})"
    return f"; faster in {len(faster)} of {len(common)} prompt categories"


def _cache_hits(analysis: Analysis) -> list[tuple[str, str, float]]:
    prefill = analysis.prefill
    out: list[tuple[str, str, float]] = []
    if prefill is None:
        return out
    for n in present_lanes(analysis, "prefill"):
        cells = prefill_cells(prefill, n)
        for length in sorted_keys(cells):
            v = num(cells[length].cache_hit_tok_s)
            if v:
                out.append((n, length, v))
    return out


def _needles_sentence(analysis: Analysis) -> str | None:
    needles = analysis.needles
    lanes = present_lanes(analysis, "needles")
    if needles is None or not lanes:
        return None
    missed, lengths, total = [], set(), 0
    for n in lanes:
        for length, c in needles.lanes[n].lengths.items():
            lengths.add(length)
            total += 1
            if not c.found:
                missed.append(f"{n} at {length_label(length)}" + (" (error)" if c.error else ""))
    if not total:
        return None
    ls = sorted_keys({k: None for k in lengths})
    span = length_label(ls[0]) if len(ls) == 1 else f"{length_label(ls[0])}–{length_label(ls[-1])}"
    who = "both lanes" if len(lanes) == 2 else ("every lane" if len(lanes) > 2 else f"lane {lanes[0]}")
    if not missed:
        return f"Needles: all found on {who} ({span})."
    return f"Needles: missed by {', '.join(missed)}; {total - len(missed)} of {total} found."


def _race_sentence(analysis: Analysis) -> str | None:
    race = analysis.race
    races = race.races if race is not None else []
    if race is None or not races:
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


def _error_sentence(analysis: Analysis) -> str | None:
    decode = analysis.decode
    parts = []
    for n in present_lanes(analysis, "decode") if decode is not None else []:
        errs = sum(int(num(c.errors) or 0) for c in decode_levels(decode, n).values())
        if errs:
            parts.append(f"{n} {errs}")
    if not parts:
        return None
    return f"Decode errors ({', '.join(parts)}) are counted, never averaged in; those cells cover completed " \
           f"requests only."


def paired_text(c: QevalCompare) -> str:
    if not (c.broke or c.fixed):  # McNemar has nothing to test: say so, not "p = 1.000"
        return f"kept {c.kept}, broke 0, fixed 0: no discordant pairs"
    return f"kept {c.kept}, broke {c.broke}, fixed {c.fixed}, McNemar p = {c.p_value:.3f}"


def qeval_sentence(q: Any) -> str | None:
    """``A 71/75, B 71/75, the same four misses (code_interval_intersect, ...)``."""
    runs = qeval_runs(q)
    if not runs:
        return None
    score = ", ".join(f"{n} {r.passed}/{r.total}" + (  # skipped: no sandbox, or no recorded verdict
        f" ({len(r.skipped)} not scored)" if r.skipped else "") for n, r in runs.items())
    misses = {n: qeval_misses(r) for n, r in runs.items()}
    first = next(iter(misses.values()))
    if all(not m for m in misses.values()):
        return f"{score}, no misses"
    if len(runs) == 1:
        return f"{score}; {'misses' if len(first) > 1 else 'missed'}: {', '.join(first)}"
    if all(set(m) == set(first) for m in misses.values()):
        k = len(first)
        what = "miss" if k == 1 else f"{number_word(k).lower()} misses"
        return f"{score}, the same {what} ({', '.join(first)})"
    return score + "; misses: " + "; ".join(f"{n} {', '.join(m) if m else 'none'}" for n, m in misses.items())


def _qeval_verdict(analysis: Analysis) -> str | None:
    q = analysis.qeval
    s = qeval_sentence(q)
    if s is None:
        return None
    c = q.compare if q is not None else None
    if not isinstance(c, QevalCompare):
        return f"Quality gate (qeval): {s}."
    broke, fixed, p = c.broke, c.fixed, c.p_value
    a, b = c.a.name, c.b.name
    if broke == 0 and fixed == 0:
        return f"Quality gate: identical — {s}; {paired_text(c)}."
    if p is not None and p < 0.05:
        lead = b if fixed > broke else a
        return f"Quality gate → {lead}: {s}; {paired_text(c)}."
    return f"Quality gate: no significant difference — {s}; {paired_text(c)}."


def agree_sentence(ag: AgreeResult) -> str | None:
    """``0/40 exact matches with a median first divergence at word 2 (9/40 agree ..., 18/40 diverge at word 0)``."""
    total = ag.total
    if not total:
        return None
    return (f"{ag.exact}/{total} exact matches with a median first divergence at word "
            f"{int_text(ag.median_first_divergence_word)} ({ag.agree_ge_10_words}/{total} agree for "
            f"ten or more words, {ag.diverge_at_0}/{total} diverge at word 0)")


def _agree_verdict(analysis: Analysis) -> str | None:
    ag = analysis.agree
    s = agree_sentence(ag) if ag is not None else None
    if ag is None or s is None:
        return None
    a, b = agree_pair(ag)
    if ag.exact == ag.total:
        return f"Greedy agreement {a} vs {b}: {ag.exact}/{ag.total} exact matches."
    return f"Greedy agreement {a} vs {b}: {s}; a divergence signature, not a quality verdict."


def kl_lane_text(kl: KlResult, n: str) -> str:
    """``KL(B ‖ A) = 0.0123 nats/token (...)`` or ``not exposed by lane A: HTTP 400: ...``."""
    c = kl.lanes.get(n)
    ref = kl.reference
    st, msg = (c.status, c.message) if c is not None else (None, None)
    if c is not None and st == "ok":
        if n == ref:
            return f"{n} is the reference"
        return (f"KL({ref} ‖ {n}) = {kl_num(c.kl)} nats/token (p50 {kl_num(c.kl_p50)}, "
                f"p99 {kl_num(c.kl_p99)}, {c.positions:,} positions)")
    if st == "not_exposed":
        return f"not exposed by lane {n}: {clip(msg or 'no logprobs', 90)}"
    if st == "skipped":
        return f"{n} skipped: {clip(msg or '', 90)}"
    return f"{n} {st or 'unknown'}: {clip(msg or '', 90)}"


def kl_verdict(analysis: Analysis | dict[str, Any]) -> str | None:
    analysis = as_analysis(analysis)
    kl = analysis.kl
    lanes = kl_lanes(kl, lane_names(analysis)) if kl is not None else []
    if kl is None or not lanes:
        return None
    ref = kl.reference
    ok = [n for n in lanes if n != ref and kl.lanes[n].status == "ok"]
    if ok:
        return "Logprob divergence: " + "; ".join(kl_lane_text(kl, n) for n in ok) + "."
    why = [kl_lane_text(kl, n) for n in lanes if kl.lanes[n].status != "ok"]
    return "No KL between lanes: " + "; ".join(why) + "."


def gauntlet_why(g: GauntletResult, lanes: list[str]) -> tuple[str, str]:
    """(sentence on where the time goes, verdict clause) from the per-turn TTFT/decode split."""
    d = g.lanes
    share = []
    for n in lanes:
        if num(d[n].ttft_share) is not None:
            share.append(f"{d[n].ttft_share:.0%} of {n}'s")
    first = lanes[0]
    tt = d[first].by_turn
    prompts = [v.prompt_tokens for v in tt if v.prompt_tokens]
    outs = [v.completion_tokens for v in tt if v.completion_tokens and v.tool]
    head = "Every turn re-sends the system prompt and the growing transcript"
    if prompts:
        head += f" ({tok(prompts[0])} → {tok(prompts[-1])} prompt tokens on {first})"
    if outs:
        head += f" for a ~{median(outs):.0f}-token tool call"
    head += f", so TTFT (prefill) is {' and '.join(share)} request time" if share else ""
    clause = ""
    if len(lanes) >= 2:
        walls = {n: num(g.lanes[n].median_wall_s) for n in lanes}
        ranked = sorted((n for n in lanes if walls[n] is not None), key=lambda n: walls[n])
        if len(ranked) >= 2 and walls[ranked[1]] / max(walls[ranked[0]], 1e-9) >= TIE:
            fast, slow = ranked[0], ranked[1]
            pf, ps = num(d[fast].median_ttft_sum_s), num(d[slow].median_ttft_sum_s)
            df, ds = num(d[fast].median_decode_sum_s), num(d[slow].median_decode_sum_s)
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


def _gauntlet_verdict(analysis: Analysis) -> str | None:
    g = analysis.gauntlet
    lanes = gauntlet_lanes(g, lane_names(analysis))
    if not isinstance(g, GauntletResult) or not lanes:
        return None
    d = g.lanes
    summary = g.summary
    hops = "?" if g.config.hops is None else g.config.hops
    if len(lanes) == 1:
        return f"Agents: {summary}." if summary else None
    walls = {n: num(d[n].median_wall_s) for n in lanes}
    ranked = sorted((n for n in lanes if walls[n] is not None), key=lambda n: walls[n])
    if len(ranked) < 2:
        return f"Agents: {summary}." if summary else None
    fast, slow = ranked[0], ranked[1]
    rate = {n: d[n].correct / d[n].reps for n in lanes}
    of = "median of " + str(d[fast].reps) if d[fast].reps == d[slow].reps else "medians"
    _, clause = gauntlet_why(g, lanes)
    if rate[slow] > rate[fast]:
        return (f"Agents: {fast} finishes the {hops}-hop chain faster ({secs(walls[fast])} vs {secs(walls[slow])}, "
                f"{of}) but {slow} is correct more often ({d[slow].correct}/{d[slow].reps} vs "
                f"{d[fast].correct}/{d[fast].reps}).")
    if walls[slow] / max(walls[fast], 1e-9) < TIE:
        return (f"Agents: {fast} and {slow} tie on the {hops}-hop chain ({secs(walls[fast])} vs "
                f"{secs(walls[slow])}, {of}).")
    body = summary[len(fast) + 1:] if summary.startswith(f"{fast} finished") else (
        f"finished the {hops}-hop chain in {secs(walls[fast])} vs {slow} {secs(walls[slow])} ({of})")
    return f"Agents → {fast}: {body}" + (f"; {clause}" if clause else "") + "."
