"""The HTML report: one self-contained page (no scripts, no external CSS, fonts or images).

The page and its stylesheet are jinja2 templates in ``lanemon/reports/templates``
(``page.html.j2`` the shell the compare page shares, ``report.html.j2`` the report,
``macros.html.j2`` the table, ``report.css`` light and dark via ``prefers-color-scheme``);
the charts are inline SVG from :mod:`lanemon.reports.charts`.  Every value is escaped
(:func:`lanemon.reports.format.esc`) unless it is markup built by lanemon itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from lanemon.reports.charts import svg_chart
from lanemon.reports.data import lane_names
from lanemon.reports.format import esc, numeric_column
from lanemon.reports.sections import sections
from lanemon.reports.sections.environment import environment_rows, title as report_title
from lanemon.reports.simulated import banner
from lanemon.reports.verdict import verdict
from lanemon.results.analysis import Analysis, as_analysis

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def _finalize(value: Any) -> Any:
    """Escape every value the way the reports always have (``html.escape``), markup excepted."""
    return value if isinstance(value, Markup) else Markup(esc(value))


NOWRAP_CHARS = 28
"""A cell at most this long never wraps (``max 172 ms (n=8)``, ``A (1.20×)``, ``0.17 s / 148 / 1.90 s / 256``):
a table too wide for the page scrolls sideways in its own box (``div.tscroll``) rather than break a figure from
its label over two lines; longer text (a prompt, an error message, a command line) wraps as before."""


def _cell_len(cell: Any) -> int:
    return len(cell.striptags() if isinstance(cell, Markup) else str(cell))


def column_classes(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Per column: ``''`` (right-aligned numbers) or ``'t'`` (text, left-aligned)."""
    width = max([len(headers)] + [len(r) for r in rows])
    return ["" if j and numeric_column(rows, j) else "t" for j in range(width)]


def cell_class(column: str, cell: Any = "") -> Markup:
    """A cell's class attribute: its column's (:func:`column_classes`) and ``nw`` when it is short
    (:data:`NOWRAP_CHARS`): ``' class="t nw"'``; a header only its column's."""
    names = [n for n in (column, "nw" if cell is not None and _cell_len(cell) <= NOWRAP_CHARS else "") if n]
    return Markup(f' class="{" ".join(names)}"' if names else "")


ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, finalize=_finalize,
                         trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                         undefined=jinja2.StrictUndefined)
ENV.globals["column_classes"] = column_classes
ENV.globals["cell_class"] = cell_class

CSS = ENV.get_template("report.css").render()
"""The report's stylesheet (the compare page adds its own rules after it)."""


def html_table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    """One table as HTML (the template macro the report uses)."""
    return str(ENV.get_template("macros.html.j2").module.table(headers, rows, cls))


def html_page(title: str, body: list[str], css: str = CSS) -> str:
    """One self-contained HTML page: ``body`` (markup) inside ``<main>``, the styles inline."""
    return ENV.get_template("page.html.j2").render(title=title, css=Markup(css), body=Markup("\n".join(body)))


def render_html(analysis: Analysis | dict[str, Any]) -> str:
    analysis = as_analysis(analysis)
    env = analysis.environment
    lanes = lane_names(analysis)
    meta = [x for x in (env.created and f"Recorded {env.created}",
                        env.command and f"command: {env.command}",
                        f"lanemon {env.lanemon or '?'}") if x]
    shown, fig = [], 0
    for s in sections(analysis):
        svg = svg_chart(s.chart, lanes) if s.chart is not None else ""
        if svg:
            fig += 1
        shown.append({"key": s.key, "title": s.title, "summary": s.summary, "caption": s.caption,
                      "svg": Markup(svg), "figure": fig, "chart_title": s.chart.title if svg else "",
                      "headers": s.headers, "rows": s.rows, "notes": s.notes, "more": s.more})
    return ENV.get_template("report.html.j2").render(
        title=report_title(analysis), css=Markup(CSS), meta=" · ".join(meta), warnings=[w for w in [banner(env.simulated)] if w]
        + list(analysis.warnings),
        verdict=verdict(analysis), sections=shown, environment=environment_rows(env),
        reported_by=env.reported_by or "")
