"""Logprob divergence section: teacher-forced KL of each lane against the reference lane."""

from __future__ import annotations

from lanemon.reports.data import kl_lanes
from lanemon.reports.format import kl_num, pct
from lanemon.reports.sections.section import Section
from lanemon.reports.tables import Cell, Column, ResultTable, clip_words
from lanemon.reports.verdict import kl_verdict
from lanemon.results.kl import KlResult


def kl_section(kl: KlResult, order: list[str]) -> Section:
    lanes = kl_lanes(kl, order)
    ref = kl.reference
    unit = "nats/token"
    # a screen fits the table to its width (ResultTable.fit): the message is cut between words, then the
    # role (the title names the reference), the positions and the percentiles go, named under the table
    columns = [Column("Lane", 0, "left"), Column("role", 4, "left"), Column("status", 0, "left"),
               Column(f"KL mean ({unit})", 0, short="KL mean", unit=unit), Column("p50", 2, unit=unit),
               Column("p99", 1, unit=unit), Column("positions", 3), Column("message", 0, "left", clip=True)]
    rows = []
    for n in lanes:
        c = kl.lanes[n]
        rows.append([Cell(x) for x in (
            n, "reference" if n == ref else "compared", str(c.status or "—").replace("_", " "), kl_num(c.kl),
            kl_num(c.kl_p50), pct(c.kl_p99, 99, c.positions, None, kl_num), f"{c.positions:,}",
            clip_words(" ".join(str(c.message or "").split()), 90))])
    model = ResultTable("kl", f"Logprob divergence (KL vs {ref})", columns, rows)
    summary = (kl_verdict({"kl": kl, "environment": {"lanes": [{"name": n} for n in lanes]}}) or "").replace(
        "Logprob divergence: ", "", 1)
    cfg = kl.config
    caption = (f"Teacher-forced KL({ref} ‖ lane) per token: {ref} continues each prompt greedily, every lane scores "
               f"that text with top-{kl.k or cfg.k or '?'} prompt logprobs (echo); estimator "
               f"{kl.estimator or 'topk_tail'}, a lower bound of the full-vocabulary KL, over positions where "
               f"both lanes scored the same token.")
    if cfg.prompts:
        caption += f" {cfg.prompts} prompts × {cfg.tokens if cfg.tokens is not None else '?'} tokens."
    return Section("kl", model.title, caption, model.labels(), model.text_rows(), summary=summary, model=model)
