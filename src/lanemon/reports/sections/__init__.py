"""The report's sections: the analysis turned into titled tables and chart specs, one module per bench.

:func:`sections` returns them in report order (decode, TTFT, categories, prefill, needles,
sweep, open-loop load, races, quality gate, greedy agreement, KL, agent gauntlet); a bench without data has no
section.  :class:`~lanemon.reports.sections.section.Section` is what every renderer reads.
"""

from __future__ import annotations

from typing import Any

from lanemon.reports.data import gauntlet_lanes, lane_names, present_lanes, qeval_runs
from lanemon.reports.sections.agree import agree_section
from lanemon.reports.sections.decode import decode_sections
from lanemon.reports.sections.gauntlet import gauntlet_sections
from lanemon.reports.sections.kl import kl_section
from lanemon.reports.sections.load import load_section, sweep_section
from lanemon.reports.sections.needles import needles_section
from lanemon.reports.sections.prefill import prefill_section
from lanemon.reports.sections.qeval import qeval_section
from lanemon.reports.sections.race import race_section
from lanemon.reports.sections.section import Section
from lanemon.reports.sections.server import server_section


def sections(analysis: dict[str, Any]) -> list[Section]:
    out: list[Section] = []
    decode = analysis.get("decode") or {}
    d_lanes = present_lanes(analysis, "decode")
    if d_lanes:
        out += decode_sections(decode, d_lanes)
    p_lanes = present_lanes(analysis, "prefill")
    if p_lanes:
        out.append(prefill_section(analysis["prefill"], p_lanes))
    n_lanes = present_lanes(analysis, "needles")
    if n_lanes:
        out.append(needles_section(analysis["needles"], n_lanes))
    srv = server_section(analysis, lane_names(analysis))
    if srv is not None:
        out.append(srv)
    s_lanes = present_lanes(analysis, "sweep")
    if s_lanes:
        out.append(sweep_section(analysis["sweep"], s_lanes))
    l_lanes = present_lanes(analysis, "load")
    if l_lanes:
        out.append(load_section(analysis["load"], l_lanes))
    race = analysis.get("race") or {}
    if race.get("races"):
        out.append(race_section(race, lane_names(analysis)))
    order = lane_names(analysis)
    q = analysis.get("qeval")
    if qeval_runs(q):
        out.append(qeval_section(q, order))
    ag = analysis.get("agree") or {}
    if ag.get("total") or ag.get("prompts"):
        out.append(agree_section(ag))
    kl = analysis.get("kl") or {}
    if kl.get("lanes"):
        out.append(kl_section(kl, order))
    g = analysis.get("gauntlet") or {}
    if gauntlet_lanes(g, order):
        out += gauntlet_sections(g, order)
    return out


__all__ = ["Section", "sections"]
