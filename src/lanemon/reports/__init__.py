"""Reports from recordings: analyse, judge, render, compare, export (pure functions, no IO, no Textual).

What lives here:

* ``analyse.py`` -- a recording (or several) -> the analysis dict (docs/JSON.md);
* ``data.py`` -- reading that dict: lane order, each bench's cells;
* ``verdict.py`` -- the verdict sentences (a lead under ``TIE`` is a tie);
* ``sections/`` -- one module per bench turning the analysis into titled tables and chart specs;
* ``render/`` -- one module per format (markdown, html, json, csv) and :func:`render`;
* ``charts.py`` -- the SVG chart engine; ``templates/`` -- the HTML page, report and stylesheet (jinja2);
* ``format.py`` -- number, seconds, length and ratio formatting (the UI and the CLI use it too);
* ``compare.py`` -- two sessions (or two lanes) cell by cell; ``export.py`` -- per-request rows.

The entry points are importable from here: :func:`render_report` (``analysis, fmt -> text``; also
:func:`lanemon.reports.render.render`) and :data:`FORMATS`,
:func:`analyze` and :func:`analyze_many`; the verdict is :func:`lanemon.reports.verdict.verdict`, the
sections :func:`lanemon.reports.sections.sections` (module and function share their names, so they are
not re-exported here).  ``lanemon report`` is :mod:`lanemon.cli.report`.
"""

from __future__ import annotations

import importlib
from typing import Any

_ENTRY_POINTS = {"analyze": ("lanemon.reports.analyse", "analyze"),
                 "analyze_many": ("lanemon.reports.analyse", "analyze_many"),
                 "FORMATS": ("lanemon.reports.render", "FORMATS"),
                 "render_report": ("lanemon.reports.render", "render")}
"""Imported on first use (PEP 562), not with the package: the dashboard reads ``reports/simulated.py`` and
``reports/format.py`` and its first frame need not wait for the renderers (jinja2) and the analysis."""


def __getattr__(name: str) -> Any:
    if name in _ENTRY_POINTS:
        module, attr = _ENTRY_POINTS[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FORMATS", "analyze", "analyze_many", "render_report"]
