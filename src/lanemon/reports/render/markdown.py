"""The Markdown report: verdict, one section per bench (tables, text sparklines), environment."""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import numeric_column
from lanemon.reports.sections import sections
from lanemon.reports.sections.environment import environment_rows, title
from lanemon.reports.simulated import banner
from lanemon.reports.verdict import verdict
from lanemon.results.analysis import Analysis, as_analysis


def md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    if not headers:
        return []
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |",
           "|" + "|".join("---:" if i and numeric_column(rows, i) else "---" for i in range(len(headers))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(md_cell(c) for c in r) + " |")
    return out


def render_markdown(analysis: Analysis | dict[str, Any]) -> str:
    analysis = as_analysis(analysis)
    env = analysis.environment
    lines = [f"# {title(analysis)}", ""]
    sim = banner(env.simulated)
    if sim:  # made from lanemon's simulator: said before anything else
        lines += [f"> **{sim}**", ""]
    meta = [x for x in (env.created, env.command and f"`{env.command}`") if x]
    if meta:
        lines += [" · ".join(meta), ""]
    for w in analysis.warnings:
        lines += [f"> **Warning:** {w}", ""]
    v = verdict(analysis)
    secs_ = sections(analysis)
    if v:
        lines += ["## Verdict", ""] + [f"- {s}" for s in v] + [""]
    if not secs_:
        lines += ["_This recording holds no bench or race results._", ""]
    for s in secs_:
        lines += [f"## {s.title}", ""]
        if s.summary:
            lines += [f"**{s.summary}**", ""]
        lines += [s.caption, ""]
        lines += (md_table(s.headers, s.rows) + [""]) if s.headers else []
        for note in s.notes:
            lines += [f"{note}  "]
        if s.notes:
            lines.append("")
        if s.spark:
            lines += ["```"] + s.spark + ["```", ""]
        for sub, headers, rows in s.more:
            lines += [f"### {sub}", ""] + md_table(headers, rows) + [""]
    lines += ["## Environment", ""] + md_table(["Item", "Value"], environment_rows(env)) + [""]
    return "\n".join(lines)
