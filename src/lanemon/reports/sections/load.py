"""Open-loop load and concurrency-sweep sections: rates, latency percentiles, send lag; knees and the crossover."""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import err_text, num, pct, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.workloads.bench.load import load_headlines


def _rate(v: Any) -> str:
    x = num(v)
    return "—" if x is None else (f"{x:,.1f}" if x < 100 else f"{x:,.0f}")


def _p99(d: dict[str, Any]) -> str:
    return pct(d.get("p99"), 99, d.get("n"), d.get("max"))


def load_section(load: dict[str, Any], lanes: list[str]) -> Section:
    cfg = (load.get("config") or {}).get("load") or {}
    what = f"{cfg.get('arrival', '?')} arrivals" + (f" at {cfg['rate']:g} req/s" if cfg.get("rate") else "")
    headers = ["Lane", "Rep", "Measured", "OK", "Err", "Sched req/s", "Sent req/s", "Served req/s", "Out tok/s",
               "TTFT p50", "TTFT p99", "TPOT p50", "E2E p99", "Send lag p99"]
    rows = []
    notes = []
    for lane in lanes:
        for i, r in enumerate((load["lanes"].get(lane) or {}).get("reps") or []):
            lag = secs(r["send_lag_s"]["p99"]) + (" (behind)" if r.get("client_behind") else "")
            rows.append([lane, str(i + 1), str(r["measured"]), str(r["ok"]), str(r["errors"]),
                         _rate(r["scheduled_rate_rps"]), _rate(r["sent_rate_rps"]),
                         _rate(r["completed_rate_rps"]) + (" (behind)" if r.get("lane_behind") else ""),
                         tok(r["output_tok_s"]), secs(r["ttft_s"]["p50"]), _p99(r["ttft_s"]),
                         secs(r["tpot_s"]["p50"]), _p99(r["e2e_s"]), lag])
            if r.get("error"):
                notes.append(f"{lane} rep {i + 1}: first error {err_text(r['error'])}")
            apart = ", ".join(f"{r[k]} {k}" for k in ("truncated", "empty", "bursts") if r.get(k))
            if apart:
                notes.append(f"{lane} rep {i + 1}: {apart} (counted apart, no figure from them)")
    headlines = load_headlines({"lanes": {n: load["lanes"][n] for n in lanes if n in load["lanes"]}})
    if any(r.get("reasoning_tok_s") for n in lanes for r in (load["lanes"].get(n) or {}).get("reps") or []):
        for lane in lanes:
            for i, r in enumerate((load["lanes"].get(lane) or {}).get("reps") or []):
                if r.get("reasoning_tok_s"):
                    notes.append(f"{lane} rep {i + 1}: out tok/s counts reasoning: {tok(r.get('visible_tok_s'))} "
                                 f"visible + {tok(r['reasoning_tok_s'])} reasoning tok/s")
    if any((load["lanes"].get(n) or {}).get("client_behind") for n in lanes):
        notes.append("behind: lanemon sent some requests more than 10 ms late (p99); the lane was offered less "
                     "than the schedule says.")
    warm = ", ".join(f"{k} {cfg[k]:g} s" for k in ("warmup", "cooldown") if cfg.get(k))
    caption = (f"Open-loop load, {what}. Served req/s and out tok/s: requests that completed and tokens "
               "(reasoning included) that arrived inside the measured window, whenever they were sent; latency "
               "percentiles over the window's completed requests" + (f" ({warm} excluded)" if warm else "") + ".")
    return Section("load", "Open-loop load", caption, headers, rows, notes=notes,
                   summary="; ".join(headlines))


def sweep_section(sweep: dict[str, Any], lanes: list[str]) -> Section:
    levels = sorted({int(c) for n in lanes for c in ((sweep["lanes"].get(n) or {}).get("levels") or {})})
    # the knee is the sweep's own rule on the span (first send -> last end), so the table shows that figure
    headers = ["C"] + [f"{n} span tok/s (gain per doubling)" for n in lanes]
    rows = []
    for c in levels:
        row = [f"C{c}"]
        for n in lanes:
            d = sweep["lanes"].get(n) or {}
            cell = (d.get("levels") or {}).get(str(c))
            gain = (d.get("gain_per_doubling") or {}).get(str(c))
            if cell is None:
                row.append("—")
            else:
                row.append(tok(cell.get("aggregate_tok_s")) + (f" ({gain * 100:+.0f} %)" if gain is not None else ""))
        rows.append(row)
    found = []
    for n in lanes:
        d = sweep["lanes"].get(n) or {}
        if d.get("knee"):
            found.append(f"{n}: knee at C{d['knee']}" + ("" if d.get("knee_reliable", True) else
                                                         " (unreliable: lanemon itself was starved there)"))
        elif d.get("stopped") == "slo":
            found.append(f"{n}: SLO holds up to C{d.get('slo_holds_to')}")
        else:
            found.append(f"{n}: stopped ({d.get('stopped')})")
    x = sweep.get("crossover")
    if x:
        found.append(f"{x['leader_after']} overtakes {x['leader_before']} between C{x['between'][0]} and "
                     f"C{x['between'][1]}")
    gain = num(sweep.get("knee_gain")) or 0.1
    return Section("sweep", "Concurrency sweep: the knee", f"Concurrency raised until a doubling gains under "
                   f"{gain:.0%} of aggregate decode tok/s (span: total output tokens / first send → last end; the knee), "
                   f"an SLO breaks or errors appear.",
                   headers, rows, summary="; ".join(found))
