"""A down lane tells its story (issue 25 item 5): its URL (host and port kept at any width), why it is down
(the probe's error, readable in a narrow card), the same error count on the card and in the errors field,
and when zoomed on a short screen its card rather than a one-line row; an empty chart's note leaves the y
axis whole."""

from __future__ import annotations

import pytest
from textual.widgets import Label, Static

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource, sample_events
from lanemon.ui.widgets.lane_panel import LanePanel, errors_title, short_url
from lanemon.ui.widgets.time_chart import TimeChart

DEAD = {"name": "DEAD", "url": "http://127.0.0.1:9/v1", "model": None}
REFUSED = "connection refused (http://127.0.0.1:9/v1/models)"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget) -> str:
    return widget.visual.plain


def dead_events(n: int = 3) -> list[Event]:
    """``n`` failed health checks of lane DEAD, every 2 s, then the sample's requests on A and B."""
    probes = [Event(500_000_000 + i * 2_000_000_000, schema.PROBE, "DEAD", None,
                    {"ok": False, "cls": "connect", "message": REFUSED}) for i in range(n)]
    return probes + sample_events()


async def settle(app, pilot) -> None:
    for _ in range(100):  # every event published (the source holds on after, as a live one)
        await pilot.pause(0.02)
        if app.state.events >= len(app.source.events):
            break
    for _ in range(3):
        await pilot.pause()
        app.redraw(force=True)
    await pilot.pause()


def test_short_url_keeps_host_and_port():
    url = "http://127.0.0.1:37581/v1"
    assert short_url(url, 40) == url
    assert short_url(url, 20) == "127.0.0.1:37581/v1"
    assert short_url(url, 15) == "127.0.0.1:37581"
    assert short_url(url, 5) == "127.0.0.1:37581"  # never cut before the port: the label's ellipsis would


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_zoomed_down_lane_shows_its_url_and_why(size):
    app = make_app(ScriptedSource(dead_events(), lanes=[DEAD, SAMPLE_LANES[0]], mode="live", hold=True))
    async with app.run_test(size=size) as pilot:
        await settle(app, pilot)
        await pilot.press("1")
        await settle(app, pilot)
        panel = app.screen.query_one("#lane-DEAD", LanePanel)
        assert not panel.compact  # its card, even at 30 rows: the charts have nothing of it to show
        assert plain(panel.query_one("#url", Label)) == DEAD["url"]
        assert plain(panel.query_one("#badge", Label)) == "DOWN"
        errors = plain(panel.query_one("#errors", Static))
        assert errors.splitlines()[0].endswith("connection refused (/models)")
        # the card's request errors and the errors field agree: no request failed, three health checks did
        assert "0 err" in plain(panel.query_one("#requests", Label))
        assert errors_title(app.state.lanes["DEAD"]) == "errors  [dim]3 failed health checks[/]"
        # an empty chart: the note sits in the plot, the y axis keeps its ┤ / │ on that row
        chart = app.screen.query_one("#chart-ttft", TimeChart)
        lines = chart.render().plain.split("\n")
        row = next(line for line in lines if "no samples" in line)
        axis = next(line for line in lines if "┤" in line).index("┤")
        assert row[axis] in "┤│" and row[axis + 1:].strip().startswith("no samples")
        await pilot.press("1")  # back: every lane, DEAD's row or card again
        await settle(app, pilot)
        assert app.screen.zoomed is None


async def test_three_lanes_at_100x30_keep_the_port_and_a_readable_reason():
    lanes = [DEAD, {"name": "A", "url": "http://127.0.0.1:37581/v1", "model": "m"},
             {"name": "B", "url": "http://127.0.0.1:38888/v1", "model": "m"}]
    app = make_app(ScriptedSource(dead_events(), lanes=lanes, mode="live", hold=True))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        for lane in lanes:
            panel = app.screen.query_one(f"#lane-{lane['name']}", LanePanel)
            url = panel.query_one("#url", Label)
            text = plain(url)
            assert text.endswith(lane["url"].split(":")[-1].split("/")[0]) or lane["url"].endswith(text)
            assert ":" in text and len(text) <= url.size.width, (text, url.size.width)  # the port shows, whole
            requests = panel.query_one("#requests", Label)
            assert len(plain(requests)) <= requests.size.width  # never 'ok …'
        dead = app.screen.query_one("#lane-DEAD", LanePanel)
        errors = dead.query_one("#errors", Static)
        rendered = [line.text for line in errors.render_lines(errors.region.reset_offset)]
        shown = " ".join(" ".join(line.split()) for line in rendered)
        assert "connection refused (/models)" in shown  # wrapped, not 'connect connection re…'


def test_requests_row_drops_an_idle_in_flight_before_a_flagged_count():
    from lanemon.folds.dashboard import LaneState
    from lanemon.ui.format import fit
    from lanemon.ui.widgets.lane_panel import _request_parts

    import re

    def row() -> str:  # a card at 100 columns with two lanes, as text
        return re.sub(r"\[[^\]]*\]", "", fit(_request_parts(st, 0, 0.0, 0), 36))

    st = LaneState(name="A")
    st.requests_ok, st.client_bound = 19, 2
    assert row() == "19 ok  0 err  2 client-bound"
    st.in_flight = 1
    assert row() == "19 ok  0 err  1 in flight"  # requests running now come before the flags
