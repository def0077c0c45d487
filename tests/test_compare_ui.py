"""The compare screen: a pilot test and one snapshot, on fixed recordings written here."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static

from lanemon.reports.compare import compare, compare_lanes
from lanemon.reports.analyse import analyze
from lanemon.ui.app import make_app
from lanemon.ui.colours import lane_colour
from lanemon.ui.widgets.bench_chart import BenchChart, faded
from rich.text import Text
from test_compare_fixtures import session_events, slow_copy, write_recording


@pytest.fixture()
def result(tmp_path):
    old = write_recording(tmp_path / "old.jsonl", session_events())
    new = slow_copy(old, tmp_path / "new.jsonl", lane="A", factor=1.3)
    res = compare(analyze(old), analyze(new))
    # fixed labels: tmp paths differ per run
    res.old.recording, res.new.recording = "old.jsonl", "new.jsonl"
    return res


def _plain(widget) -> str:
    return str(widget.render())


async def test_compare_screen_shows_curves_races_and_highlighted_rows(result):
    app = make_app(compare=result)
    async with app.run_test(size=(150, 45)) as pilot:
        await pilot.pause()
        screen = app.screen
        decode = screen.query_one("#chart-decode", BenchChart)
        assert set(decode.series) == {"A old", "A new", "B old", "B new"}
        a_old, a_new = dict(decode.series["A old"]), dict(decode.series["A new"])
        assert a_new[1.0] == pytest.approx(a_old[1.0] / 1.3, rel=0.01)
        assert decode.series["B old"] == decode.series["B new"]
        prefill = screen.query_one("#chart-prefill", BenchChart)
        assert prefill.kind == "bars" and set(prefill.series) == {"A old", "A new", "B old", "B new"}
        # issue 12: a lane in its own colour on every screen: NEW in the lane's colour, OLD a faded variant of
        # it (○ on the lines, ▒ bars), the legend naming each; every lane distinct
        a, b = lane_colour(app, 0), lane_colour(app, 1)
        for chart in (decode, prefill):
            colours = chart.lane_colours(["A old", "A new", "B old", "B new"])
            assert colours == {"A new": a, "A old": faded(app, a, 0.45), "B new": b, "B old": faded(app, b, 0.45)}
            assert len(set(colours.values())) == 4
        legend = Text.from_markup(str(decode.border_subtitle)).plain
        assert legend.split() == ["○A", "old", "━A", "new", "○B", "old", "━B", "new"]
        bars = prefill.query_one("#bars", Static).visual.plain  # type: ignore[union-attr]
        assert "▒▒ A old" in bars and "██ A new" in bars
        assert all("▒" in line for line in bars.splitlines() if " old " in f" {line} " and "tok/s" in line
                   and "█" not in line)
        races = screen.query_one("#cmp-races", DataTable)
        assert races.display and races.row_count == 4  # 2 races x 2 lanes
        rows = screen.query_one("#cmp-rows", DataTable)
        assert rows.row_count == len(result.rows)
        styles = [str(rows.get_row_at(i)[-1].style) for i in range(rows.row_count)]
        sig = [r for r in result.rows if r.significant]
        assert sig and styles.count("bold red") == len(sig) and "bold green" not in styles
        head = _plain(screen.query_one("#cmp-head", Static))
        assert "significantly worse" in head and "new worse" in head
        await pilot.press("q")


async def test_lanes_mode_screen(tmp_path):
    old = write_recording(tmp_path / "old.jsonl", session_events())
    app = make_app(compare=compare_lanes(analyze(old), "A", "B"))
    async with app.run_test(size=(150, 45)) as pilot:
        await pilot.pause()
        decode = app.screen.query_one("#chart-decode", BenchChart)
        assert set(decode.series) == {"A", "B"}
        assert decode.lane_colours(["A", "B"]) == {"A": lane_colour(app, 0), "B": lane_colour(app, 1)}
        rows = app.screen.query_one("#cmp-rows", DataTable)
        assert [str(c.label) for c in rows.columns.values()] == ["cell", "metric", "B/A", "change", "A", "B", "bench"]


SAMPLE_OLD, SAMPLE_NEW = "sample_sessions/yesterday.jsonl", "sample_sessions/today.jsonl"


@pytest.fixture(scope="module")
def sample():
    return compare(analyze(SAMPLE_OLD), analyze(SAMPLE_NEW))


async def test_at_100x30_the_headline_ratio_change_and_keys_are_on_screen(sample):
    """Issue 25 item 7: the verdict leads (what changed most, by how much, beyond the spread?), the ratio and
    change columns fit at 100 columns, the footer names the keys, f filters to the figures that moved."""
    app = make_app(compare=sample)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        head = _plain(screen.query_one("#cmp-head", Static)).splitlines()
        assert head[0].startswith("Biggest change: decode per-stream tok/s p50 at C4 on B") and "-23 %" in head[0]
        assert "beyond the runs' own spread" in head[0]
        rows = screen.query_one("#cmp-rows", DataTable)
        labels = [str(c.label) for c in rows.columns.values()]
        assert labels == ["lane", "cell", "metric", "ratio", "change", "old", "new"]  # one bench: in the title
        x = 0
        for col in list(rows.columns.values())[:7]:
            x += col.get_render_width(rows)
        assert x <= rows.size.width - 2  # ratio, change, old and new inside the visible width (none cut)
        assert not screen.query_one("#cmp-charts").display  # under 40 rows the rows get the room; c shows them
        footer = " ".join(str(b.binding.description) for b in app.active_bindings.values() if b.binding.show)
        for words in ("Only changes", "Charts", "Quit"):
            assert words in footer
        assert "↑↓" in str(rows.border_subtitle)
        await pilot.press("f")
        await pilot.pause()
        moved = [r for r in sample.rows if r.significant or (r.beyond_band and not r.unreliable)]
        assert rows.row_count == len(moved) == 12
        await pilot.press("c")
        await pilot.pause()
        assert screen.query_one("#cmp-charts").display
        await pilot.press("q")


@pytest.mark.parametrize("size", [(100, 30), (160, 45)])
def test_snapshot_compare_sample_sessions(snap_compare, sample, size):
    async def before(pilot):
        await pilot.pause()

    assert snap_compare(make_app(compare=sample), terminal_size=size, run_before=before)


def test_snapshot_compare_screen(snap_compare, result):
    async def before(pilot):
        await pilot.pause()

    assert snap_compare(make_app(compare=result), terminal_size=(150, 45), run_before=before)


def test_html_compare_draws_old_and_new_of_a_lane_in_the_lane_colour(result):
    """The report's side of the same rule: a lane's series share its colour class (its place in the lane
    order), OLD dashed and light, the legend a dashed swatch for OLD."""
    import re

    from lanemon.reports.compare import render_html

    page = render_html(result)
    lines = re.findall(r'<polyline class="line (s\d)"([^>]*)points', page)
    assert sorted(cls for cls, _ in lines) == ["s0", "s0", "s1", "s1"]
    for cls in ("s0", "s1"):
        attrs = sorted(extra for c, extra in lines if c == cls)
        assert attrs[0].strip() == "" and 'stroke-dasharray="6 4"' in attrs[1]  # NEW solid, OLD dashed
    bars = re.findall(r'<rect class="bar( light)? (s\d)"[^>]*><title>([^<]*)</title>', page)
    assert bars and all((light == " light") == title.split()[1].startswith("old") and
                        cls == {"A": "s0", "B": "s1"}[title.split()[0]] for light, cls, title in bars)
