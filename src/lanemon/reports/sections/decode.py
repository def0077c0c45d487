"""Decode sections: aggregate throughput vs concurrency (crossover, goodput), TTFT at C1, per-category decode.

The throughput table leads with the steady-state aggregate (the figure the ladder, its crossover, the
verdict, the CLI table and the bench screen judge each level on) with the span (first send -> last end)
beside it; its Leader is the ladder's own per-level judgement with the shared noise band
(:func:`lanemon.reports.data.level_leads`).  Recordings without steady figures show the span, labelled.
"""

from __future__ import annotations

from lanemon.measure import stats as st
from lanemon.reports.charts import Chart
from lanemon.reports.data import crossover, decode_levels, first_level, has_steady, level_value
from lanemon.measure.catalogue import label
from lanemon.measure.metrics import tail_ok
from lanemon.reports.format import num, pct, secs, sparkline, tok
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import decode_table, error_kinds, leader_text  # noqa: F401 (leader_text: was here)
from lanemon.results.decode import DecodeCell, DecodeResult, ratios_of


def decode_sections(decode: DecodeResult, lanes: list[str]) -> list[Section]:
    out = []
    per = {n: decode_levels(decode, n) for n in lanes}
    levels = sorted(set().union(*(set(p) for p in per.values())))
    cross = crossover(decode, lanes)
    with_steady = has_steady(decode, lanes)
    # the throughput table is the model `bench decode` prints and the bench screen draws (reports/tables.py),
    # whole: the report has no width limit, so its detail columns (range, Leader, errors) stay
    model = decode_table(decode, lanes)
    headers, rows = model.labels(), model.text_rows()
    cells = [c for n in lanes for c in per[n].values()]
    any_unstable = any(c.unstable or (with_steady and c.steady_unstable) for c in cells)
    any_starved = any(c.unreliable for c in cells)
    if with_steady:
        caption = ("Aggregate decode throughput by concurrency. steady: output tokens written while all C streams "
                   "were in flight / that window (the figure each level is judged and drawn on); span: total "
                   "output tokens / first send → last end (ramp-up and drain included).")
    else:
        caption = ("Aggregate decode throughput by concurrency. span: total output tokens / first send → last end "
                   "(this recording predates the steady-state figure, so levels are judged on the span).")
    if len(lanes) > 1:
        caption += (f" Leader: the faster lane when the gap is beyond the noise band "
                    f"({st.DEFAULT_BANDS['throughput'] * 100:.0f} %, or the reps' own spread where wider), "
                    f"a tie inside it; ▲ marks the leader's row, = the two lanes of a tie.")
    if cross:
        caption += (f" {cross.leader_before} leads up to C{cross.between[0]}, "
                    f"{cross.leader_after} from C{cross.between[-1]}.")
    notes = list(model.notes)
    if any_unstable:
        notes.append("† unstable: the reps of this cell differ by more than the bench's stability threshold.")
    if any_starved:
        notes.append("? lanemon itself was starved while this cell ran (held up for 2 % of the cell or more): its "
                     "figure is not lane speed, the level is not judged and the chart leaves the point out.")

    def drawn(c: DecodeCell | None) -> float | None:
        return None if c is None or c.unreliable else level_value(c)

    top = max((v for p in per.values() for c in p.values() if (v := drawn(c))), default=0)
    spark = [f"{n}  {sparkline([drawn(per[n].get(lvl)) for lvl in levels], top)}  "
             f"C{levels[0]}→C{levels[-1]}" + ("" if with_steady else " (span)") for n in lanes] if levels else []
    band = None
    if cross:
        try:
            band = (levels.index(int(cross.between[0])), levels.index(int(cross.between[-1])))
        except ValueError:
            band = None
    what = "steady-state" if with_steady else "span"
    chart = Chart("line", f"Aggregate decode vs concurrency ({what})", "concurrent streams (C)",
                  f"{what} aggregate decode (tok/s)",
                  [f"C{lvl}" for lvl in levels], {n: [drawn(per[n].get(lvl)) for lvl in levels] for n in lanes},
                  band=band, band_label="crossover", gaps=True)
    out.append(Section("decode", "Decode: aggregate throughput vs concurrency", caption, headers, rows, chart,
                       spark, notes, model=model))

    # TTFT and per-stream detail at C1
    c1 = {n: first_level(decode, n) for n in lanes}
    lvl1 = min((c[0] for c in c1.values() if c), default=1)
    headers = ["Lane", "TTFT p50", "TTFT p90", "TTFT p99", label("per_stream_tok_s"), label("requests"), label("errors")]
    rows = []
    series: dict[str, list[float | None]] = {}
    short: dict[int, list[str]] = {}
    for n in lanes:
        c = per[n].get(lvl1)
        if c is None:  # this lane did not run the level
            rows.append([n, secs(None), pct(None, 90, None, None), pct(None, 99, None, None), tok(None), "—", "—"])
            series[n] = [None, None, None]
            continue
        k = c.ttft_n
        rows.append([n, secs(c.ttft_p50_s), pct(c.ttft_p90_s, 90, k, c.ttft_max_s),
                     pct(c.ttft_p99_s, 99, k, c.ttft_max_s),
                     tok(c.per_stream_tok_s_p50) + (" ~" if c.tokens_estimated else ""),
                     str(c.requests), error_kinds(c) if num(c.errors) else str(c.errors)])
        series[n] = [num(c.ttft_p50_s), num(c.ttft_p90_s), num(c.ttft_p99_s)]
        top = num(c.ttft_max_s)
        if isinstance(k, int) and top is not None:  # too few samples for a tail percentile: the bar is the largest
            for i, q in ((1, 90), (2, 99)):
                if not tail_ok(q, k):
                    series[n][i] = top
                    short.setdefault(q, []).append(f"{n} n={k}")
    labels = ["p50"] + [f"p{q}" + (" (max)" if q in short else "") for q in (90, 99)]
    chart = Chart("bars", f"TTFT at C{lvl1}" + (f"; max where too few samples ({', '.join(short[99])})"
                                                 if 99 in short else ""),
                  "percentile", "time to first token (s)", labels, series)
    out.append(Section("ttft", f"Time to first token at C{lvl1}",
                       "Request sent → first token-carrying chunk, over the completed requests of the level. A p90 "
                       "rests on 10 samples and a p99 on 100: with fewer, the largest sample is shown as max (n).",
                       headers, rows, chart))

    # per-category at C1
    cats_by_lane = {n: decode.lanes[n].categories if n in decode.lanes else {} for n in lanes}
    cats: list[str] = []
    for n in lanes:
        for c in cats_by_lane[n]:
            if c not in cats:
                cats.append(c)
    if cats:
        ratios = ratios_of(decode)  # the result's own A/B per category (computed once: results/decode.py)
        headers = (["Category"] + [f"{n} {label('per_stream_tok_s')}" for n in lanes]
                   + ([f"{'/'.join(ratios.compared)} {label('category_ratio')}"] if ratios is not None else []))
        rows = []
        for cat in cats:
            got = [cats_by_lane[n].get(cat) for n in lanes]
            vals = [num(x.per_stream_tok_s) if x is not None else None for x in got]
            row = [cat] + [tok(v) + (f" [{x.errors} err]" if x is not None and x.errors else "")
                           for x, v in zip(got, vals)]
            if ratios is not None:
                r = num(ratios.by_category.get(cat))
                row.append(f"{r:.2f}×" if r else "—")
            rows.append(row)
        chart = Chart("bars", f"Per-stream decode at C{lvl1} by prompt category", "prompt category",
                      "per-stream decode (tok/s)", cats,
                      {n: [num(x.per_stream_tok_s) if (x := cats_by_lane[n].get(c)) is not None else None
                           for c in cats] for n in lanes})
        out.append(Section("categories", f"Per-category decode at C{lvl1}",
                           "Per-stream decode tok/s ((output tokens − 1) / (E2E − TTFT)), median per category.",
                           headers, rows, chart))
    return out
