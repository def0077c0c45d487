"""A long error in a lane card (issue 25, 100x30): the card says it is cut and where the whole is (``… e: whole``),
and ``e`` opens the errors screen, where every kept message is whole, inert and bounded."""

from __future__ import annotations

import re

import pytest
from rich.cells import cell_len
from textual.widgets import Static

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource, sample_events
from lanemon.ui.screens.errors import render_errors
from lanemon.ui.widgets.lane_panel import CUT_NOTE, LanePanel, error_lines, wrap_spans
from lanemon.untrusted import MESSAGE_LIMIT
from test_down_lane import settle

OOM = ("HTTP 500: CUDA out of memory while allocating the KV cache for this request: tried to allocate 2.50 GiB "
       "(GPU 0; 79.15 GiB total capacity; 75.02 GiB already allocated; 1.10 GiB free; 76.40 GiB reserved in "
       "total by PyTorch). If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
       "fragmentation. END-OF-MESSAGE")
LANE = {"name": "OOM", "url": "http://10.0.0.9:8000/v1", "model": "big"}
MS = 1_000_000


def strip_markup(markup: str) -> str:
    return re.sub(r"\[/?[^\]\\]*\]", "", markup).replace("\\[", "[")


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


# -- the lines, pure ------------------------------------------------------------------------------------

def test_wrap_spans_breaks_at_spaces_and_folds_a_long_word():
    text = "alpha beta gamma " + "x" * 12
    lines = [text[a:b] for a, b in wrap_spans(text, 10)]
    assert lines == ["alpha beta", "gamma", "xxxxxxxxxx", "xx"]
    assert all(cell_len(x) <= 10 for x in lines)
    wide = "日本語のエラー"
    assert [wide[a:b] for a, b in wrap_spans(wide, 6)] == ["日本語", "のエラ", "ー"]  # two cells a character


@pytest.mark.parametrize("width, rows, wrap_first", [(43, 2, True), (43, 3, True), (72, 3, False), (30, 3, False)])
def test_a_cut_error_line_says_so_and_where_the_whole_is(width, rows, wrap_first):
    errors = [(9_000 * MS, "http", OOM), (8_000 * MS, "http", OOM), (7_000 * MS, "connect", "connection refused")]
    lines = [strip_markup(x) for x in error_lines(errors, LANE["url"], width, rows, wrap_first=wrap_first)]
    assert len(lines) == rows
    assert all(cell_len(x) <= width for x in lines), lines
    cut = [x for x in lines if "…" in x]
    assert cut and cut[0].endswith("…" + CUT_NOTE), lines  # the first cut line says where the whole is
    assert sum(CUT_NOTE in x for x in lines) == 1
    assert all(x.endswith("…") for x in cut[1:])
    if wrap_first:  # a narrow card: the newest error over its rows, the reason first
        assert lines[0].startswith("+9.0s HTTP 500: CUDA out of memory")
        assert lines[1].startswith("allocating") or lines[1].startswith("the KV")
    if rows == 3 and not wrap_first:
        assert lines[2] == "+7.0s connection refused"  # short enough: whole, no ellipsis


def test_short_errors_are_whole_with_no_note():
    errors = [(1_000 * MS, "http", "HTTP 503: engine overloaded"), (500 * MS, "timeout", "read timeout")]
    lines = [strip_markup(x) for x in error_lines(errors, "", 43, 3, wrap_first=True)]
    assert lines == ["+1.0s HTTP 503: engine overloaded", "+0.5s timeout read timeout"]


# -- on screen ------------------------------------------------------------------------------------------

def oom_events(hostile: bool = False) -> list[Event]:
    """Three failed requests on lane OOM (the third, when ``hostile``, as a replayed recording could hold it:
    escape sequences, markup, and far over the client's bound), then the sample session on A."""
    evs = [Event(0, schema.PROBE, "OOM", None, {"ok": True, "latency_s": 0.004, "models": ["big"]})]
    for i in range(3):
        msg = OOM
        if hostile and i == 2:
            msg = "\x1b[31mred\x1b]0;title\x07 [b]not bold[/b] " + "y" * 20_000
        evs += [Event((1_000 + i * 1_000) * MS, schema.REQUEST, "OOM", f"o{i}", {"endpoint": "chat", "purpose": "probe"}),
                Event((1_100 + i * 1_000) * MS, schema.ERROR, "OOM", f"o{i}",
                      {"cls": schema.ERR_HTTP, "status": 500, "message": msg})]
    return evs + [e for e in sample_events() if e.lane == "A"]




@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_long_error_is_said_cut_in_the_card_and_whole_on_the_errors_screen(size):
    app = make_app(ScriptedSource(oom_events(), lanes=[SAMPLE_LANES[0], LANE], mode="live", hold=True))
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        card = next(p for p in app.screen.query(LanePanel) if p.lane == "OOM")
        box = card.query_one("#errors", Static)
        text = box.visual.plain
        assert "HTTP 500: CUDA out of memory" in text
        assert "…" + CUT_NOTE in text, text  # cut, and where the whole is
        assert "END-OF-MESSAGE" not in text
        assert all(cell_len(line) <= box.content_region.width for line in text.split("\n")), text  # never re-cut
        await pilot.press("e")
        await pilot.pause(0.2)
        app.redraw(force=True)
        await pilot.pause()
        assert app.screen_name() == "errors"
        listed = app.screen.query_one("#er-list", Static).visual.plain
        assert " ".join(listed.split()).count(" ".join(OOM.split())) == 3  # each message whole
        assert all(cell_len(line) <= size[0] - 4 for line in listed.split("\n"))
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.screen_name() == "dashboard"


def test_the_errors_screen_makes_a_replayed_message_inert_and_bounded():
    from lanemon.folds.dashboard import SessionState

    st = SessionState()
    for ev in oom_events(hostile=True):
        st.apply(ev)
    text = render_errors({n: s for n, s in st.lanes.items() if n == "OOM"}, 96).plain
    assert "\x1b" not in text and "\x07" not in text
    assert "[b]not bold[/b]" in text  # shown as it is, never parsed as markup
    assert text.count("y") <= MESSAGE_LIMIT and "y…" in text.replace("\n", "").replace(" ", "")
    assert " ".join(text.split()).count(" ".join(OOM.split())) == 2
