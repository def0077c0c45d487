"""The window table is laid out by StatsLines when it fits (a Rich ``Table`` cost ~6 ms per change, the dearest
widget of the live dashboard): the same segments as the Rich table it replaces, and one layout per change of
what it shows, none while its figures stay."""

from __future__ import annotations

import itertools

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.widgets import lane_stats
from lanemon.ui.widgets.lane_stats import COLUMNS, LaneStats, StatsLines, rich_table


def _segments(renderable, width: int) -> list[list[Segment]]:
    console = Console(width=width, color_system="truecolor", force_terminal=True, legacy_windows=False)
    lines = console.render_lines(renderable, console.options.update(width=width), pad=False)
    # no style and the null style draw alike: compared as one, adjacent segments of one style merged
    return [list(Segment.simplify([Segment(seg.text, seg.style or Style()) for seg in line])) for line in lines]


def _rows(variant: int) -> list[list]:
    """Rows as the widget builds them: lane names in colour, plain figures, counts styled when not zero."""
    counts = [0, 3, 12, 1234]
    rows = []
    for k, name in enumerate(("A", "B-long-lane")):
        n = counts[(variant + k) % len(counts)]
        rows.append([Text(f"■ {name}", style="#ff8800"), "—" if variant % 3 == 0 else f"{0.15 * (k + 1):.2f}",
                     str(40 + variant), Text(str(n), style="bold red" if n else ""), Text("0", style=""),
                     Text(str(n % 3), style="bold yellow" if n % 3 else ""), Text(str(k), style="yellow" if k else ""),
                     "172·190·max 199 ms" if variant % 2 else "—", "12.5·13.0·14.0 ms", f"1,{variant}02·2,001·2,300 ms"])
    rows.append([Text("B-long-lane/A", style="bold"), "1.02×", "", "", "", "", "", "p50 1.29× slower",
                 "p50 0.94× faster", "p50 1.00× same"])
    return rows


@pytest.mark.parametrize("variant", range(6))
@pytest.mark.parametrize("shown", [list(range(10)), [0, 1, 2, 3, 7, 8, 9], [0, 1, 2, 3, 7], [0, 9]])
def test_stats_lines_are_the_rich_tables_segments(variant, shown):
    columns = [(f"last 1 min" if i == 0 else COLUMNS[i][0], COLUMNS[i][1]) for i in shown]
    rows = [[row[i] for i in shown] for row in _rows(variant)]
    fitted = StatsLines.fitting(columns, rows, 200)
    assert fitted is not None
    for width in (fitted.width, fitted.width + 1, 200):
        assert _segments(StatsLines.fitting(columns, rows, width), width) == _segments(rich_table(columns, rows), width)


def test_a_table_wider_than_its_room_is_left_to_rich():
    columns = list(COLUMNS)
    rows = _rows(1)
    natural = StatsLines.fitting(columns, rows, 500).width
    assert StatsLines.fitting(columns, rows, natural) is not None
    assert StatsLines.fitting(columns, rows, natural - 1) is None  # Rich's Table shrinks its columns
    assert StatsLines.fitting(columns, rows, 0) is None  # not laid out yet: no width known


def test_cells_are_never_read_as_markup():
    fitted = StatsLines.fitting([("lane", "left")], [[Text("■ [b]x")], ["[red]y"]], 80)
    assert [line.plain for line in fitted.lines] == ["lane  ", "■ [b]x", "[red]y"]


async def test_the_live_dashboard_lays_its_table_out_once_per_change_and_never_with_rich(monkeypatch):
    built = []
    monkeypatch.setattr(lane_stats, "rich_table", lambda *a: built.append(a) or rich_table(*a))
    app = make_app(ScriptedSource(sample_events(), mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.2)
        app.redraw(force=True)
        await pilot.pause()
        table = app.screen.query_one(LaneStats)
        first = table.renders
        assert first >= 1
        for _ in range(3):  # the same figures: not laid out again
            app.redraw(force=True)
            await pilot.pause()
        assert table.renders == first
        assert built == []  # at 160x45 the table fits: no Rich Table is built
        lines = [strip.text for strip in table.render_lines(table.region.reset_offset)]
        assert lines[0].lstrip().startswith("last 1 min")
