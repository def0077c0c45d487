"""The report's sections: the analysis turned into titled tables and chart specs, one module per bench.

:func:`sections` returns them in report order (decode, TTFT, categories, prefill, needles,
sweep, open-loop load, races, quality gate, greedy agreement, KL, agent gauntlet); a bench without data has no
section.  :class:`~lanemon.reports.sections.section.Section` is what every renderer reads.
"""

from __future__ import annotations

from typing import Any, Callable

from lanemon.results.analysis import Analysis, as_analysis
from lanemon.reports.data import gauntlet_lanes, lane_names, present_lanes, qeval_runs
from lanemon.reports.sections.agree import agree_section
from lanemon.reports.sections.decode import decode_sections
from lanemon.reports.sections.efficiency import efficiency_section, load_efficiency_section
from lanemon.reports.sections.gauntlet import gauntlet_sections
from lanemon.reports.sections.kl import kl_section
from lanemon.reports.sections.load import load_section, sweep_section
from lanemon.reports.sections.needles import needles_section
from lanemon.reports.sections.prefill import prefill_section
from lanemon.reports.sections.qeval import qeval_section
from lanemon.reports.sections.race import race_section
from lanemon.reports.sections.section import Section
from lanemon.reports.sections.server import server_section


def sections(analysis: Analysis | dict[str, Any]) -> list[Section]:
    """The report's sections of ``analysis`` (an :class:`Analysis`, or its JSON form: :func:`as_analysis`)."""
    analysis = as_analysis(analysis)
    order = lane_names(analysis)

    def by_lane(bench: str, build: Callable[[Any, list[str]], Any]) -> Any:
        """*bench*'s section(s) from its typed result (``lanemon.results``) over the lanes with results for it;
        None when no lane has any."""
        lanes = present_lanes(analysis, bench)
        return build(analysis.bench(bench), lanes) if lanes else None

    race = analysis.race  # typed results (lanemon.results): None when the recording has none
    q = analysis.qeval
    ag = analysis.agree
    kl = analysis.kl
    g = analysis.gauntlet
    found = [  # report order; None = no section
        by_lane("decode", decode_sections),
        by_lane("decode", efficiency_section),
        by_lane("prefill", prefill_section),
        by_lane("needles", needles_section),
        server_section(analysis, order),
        by_lane("sweep", sweep_section),
        by_lane("load", load_section),
        by_lane("load", load_efficiency_section),
        race_section(race, order) if race is not None and race.races else None,
        qeval_section(q, order) if qeval_runs(q) else None,
        agree_section(ag) if ag is not None and (ag.total or ag.prompts) else None,
        kl_section(kl, order) if kl is not None and kl.lanes else None,
        gauntlet_sections(g, order) if gauntlet_lanes(g, order) else None,
    ]
    out: list[Section] = []
    for item in found:
        if isinstance(item, list):
            out += item
        elif item is not None:
            out.append(item)
    return out


__all__ = ["Section", "sections"]
