"""Issue 39 rows 1, 2 and 13: a hostile recording or share publisher is bounded where it is read.

Strings are cut at read (4,096 characters, 64 Ki per event, 1,024 items a container: untrusted.inert_value),
the dashboard keeps at most 256 distinct firing alerts and 64 lanes, counting the rest, and an alert is kept
as what the alerts screen shows.  Files: tests/hostile_edges3.py.  Measured figures: docs/SECURITY.md.
"""

from __future__ import annotations

import asyncio
import math

import msgspec
import orjson
import pytest
from hostile_edges3 import (ESC, LANE, escape_events, escape_header, huge_alerts_recording, leaks,
                            many_alerts_recording, many_lanes_recording)

from lanemon.bus import EventBus
from lanemon.recording.reader import Recording
from lanemon.recording.schema import decode_event
from lanemon.untrusted import READ_EVENT_CHARS, READ_ITEMS, READ_TEXT_LIMIT


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def chars(value) -> int:
    """Characters of every string (and key) in a JSON-like value (a typed one's fields: the alert log's)."""
    if isinstance(value, msgspec.Struct):
        return chars(msgspec.to_builtins(value))
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + chars(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(chars(v) for v in value)
    return 0


def test_huge_alert_strings_and_values_are_cut_when_read(tmp_path):
    rec = Recording(huge_alerts_recording(tmp_path / "a.jsonl", n=3, size=1 << 20))
    events = list(rec.events())
    assert len(events) == 3 and rec.skipped == 0
    for ev in events:
        assert len(ev.data["alert"]) <= READ_TEXT_LIMIT and ev.data["alert"].startswith("a")
        assert len(ev.data["values"]) <= READ_ITEMS + 1 and "… " not in ev.data["alert"][:10]
        assert chars(ev.data) <= READ_EVENT_CHARS + READ_ITEMS * 16
        assert leaks(str(ev.data)) == []


def test_an_event_of_many_long_fields_is_bounded_whole():
    data = {f"f{i}": "x" * 5000 for i in range(1000)}
    ev = decode_event(orjson.dumps({"t": 1, "kind": "note", "data": {"level": "info", "message": "m", **data}}))
    assert chars(ev.data) <= READ_EVENT_CHARS + 1000 * 8  # the keys and ellipses beyond the budget
    assert ev.data["message"] == "m" and ev.data["f0"] == "x" * (READ_TEXT_LIMIT - 1) + "…"


def test_model_text_prompts_and_tool_calls_keep_their_length_and_newlines():
    text = "line one\n\tline two\r\n" + "y" * 10_000
    ev = decode_event(orjson.dumps({"t": 1, "kind": "token", "lane": "A", "req": "r",
                                    "data": {"text": text + "\x1b[31m", "n": 1}}))
    assert ev.data["text"] == text


def _app(tmp_path, path):
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    return make_app(ReplaySession(path, speed=math.inf))


def test_distinct_firing_alerts_are_capped_and_counted(tmp_path):
    from lanemon.ui.screens.alerts import MAX_FIRING, render_alerts

    path = many_alerts_recording(tmp_path / "many.jsonl", n=MAX_FIRING + 344)
    app = _app(tmp_path, path)
    app.call_after_refresh = lambda *a, **k: None  # not running: nothing to refresh
    app.fold_batch(list(Recording(path).events()))
    assert len(app.alerts_firing) == MAX_FIRING and app.alerts_firing_more == 344
    text = render_alerts(app.alert_log, app.alerts_firing, app.alerts_firing_more).plain
    assert f"firing now ({MAX_FIRING + 344})" in text and "and 344 more not listed" in text


def test_an_alert_is_kept_as_the_screen_shows_it(tmp_path):
    path = huge_alerts_recording(tmp_path / "a.jsonl", n=6, size=1 << 20)
    app = _app(tmp_path, path)
    app.call_after_refresh = lambda *a, **k: None
    app.fold_batch(list(Recording(path).events()))
    assert len(app.alert_log) == 6
    assert all(d.alert.startswith(f"a{i}x") for i, (_, _, d) in enumerate(app.alert_log))  # a cut alert shows
    assert sum(chars(d) for _, _, d in app.alert_log) <= 6 * 400


def test_lanes_past_the_cap_are_counted_not_folded(tmp_path):
    from lanemon.ui.app import MAX_LANES

    path = many_lanes_recording(tmp_path / "lanes.jsonl", n=300)
    app = _app(tmp_path, path)
    assert len(app.state.lanes) == MAX_LANES  # the header names 300
    app.fold_batch(list(Recording(path).events()))
    assert len(app.state.lanes) == MAX_LANES and len(app.series.lanes) <= MAX_LANES
    assert app.lane_events_refused == (300 - MAX_LANES) * 4
    assert any(f"more than {MAX_LANES} lanes" in m for _, m in app._pending_notes)


class HostilePublisher:
    """A websocket server that answers a viewer's hello with a header and events full of escapes, then
    ``alerts`` alert events of ``size`` bytes each (a publisher of `lanemon share`, hostile)."""

    def __init__(self, alerts: int = 20, size: int = 900_000) -> None:
        self.alerts, self.size = alerts, size

    async def handler(self, ws) -> None:
        await ws.recv()  # hello
        header = {**escape_header(), "type": "header", "mode": "live" + ESC, "snapshot_events": 0}
        await ws.send(orjson.dumps(header).decode())
        await ws.send(orjson.dumps({"type": "events", "events": escape_events()}).decode())
        pad = "z\x1b]0;PWNED\x07" * (self.size // 12)
        for i in range(self.alerts):
            ev = {"t": 10**9 + i, "kind": "alert", "lane": LANE, "req": None,
                  "data": {"state": "firing", "alert": f"big{i}" + pad, "severity": "warning"}}
            await ws.send(orjson.dumps({"type": "events", "events": [ev]}).decode())
        await ws.send(orjson.dumps({"type": "live"}).decode())
        await ws.close(1001, "publisher stopped sharing" + ESC)


async def test_attach_to_a_hostile_publisher_gets_inert_bounded_events():
    from websockets.asyncio.server import serve

    from lanemon.share.client import RemoteSource

    pub = HostilePublisher()
    async with serve(pub.handler, "127.0.0.1", 0, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        bus = EventBus()
        got = []
        bus.subscribe(got.append)
        source = RemoteSource(f"ws://127.0.0.1:{port}", "token", bus=bus)
        await asyncio.wait_for(source.run(), 30)
    assert leaks(str(source.lanes) + str(source.remote_mode) + str(source.error)) == []
    alerts = [ev for ev in got if ev.kind == "alert" and ev.data["alert"].startswith("big")]
    assert len(alerts) == pub.alerts
    assert all(len(ev.data["alert"]) <= READ_TEXT_LIMIT for ev in alerts)
    for ev in got:
        assert leaks(f"{ev.kind}{ev.lane}{ev.req}{ev.data}") == [], ev


def test_a_paused_viewer_holds_a_bounded_number_of_bytes(monkeypatch):
    """A publisher's events held while the viewer is paused are bounded in bytes, not only in number: 64 events
    of ~60 KB past a 1 MB bound resume the display (as the count bound does)."""
    from lanemon.share import client as share_client

    monkeypatch.setattr(share_client, "MAX_HELD_BYTES", 1 << 20, raising=False)
    bus = EventBus()
    got = []
    bus.subscribe(got.append)
    source = share_client.RemoteSource("ws://127.0.0.1:9", "token", bus=bus)
    source.paused = True
    for i in range(64):
        ev = {"t": i, "kind": "token", "lane": "A", "req": "r", "data": {"text": "x" * 60_000, "n": 1}}
        source._handle(orjson.dumps({"type": "events", "events": [ev]}))
    assert not source.paused and len(source._held) < 64
    assert any(ev.kind == "token" for ev in got)
