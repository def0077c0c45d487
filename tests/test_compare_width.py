"""`lanemon compare` in a terminal of 100 (and 80, 160) columns with several benches (issue 25): the table is
the compare model fitted to the width -- the reps' ranges, then whole columns (old, change) left out and named,
never a figure cut or wrapped, never the lane or the new value."""

from __future__ import annotations

import re

import pytest

from lanemon.reports.analyse import analyze
from lanemon.reports.compare import compare
from lanemon.reports.compare_text import render_table, value_text
from test_compare_fixtures import session_events, slow_copy, write_recording


@pytest.fixture()
def result(tmp_path):
    old = write_recording(tmp_path / "old.jsonl", session_events())
    new = slow_copy(old, tmp_path / "new.jsonl", lane="A", factor=1.3)
    out = compare(analyze(old), analyze(new))
    assert len({r.bench for r in out.rows}) > 1  # decode and prefill
    return out


@pytest.mark.parametrize("width", [80, 100, 160])
def test_compare_table_fits_the_terminal_with_every_figure_whole(result, width):
    text = render_table(result, width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width
    head = next(line for line in lines if line.startswith("┃"))
    labels = [h.strip() for h in head.strip("┃").split("┃")]
    assert {"bench", "lane", "cell", "metric", "new", "ratio"} <= set(labels), labels  # several benches: bench stays
    if width >= 100:
        assert "change" in labels  # the verdict words stay at 100 columns
    body = [line for line in lines if line.startswith("│")]
    new_at = labels.index("new")
    news = [value_text(r.new, r.unit, r.metric) for r in result.rows]
    cells = [[c.strip() for c in line.strip("│").split("│")] for line in body]
    shown = [row[new_at] for row in cells if row[new_at]]
    assert len(shown) == len(result.rows)  # one line with a figure per row: none wrapped onto a second line
    for figure, cell in zip(news, shown):
        assert cell == figure or cell.startswith(figure + " ("), (figure, cell)  # whole, its range whole or gone
    assert all(re.fullmatch(r"[\d.]+×|—", row[labels.index("ratio")]) for row in cells if row[new_at])
    hidden = [line for line in lines if line.startswith("hidden at this width")]
    assert bool(hidden) == (len(labels) < 8)
