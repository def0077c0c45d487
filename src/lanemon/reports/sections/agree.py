"""Greedy agreement section: where two lanes' greedy continuations first differ."""

from __future__ import annotations

from lanemon.measure.catalogue import label
from lanemon.reports.charts import NEUTRAL, Chart
from lanemon.reports.data import agree_pair
from lanemon.reports.format import clip, share
from lanemon.reports.sections.section import Section
from lanemon.reports.verdict import agree_sentence
from lanemon.results.agree import AgreePrompt, AgreeResult


def where_they_part(row: AgreePrompt, a: str, b: str) -> str:
    if row.error:
        return f"error: {clip(row.error, 50)}"
    if row.exact:
        return "exact"
    if row.a_text is None or row.b_text is None:
        return ""
    wa, wb = row.a_text.split(), row.b_text.split()
    d = row.first_divergence_word or 0
    lead = " ".join(wa[max(0, d - 3):d])
    xa = clip(wa[d], 18) if d < len(wa) else "(end)"
    xb = clip(wb[d], 18) if d < len(wb) else "(end)"
    return f"{'… ' + clip(lead, 30) + ' ' if lead else ''}→ {a} “{xa}” / {b} “{xb}”"


def _words(n: int | None) -> str:
    return "—" if n is None else str(n)


def agree_section(ag: AgreeResult) -> Section:
    a, b = agree_pair(ag)
    hist = ag.histogram
    total = ag.total
    labels = list(hist)
    rows = [[("exact match" if k == "exact" else f"word {k.replace('-', '–')}"), str(v),
             share(ag.histogram_share.get(k))] for k, v in hist.items()]
    what = f"{total} raw-text prompts" + (f" × {ag.config.tokens} tokens" if ag.config.tokens else "")
    summary = f"{a} vs {b}, greedy (temperature 0) on {what}: {agree_sentence(ag) or 'no prompt compared'}"
    if ag.errors:
        e = ag.errors
        summary += f"; {e} prompt{'s' if e != 1 else ''} errored and {'are' if e != 1 else 'is'} left out"
    summary += "."
    chart = Chart("bars", "Where the continuations first differ", "first differing word (0-based)", "prompts",
                  [("exact" if k == "exact" else k.replace("-", "–")) for k in labels],
                  {f"{a} vs {b}": [float(hist[k]) for k in labels]}, integer=True, colors={f"{a} vs {b}": NEUTRAL})
    top = max(hist.values(), default=0)
    width = max(len(k) for k in labels) if labels else 0
    spark = [f"{k:>{width}} {'█' * round(v / top * 30) if top else ''}{' ' if v else ''}{v}" for k, v in hist.items()]
    more = []
    if ag.prompts:
        h = ["Prompt", label("agree_first"), f"{a} {label('agree_words')}", f"{b} {label('agree_words')}",
             "where they part"]
        more.append(("Per prompt", h, [[str(r.id), "—" if r.error else str(r.first_divergence_word),
                                        _words(r.a_words), _words(r.b_words), where_they_part(r, a, b)]
                                       for r in ag.prompts]))
    caption = ("Per prompt, the first whitespace-separated word where the two continuations differ; an exact match "
               "agrees on every word. A signature of quantization on open-ended text, not a quality verdict "
               "(that is the quality gate).")
    return Section("agree", "Greedy agreement", caption,
                   ["First difference at", label("agree_bucket"), label("agree_bucket_share")], rows, chart,
                   spark, summary=summary, more=more)
