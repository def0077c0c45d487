"""Logprob divergence section: teacher-forced KL of each lane against the reference lane."""

from __future__ import annotations

from typing import Any

from lanemon.reports.data import kl_lanes
from lanemon.reports.format import clip, kl_num, pct
from lanemon.reports.sections.section import Section
from lanemon.reports.verdict import kl_verdict


def kl_section(kl: dict[str, Any], order: list[str]) -> Section:
    lanes = kl_lanes(kl, order)
    ref = kl.get("reference")
    headers = ["Lane", "role", "status", "KL mean (nats/token)", "p50", "p99", "positions", "message"]
    rows = []
    for n in lanes:
        c = kl["lanes"][n] or {}
        rows.append([n, "reference" if n == ref else "compared", str(c.get("status") or "—").replace("_", " "),
                     kl_num(c.get("kl")), kl_num(c.get("kl_p50")), pct(c.get("kl_p99"), 99, c.get("positions"), None, kl_num),
                     f"{c.get('positions', 0):,}", clip(c.get("message") or "", 90)])
    summary = (kl_verdict({"kl": kl, "environment": {"lanes": [{"name": n} for n in lanes]}}) or "").replace(
        "Logprob divergence: ", "", 1)
    cfg = kl.get("config") or {}
    caption = (f"Teacher-forced KL({ref} ‖ lane) per token: {ref} continues each prompt greedily, every lane scores "
               f"that text with top-{kl.get('k') or cfg.get('k') or '?'} prompt logprobs (echo); estimator "
               f"{kl.get('estimator') or 'topk_tail'}, a lower bound of the full-vocabulary KL, over positions where "
               f"both lanes scored the same token.")
    if cfg.get("prompts"):
        caption += f" {cfg['prompts']} prompts × {cfg.get('tokens', '?')} tokens."
    return Section("kl", f"Logprob divergence (KL vs {ref})", caption, headers, rows, summary=summary)
