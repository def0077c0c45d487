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

from lanemon.reports.analyse import analyze, analyze_many
from lanemon.reports.render import FORMATS
from lanemon.reports.render import render as render_report

__all__ = ["FORMATS", "analyze", "analyze_many", "render_report"]
