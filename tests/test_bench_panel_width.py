"""The bench screen's results panel takes the width its table needs, within a share of the screen (issue 40):
it was a fixed 50 columns, so the decode table said `+2 in report` (TTFT p90 and requests hidden) even at
240x70 with 180 columns of chart beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_panel_width_takes_what_the_table_needs_within_its_share():
    from lanemon.ui.screens.bench import PANEL_MIN, panel_width

    assert panel_width(30, 4, 20, 240) == PANEL_MIN             # a narrow table: the least width
    assert panel_width(80, 4, 20, 240) == 81                    # its need, the border less the edge it counts
    assert panel_width(80, 30, 20, 240) == 83                   # and the scrollbar where rows overflow
    assert panel_width(200, 4, 20, 240) == 108                  # at most 45 % of the screen
    assert panel_width(80, 4, 20, 100) == PANEL_MIN             # 100 columns: the charts keep their room


async def _bench_replay(name: str, size: tuple[int, int]):
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app
    from lanemon.ui.widgets.bench_table import BenchTable

    app = make_app(ReplaySession(SAMPLES / f"{name}.jsonl", speed=float("inf")))
    async with app.run_test(size=size) as pilot:
        loop = __import__("asyncio").get_running_loop()
        end = loop.time() + 60
        while not (app.source.finished and app.screen_name() == "bench"):
            assert loop.time() < end, "the replay did not finish"
            await pilot.pause(0.05)
        table = app.screen.query_one(BenchTable)
        end = loop.time() + 30  # the results are drawn, then the panel laid out at its width and fitted again
        while True:
            labels = [str(c.label) for c in table.columns.values()]
            settled = (table.row_count and table.virtual_size.width <= table.scrollable_content_region.width
                       and app.screen.query_one("#bench-left").size.width == app.screen.query_one(
                           "#bench-left").styles.width.value)
            if settled or loop.time() > end:
                break
            await pilot.pause(0.05)
        legend = str(table.border_subtitle)
        need, room = table.virtual_size.width, table.scrollable_content_region.width
        panel = app.screen.query_one("#bench-left").size.width
        await pilot.press("q")
    return labels, legend, need, room, panel


@pytest.mark.parametrize("name,want", [
    ("decode", ["C", "lane", "steady tok/s", "span tok/s", "TTFT p50", "TTFT p90", "per-stream tok/s", "err",
                "requests"]),
    ("prefill", ["length", "lane", "prefill tok/s", "TTFT", "cache hit tok/s", "B/A", "err", "prompt tokens",
                 "requests"]),
])
async def test_at_240x70_the_bench_table_shows_every_column_whole(name, want):
    labels, legend, need, room, panel = await _bench_replay(name, (240, 70))
    assert "in report" not in legend, legend
    assert [x for x in want if x not in labels] == [], labels
    assert need <= room and 50 < panel <= 108


async def test_at_100x30_the_panel_keeps_its_50_columns():
    labels, legend, need, room, panel = await _bench_replay("decode", (100, 30))
    assert panel == 50 and need <= room


async def test_a_six_digit_cache_hit_note_stays_whole_at_80x24():
    """At 80x24 the prefill chart's 21-cell panel wrapped `◀ cache hit` / `160,607` onto two lines: a note
    that fits the width on a line of its own is indented less and stays whole (and a number never leaves its
    unit where it must wrap)."""
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app
    from test_replay_snapshots import played_out

    app = make_app(ReplaySession(SAMPLES / "prefill.jsonl", speed=float("inf")))
    async with app.run_test(size=(80, 24)) as pilot:
        await played_out(pilot)
        results = app.bench_results.results(in_progress=False)
        for cell in results.lanes["B"].lengths.values():
            cell.cache_hit_tok_s = 160607.0
        app.screen.refresh_results(results)
        await pilot.pause(0.1)
        bars = app.screen.query_one("#chart-main #bars")
        lines = bars.visual.plain.split("\n") if hasattr(bars, "visual") else str(bars.render()).split("\n")
        assert any(line.strip() == "◀ cache hit 160,607" for line in lines), lines
        assert not any(line.strip() in ("◀ cache hit", "160,607") for line in lines), lines
        assert all(len(line) <= bars.content_region.width for line in lines), (lines, bars.content_region.width)
        await pilot.press("q")


def test_a_note_that_must_wrap_keeps_each_number_with_its_unit():
    from lanemon.ui.widgets.bench_chart import fit_bars

    text, _ = fit_bars(["2,000"], {"A": [2591.0], "B": [3480.0]}, {}, 24, "tok/s",
                       [("B cache hit 1,160,607 tok/s; 12 tok/s repeat", "2,000", 3480.0)])
    lines = [line.strip() for line in text.plain.split("\n")]
    assert "1,160,607 tok/s;" in " ".join(lines) and not any(line.startswith("tok/s") for line in lines), lines
    assert all(len(line) <= 24 for line in text.plain.split("\n")), lines
