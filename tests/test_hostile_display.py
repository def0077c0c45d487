"""Issue 24 item 6 (display): bidi controls, zero-width characters and floods of combining marks from a
lane are neutralised or made visible in every terminal view; the recording keeps the text as sent, and
``--json`` writes those characters as \\u escapes (the same JSON value)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import orjson
import time

from hostile_server import HostileLane, HostileServer, head, response, sse

from lanemon.config import LaneConfig, ProbeConfig
from lanemon.sessions.sources import LiveSession
from lanemon.ui.app import make_app
from lanemon.workloads.race import RacePlan, RacePrompt

from lanemon.untrusted import MAX_MARKS, inert, json_visible, markup_escape, rich_escape, shown_text

RLO, LRI, PDI, ZWSP, ZWJ, BOM = "\u202e", "\u2066", "\u2069", "\u200b", "\u200d", "\ufeff"
TROJAN = f"access = {RLO}{LRI}// admin only{PDI}{LRI} if admin{ZWSP}{BOM}"
ZALGO = "Z" + "\u0301" * 20_000 + "algo"
INVISIBLE = [RLO, LRI, PDI, ZWSP, BOM, "\u200e", "\u200f", "\u061c", "\u2060"]


def test_shown_text_makes_bidi_visible_drops_zero_width_and_caps_marks():
    shown = shown_text(TROJAN)
    assert "⟨U+202E⟩" in shown and "⟨U+2066⟩" in shown and "⟨U+2069⟩" in shown
    assert not any(c in shown for c in INVISIBLE)
    z = shown_text(ZALGO)
    assert z == "Z" + "\u0301" * MAX_MARKS + "algo"
    assert shown_text("Vi\u1ec7t, ที่ห้า, हिन्दी, e\u0301\u0302") == "Vi\u1ec7t, ที่ห้า, हिन्दी, e\u0301\u0302"  # real scripts
    assert shown_text("a\r\nb\rc\x1b[2Jd") == "a\nb\ncd"
    assert shown_text("plain text") == "plain text"


def test_inert_and_the_escapers_neutralise_them_too():
    for out in (inert(TROJAN), markup_escape(TROJAN), rich_escape(TROJAN)):
        assert not any(c in out for c in INVISIBLE), repr(out)
    assert len(inert(ZALGO)) == 1 + MAX_MARKS + 4


def test_json_visible_is_the_same_value_without_raw_invisibles():
    doc = orjson.dumps({"text": TROJAN, "zalgo": ZALGO[:50], ZWJ: 1}, option=orjson.OPT_INDENT_2).decode()
    out = json_visible(doc)
    assert not any(c in out for c in INVISIBLE + [ZWJ])
    assert json.loads(out) == json.loads(doc)


def test_race_json_and_the_recording(tmp_path):
    """A lane streams the Trojan text and a Zalgo flood: race --json on stdout carries no raw invisible
    character (the value is intact), the recording keeps the text as the lane sent it."""
    tokens = [TROJAN, " ", ZALGO[:2000]]

    def lane(req):
        if req.path.endswith("/models"):
            return response(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
        parts = [head(200, "text/event-stream")]
        parts += [sse({"choices": [{"index": 0, "text": t}]}) for t in tokens]
        parts += [sse({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}), b"data: [DONE]\n\n"]
        return parts
    rec = tmp_path / "race.jsonl"
    with HostileServer(lane) as srv:
        out = subprocess.run([sys.executable, "-m", "lanemon", "race", "--json", "--lane", f"A={srv.url}",
                              "--prompt", "hi", "--record", str(rec)], capture_output=True, text=True, timeout=120,
                             env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert not any(c in out.stdout for c in INVISIBLE)
    recorded = "".join(json.loads(line)["data"].get("text", "") for line in rec.read_text().splitlines()[1:]
                       if json.loads(line).get("kind") == "token")
    assert "".join(tokens) in recorded and RLO in rec.read_text()  # kept raw: the lane's exact text


class BidiLane(HostileLane):
    """A lane whose tokens carry the Trojan text and a Zalgo flood (and the usual escapes)."""

    def text(self, i: int) -> str:
        return {2: " " + TROJAN, 3: " " + ZALGO[:3000]}.get(i, f" word{i}")


async def test_the_race_screen_shows_bidi_visible_and_no_invisible_character(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    plan = RacePrompt("hi", id="hi")
    with HostileServer(BidiLane("sk-display-0123456789", unauthorized_every=0, stream_error_every=0)) as srv:
        session = LiveSession([LaneConfig("H", srv.url)], probe=ProbeConfig(interval=1.0, enabled=False))
        app = make_app(session, refresh_hz=20, race=RacePlan(prompts=[plan], endpoint="chat", max_tokens=8))
        async with app.run_test(size=(160, 45)) as pilot:
            deadline = time.monotonic() + 90
            while not (app.race_state.latest is not None and app.race_state.latest.complete):
                assert time.monotonic() < deadline
                await pilot.pause(0.05)
            app.redraw(force=True)
            await pilot.pause()
            svg = app.export_screenshot()
            await pilot.press("ctrl+q")
        session.close()
    assert "word4" in svg and "U+202E" in svg  # the text is on screen, the override shown as what it is
    assert not any(c in svg for c in INVISIBLE)
    assert "\u0301" * (MAX_MARKS + 1) not in svg
