"""The bench screen at 100x30 (issue 25 item 10): the header never cuts the recording's name (where even the
name does not fit it says '● rec' and the errors panel's border, full width, names the file), and the results
table never hides its last rows without saying so ('↓ N more' in its border); a finished bench gives the
progress panel's lines (every bar full, the header says N/N cells) to the results."""

from __future__ import annotations

import pytest
from textual.widgets import Label

from lanemon.ui.app import make_app
from lanemon.ui.widgets.bench_log import BenchLog
from lanemon.ui.widgets.bench_progress import BenchProgress
from lanemon.ui.widgets.bench_table import BenchTable
from test_ui_bench import steady_bench
from test_ui_snapshots import settle


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def test_the_header_shows_the_recording_name_whole_or_not_at_all():
    bench = steady_bench()
    app = make_app(bench)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        label = app.screen.query_one("#path", Label)
        text = label.visual.plain
        name = bench.recording_path.name
        assert len(text) <= label.size.width - 2  # drawn whole, no ellipsis
        assert text == "● rec" or name in text
        log = app.screen.query_one(BenchLog)
        assert (name in str(log.border_subtitle)) == (text == "● rec")  # named below where not in the header


@pytest.mark.parametrize("height", [18, 30])
async def test_the_results_table_says_when_rows_are_below_the_fold(height):
    app = make_app(steady_bench())
    async with app.run_test(size=(100, height)) as pilot:
        await settle(pilot)
        await pilot.pause()
        table = app.screen.query_one(BenchTable)
        assert table.row_count == 8
        assert not app.screen.query_one(BenchProgress).display  # finished: its lines went to the results
        below = table.row_count - (table.size.height - 1)
        if below > 0:
            assert f"↓ {below} more" in str(table.border_subtitle)
        else:
            assert "more" not in str(table.border_subtitle)
        assert (below > 0) == (height == 18)  # 18 rows: some below the fold; at 100x30 every row shows


CATEGORIES = ["coding", "prose", "reasoning", "narrative", "summarization", "extraction", "translation", "math"]


@pytest.mark.parametrize("size", [(100, 30), (160, 45), (100, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_category_bars_show_every_category_or_say_how_many_are_not(size):
    """decode.jsonl's replay at 100x30 showed 5 of its 8 categories (the fifth without lane B) with nothing
    saying 3 were below: now the 8 fit side by side (one line each) where one line per bar does not, and
    where even that does not fit, whole categories show and the border says '↓ N more'."""
    from pathlib import Path

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.widgets.bench_chart import BenchChart
    from test_replay_snapshots import played_out
    from test_ui_bench import plain

    app = make_app(ReplaySession(Path(__file__).resolve().parents[1] / "sample_sessions" / "decode.jsonl",
                                 speed=float("inf")))
    async with app.run_test(size=size) as pilot:
        await played_out(pilot)
        side = app.screen.query_one("#chart-side", BenchChart)
        bars = side.query_one("#bars")
        visible = plain(bars).splitlines()[: bars.size.height]
        shown = [c for c in CATEGORIES if any(line.split()[:1] == [c] for line in visible)]
        hidden = len(CATEGORIES) - len(shown)
        assert (f"↓ {hidden} more" in str(side.border_subtitle)) if hidden else "more" not in str(side.border_subtitle)
        if size != (100, 24):
            assert shown == CATEGORIES  # 100x30 and 160x45: every category on the screen
        assert shown == CATEGORIES[: len(shown)]
        for c in shown:  # a category shows with both lanes' figures, never cut between them
            i = next(i for i, line in enumerate(visible) if line.split()[:1] == [c])
            assert " A " in visible[i] and (" B " in visible[i]
                                            or (i + 1 < len(visible) and visible[i + 1].split()[:1] == ["B"]))
        assert side.hidden_groups == hidden


def test_bars_that_do_not_fit_go_side_by_side_then_by_whole_groups():
    from lanemon.ui.widgets.bench_chart import fit_bars

    labels = CATEGORIES
    two = {"A": [148.0, 88, 96, 92, 118, 140, 112, 126], "B": [134.0, 74, 82, 78, 104, 126, 99, 113]}
    text, hidden = fit_bars(labels, two, {}, 41, "tok/s", height=18)  # 1 + 16 lines: one line per bar
    assert hidden == 0 and len(text.plain.splitlines()) == 17
    text, hidden = fit_bars(labels, two, {}, 41, "tok/s", height=10)  # side by side
    lines = text.plain.splitlines()
    assert hidden == 0 and len(lines) == 9 and all(len(line) <= 41 for line in lines)
    assert lines[1].split() == ["coding", "A", "██████", "148", "B", "█████▍", "134"]
    text, hidden = fit_bars(labels, two, {}, 41, "tok/s", height=5)
    assert hidden == 4 and [line.split()[0] for line in text.plain.splitlines()[1:]] == labels[:4]
    three = {**two, "C": [100.0] * 8}  # three lanes do not go side by side in 41 columns: whole groups
    text, hidden = fit_bars(labels, three, {}, 41, "tok/s", height=10)
    lines = text.plain.splitlines()
    assert hidden == 5 and len(lines) == 10 and [line.split()[1 if i % 3 == 0 else 0] for i, line in enumerate(lines[1:])] == ["A", "B", "C"] * 3


def test_the_bars_key_is_whole_in_its_short_form_where_the_long_one_does_not_fit():
    """At 100 columns the starved key read '(tok/s from 0; ░? lanemon …'."""
    from lanemon.ui.widgets.bench_chart import render_bars

    two = {"A": [2925.0, 1752.0], "B": [2595.0, 1475.0]}
    legend = render_bars(["coding", "prose"], two, {}, 41, "tok/s", flagged={("A", "coding")}).plain.splitlines()[0]
    assert legend.endswith("(tok/s from 0; ░? starved)") and "…" not in legend
    legend = render_bars(["coding", "prose"], two, {}, 101, "tok/s", flagged={("A", "coding")}).plain.splitlines()[0]
    assert legend.endswith("(tok/s from 0; ░? lanemon starved)")
