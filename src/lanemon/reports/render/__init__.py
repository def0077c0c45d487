"""The report's renderers, one module per format: markdown, html (jinja2 templates + SVG charts), json, csv.

:func:`render` picks one by name (:data:`FORMATS`).  Every renderer works from the same
intermediate: :func:`lanemon.reports.sections.sections` and :func:`lanemon.reports.verdict.verdict`
(JSON is the analysis itself, CSV one row per cell).
"""

from __future__ import annotations

from typing import Any

from lanemon.results.analysis import Analysis
from lanemon.reports.render.csv import render_csv
from lanemon.reports.render.html import render_html
from lanemon.reports.render.json import render_json
from lanemon.reports.render.markdown import render_markdown

FORMATS = ("md", "html", "json", "csv")


def render(analysis: Analysis | dict[str, Any], fmt: str) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "md":
        return render_markdown(analysis)
    if fmt == "html":
        return render_html(analysis)
    if fmt == "json":
        return render_json(analysis)
    if fmt == "csv":
        return render_csv(analysis)
    raise ValueError(f"unknown report format {fmt!r} (choose: {', '.join(FORMATS)})")


__all__ = ["FORMATS", "render", "render_csv", "render_html", "render_json", "render_markdown"]
