"""Greedy agreement section: where two lanes' greedy continuations first differ."""

from __future__ import annotations

from typing import Any

from lanemon.reports.charts import NEUTRAL, Chart
from lanemon.reports.data import agree_pair
from lanemon.reports.format import clip
from lanemon.reports.sections.section import Section
from lanemon.reports.verdict import agree_sentence


def where_they_part(row: dict[str, Any], a: str, b: str) -> str:
    if row.get("error"):
        return f"error: {clip(row['error'], 50)}"
    if row.get("exact"):
        return "exact"
    ta, tb = row.get("a_text"), row.get("b_text")
    if ta is None or tb is None:
        return ""
    wa, wb = str(ta).split(), str(tb).split()
    d = int(row.get("first_divergence_word") or 0)
    lead = " ".join(wa[max(0, d - 3):d])
    xa = clip(wa[d], 18) if d < len(wa) else "(end)"
    xb = clip(wb[d], 18) if d < len(wb) else "(end)"
    return f"{'… ' + clip(lead, 30) + ' ' if lead else ''}→ {a} “{xa}” / {b} “{xb}”"


def agree_section(ag: dict[str, Any]) -> Section:
    a, b = agree_pair(ag)
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
                  {f"{a} vs {b}": [float(hist[k]) for k in labels]}, integer=True, colors={f"{a} vs {b}": NEUTRAL})
    top = max(hist.values(), default=0)
    width = max(len(k) for k in labels) if labels else 0
    spark = [f"{k:>{width}} {'█' * round(v / top * 30) if top else ''}{' ' if v else ''}{v}" for k, v in hist.items()]
    prompts = ag.get("prompts") or []
    more = []
    if prompts:
        h = ["Prompt", "first differing word", f"{a} words", f"{b} words", "where they part"]
        more.append(("Per prompt", h, [[str(r.get("id")), "—" if r.get("error") else str(r.get("first_divergence_word")),
                                        str(r.get("a_words", "—")), str(r.get("b_words", "—")), where_they_part(r, a, b)]
                                       for r in prompts]))
    caption = ("Per prompt, the first whitespace-separated word where the two continuations differ; an exact match "
               "agrees on every word. A signature of quantization on open-ended text, not a quality verdict "
               "(that is the quality gate).")
    return Section("agree", "Greedy agreement", caption, ["First difference at", "prompts", "share"], rows, chart,
                   spark, summary=summary, more=more)
