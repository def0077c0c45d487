"""One report section: a titled table (plus further tables, notes and a chart spec)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lanemon.reports.charts import Chart


@dataclass
class Section:
    key: str
    title: str
    caption: str
    headers: list[str]
    rows: list[list[str]]
    chart: Chart | None = None
    spark: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: str = ""
    """the section's one-sentence finding (printed above the table)."""
    more: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)
    """further (title, headers, rows) tables, after the main one."""
    more_models: list[Any] = field(default_factory=list)
    """the :class:`~lanemon.reports.tables.ResultTable` of each ``more`` table, in its order, where it has one."""
    model: Any = None
    """the main table's :class:`~lanemon.reports.tables.ResultTable` where it has one (``headers`` and ``rows``
    are its text): a screen fits it to its width (columns dropped by rank, and named) instead of cutting it."""
