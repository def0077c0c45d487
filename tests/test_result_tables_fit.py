"""The kl and qeval result screens fit their tables to the terminal (issue 40, item 10): at 80x24 the KL table
cut `message` to `me` and its cells to `HT`, qeval's `median tok/s (E2E` and its missed tasks' reasons ran off
the edge.  Their tables are now ResultTable models (reports/tables.py), fitted like the load and sweep tables:
short labels, free text cut between words with `…`, then columns dropped by rank and named."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanemon.reports.tables import Cell, Column, ResultTable

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("width,want", [
    (70, "tests failed (2 of 6): interval_intersect((1, 3), (2, 5)) returned"),
    (43, "tests failed (2 of 6): interval_intersect…"),   # a word ends before its bracket
    (41, "tests failed (2 of 6)…"),                        # `interval_i…` never: the whole words before it
    (20, "tests failed (2 of…"),
    (10, "tests…"),
])
def test_clip_words_cuts_between_words(width, want):
    from lanemon.reports.tables import clip_words

    got = clip_words("tests failed (2 of 6): interval_intersect((1, 3), (2, 5)) returned", width)
    assert got == want and len(got) <= width


def test_clip_words_cuts_inside_a_word_only_when_it_is_the_first():
    from lanemon.reports.tables import clip_words

    assert clip_words("abcdefghijklmnopqrstuvwxyz", 10) == "abcdefghi…"


def test_a_free_text_column_is_cut_before_a_column_goes_and_fills_the_room_left():
    cols = [Column("Lane", 0, "left"), Column("role", 4, "left"), Column("message", 0, "left", clip=True)]
    rows = [[Cell("A"), Cell("compared"), Cell("HTTP 400: prompt logprobs are not supported by this server")]]
    t = ResultTable("t", "t", cols, rows)
    fitted = t.fit(48, pad=2)  # 29 cells left for the message
    assert fitted.labels() == ["Lane", "role", "message"] and not fitted.hidden
    assert fitted.width(2) <= 48 and fitted.text_rows()[0][2] == "HTTP 400: prompt logprobs…"
    narrow = t.fit(30, pad=2)  # the message at its narrowest (16) does not fit beside role: role goes, named
    assert narrow.labels() == ["Lane", "message"] and narrow.hidden == ["role"] and narrow.width(2) <= 30
    assert t.fit(200, pad=2) is t


def test_a_unit_outside_the_catalogue_is_named_when_its_label_drops_it():
    cols = [Column("KL mean (nats/token)", 0, short="KL mean", unit="nats/token"), Column("x" * 30, 1)]
    t = ResultTable("t", "t", cols, [[Cell("0.0012"), Cell("1")]])
    assert t.units_note() == ""
    assert t.fit(20, pad=2).units_note() == "KL mean in nats/token"


async def _result_tables(name: str, size: tuple[int, int]):
    """Replay ``name`` to its result screen at ``size``: each DataTable, the sections it shows, the notes."""
    from textual.widgets import DataTable, Static

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    app = make_app(ReplaySession(SAMPLES / f"{name}.jsonl", speed=float("inf")))
    async with app.run_test(size=size) as pilot:
        for _ in range(600):  # the result screen reads the recording in a thread: wait for its tables
            await pilot.pause(0.05)
            if app.screen_name() == "result" and app.screen.sections is not None and app.screen.query(DataTable):
                break
        # a body tall enough for its scrollbar fits its tables again beside it, a frame or two after they showed
        # (ResultScreen._fit_beside_scrollbar): the settled screen is what is judged, within 10 s
        body = app.screen.query_one("#result-body")
        for _ in range(200):
            await pilot.pause(0.05)
            gutter = body.scrollbar_size_vertical if body.show_vertical_scrollbar else 0
            if gutter <= app.screen._gutter and all(t.virtual_size.width <= t.scrollable_content_region.width
                                                    for t in app.screen.query(DataTable)):
                break
        await pilot.pause()
        tables = list(app.screen.query(DataTable))
        seen = [(t, [str(c.label) for c in t.columns.values()],
                 [[str(t.get_cell_at((r, c))) for c in range(len(t.columns))] for r in range(t.row_count)])
                for t in tables]
        fits = [(t.virtual_size.width, t.scrollable_content_region.width) for t in tables]
        notes = "\n".join(str(w.render()) for w in app.screen.query(Static))
        sections = app.screen.sections
        await pilot.press("q")
    return seen, fits, notes, sections


@pytest.mark.parametrize("name", ["kl", "qeval-A"])
async def test_kl_and_qeval_tables_fit_80x24_whole_words(name):
    seen, fits, notes, sections = await _result_tables(name, (80, 24))
    assert seen, "no table shown"
    for need, room in fits:  # nothing runs off the edge (the old KL table needed 130 columns of 76)
        assert need <= room, fits
    full = {}  # every cell as the report prints it: a shown cell is it, or whole words of it and `…` (the rows
    for s in sections:  # with the same first cell: qeval's lane has a row per task kind under a blank Lane)
        for headers, rows in [(s.headers, s.rows)] + [(h, r) for _, h, r in s.more]:
            for row in rows:
                full.setdefault(row[0], set()).update(str(cell) for cell in row)
    for _, labels, rows in seen:
        for row in rows:
            whole = full[row[0]]
            for label, cell in zip(labels, row):
                if cell.endswith("…") and cell not in whole:
                    shown = cell[:-1]
                    text = next(v for v in whole if v.startswith(shown))
                    assert text[len(shown)] in " ([{,;:", (label, cell, text)  # cut between words
                else:
                    assert cell in whole, (label, cell)
    if name == "kl":
        assert "KL mean, KL p50, KL p99 in nats/token" in notes  # the short label's unit, said under the table
        assert "hidden at this width: role" in notes


def test_the_sections_bound_their_free_text_between_words():
    """Even at 240 columns the missed-task reason read `… returned No…` (the section cut it at 70 characters,
    inside a word): the reason is whole up to 100 characters, and a longer one ends on a whole word."""
    from lanemon.reports.analyse import analyze
    from lanemon.reports.data import qeval_runs
    from lanemon.reports.sections import sections

    a = analyze(SAMPLES / "qeval-B.jsonl")
    runs = qeval_runs(a.qeval)
    cells = {}
    for s in sections(a):
        for _, headers, rows in s.more:
            cells.update({row[0]: row[2] for row in rows})
    assert cells["code_interval_intersect"].endswith("returned None, expected (3, 3)"), cells
    for tid, cell in cells.items():
        full = " ".join(str(runs["B"].tasks[tid].reason or "failed").split())
        assert cell == full or (cell.endswith("…") and full[len(cell) - 1] in " ([{,;:"), (cell, full)


async def test_a_refit_that_lands_after_the_screen_closed_is_a_no_op():
    """Beside four CPU hogs the replay of agree.jsonl raised NoMatches ('#result-body' on ResultScreen): the refit
    queued after the tables mounted (``_fit_beside_scrollbar``) ran after Esc had closed the screen.  Every late
    call (the refit, a re-show from a resize, an analysis error) finds no body and returns."""
    from textual.widgets import DataTable

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    app = make_app(ReplaySession(SAMPLES / "agree.jsonl", speed=float("inf")))
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(600):
            await pilot.pause(0.05)
            if app.screen_name() == "result" and app.screen.sections is not None and app.screen.query(DataTable):
                break
        screen = app.screen
        assert screen.sections, "the result screen never showed its tables"
        await pilot.press("escape")
        for _ in range(100):
            await pilot.pause(0.02)
            if app.screen_name() == "dashboard" and not screen.is_attached:
                break
        assert app.screen_name() == "dashboard" and not screen.is_attached
        screen._gutter = 0
        screen._fit_beside_scrollbar()  # the late refit
        await screen.show(screen.sections)  # a late re-show (resize, scrollbar)
        screen._show_error("late")  # a late analysis error
        await pilot.pause()
        assert app.screen_name() == "dashboard"
        await pilot.press("q")
