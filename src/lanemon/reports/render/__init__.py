"""The report's renderers, one module per format: markdown, html (jinja2 templates + SVG charts), json, csv.

:func:`render` picks one by name (:data:`FORMATS`).  Every renderer works from the same
intermediate: :func:`lanemon.reports.sections.sections` and :func:`lanemon.reports.verdict.verdict`
(JSON is the analysis itself, CSV one row per cell).

Each renderer is imported when its format is asked for: ``report --format json`` never loads jinja2 and the HTML
sections (a report is often one short CLI process; tests/test_startup.py holds it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lanemon.results.analysis import Analysis

FORMATS = ("md", "html", "json", "csv")

_RENDERERS = {"md": ("markdown", "render_markdown"), "html": ("html", "render_html"),
              "json": ("json", "render_json"), "csv": ("csv", "render_csv")}


def _renderer(fmt: str):
    module, name = _RENDERERS[fmt]
    return getattr(importlib.import_module(f"lanemon.reports.render.{module}"), name)


def render(analysis: Analysis | dict[str, Any], fmt: str) -> str:
    """The report in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown report format {fmt!r} (choose: {', '.join(FORMATS)})")
    return _renderer(fmt)(analysis)


def __getattr__(name: str):  # render_html & co., imported on first use
    for fmt, (_, fn) in _RENDERERS.items():
        if fn == name:
            return _renderer(fmt)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FORMATS", "render", "render_csv", "render_html", "render_json", "render_markdown"]
