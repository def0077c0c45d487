"""Issue 11 item 4: escape sequences and Rich markup from a server never reach the terminal raw and
never crash: `lanemon check` (piped), the dashboard and the race screen."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from hostile_server import HostileLane, HostileServer

from lanemon.config import LaneConfig, ProbeConfig
from lanemon.sessions.sources import LiveSession
from lanemon.ui.app import make_app
from lanemon.workloads.race import RacePlan, RacePrompt

KEY = "sk-hostile-terminal-8a7b6c5d4e"
RAW = ("\x1b", "\x07", "\x9b", "\x9d", "pwned-title", "title-from-a-token")


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def raw_in(text: str) -> list[str]:
    return [r for r in RAW if r in text]


def test_check_piped_writes_no_escape_and_survives_markup_in_an_error_body():
    with HostileServer(HostileLane(KEY, unauthorized_every=1)) as srv:
        out = subprocess.run([sys.executable, "-m", "lanemon", "check", srv.url], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, COLUMNS="400"))
    assert "Traceback" not in out.stderr and "MarkupError" not in out.stderr, out.stderr
    assert out.returncode == 1  # the required checks failed (401), and said so
    assert raw_in(out.stdout + out.stderr) == [], raw_in(out.stdout + out.stderr)
    assert "[/bold][red]x[/red]" in out.stdout  # the body's markup is shown as text
    assert "Incorrect API key provided: [redacted]" in out.stdout


async def _wait(pilot, condition, timeout=90.0):  # generous: a busy machine (four CPU hogs) is slow, a quiet one fast
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


async def test_dashboard_shows_hostile_model_ids_errors_and_text_inert(monkeypatch):
    monkeypatch.setenv("HOSTILE_TERMINAL_KEY", KEY)
    with HostileServer(HostileLane(KEY, unauthorized_every=2, stream_error_every=3)) as srv:
        session = LiveSession([LaneConfig("H", srv.url, api_key_env="HOSTILE_TERMINAL_KEY")], probe=ProbeConfig(interval=0.05, max_tokens=8))
        app = make_app(session, refresh_hz=20)
        async with app.run_test(size=(140, 40)) as pilot:
            lane = lambda: app.state.lanes["H"]  # noqa: E731
            await _wait(pilot, lambda: lane().requests_ok >= 2 and lane().requests_err >= 2)
            app.redraw(force=True)
            await pilot.pause()
            svg = app.export_screenshot().replace("&#160;", " ")
            await pilot.press("q")
        session.close()
    assert "hostile-" in svg and "Incorrect API key" in svg  # the hostile text is on screen ...
    assert raw_in(svg) == [] and KEY not in svg  # ... inert and redacted


async def test_race_screen_shows_hostile_tokens_inert(monkeypatch):
    monkeypatch.setenv("HOSTILE_TERMINAL_KEY", KEY)
    plan = RacePrompt("hi", id="hi")
    with HostileServer(HostileLane(KEY, unauthorized_every=0, stream_error_every=0)) as srv:
        session = LiveSession([LaneConfig("H", srv.url, api_key_env="HOSTILE_TERMINAL_KEY")], probe=ProbeConfig(interval=1.0, enabled=False))
        app = make_app(session, refresh_hz=20, race=RacePlan(prompts=[plan], endpoint="chat", max_tokens=8))
        async with app.run_test(size=(140, 40)) as pilot:
            await _wait(pilot, lambda: app.race_state.latest is not None and app.race_state.latest.complete)
            app.redraw(force=True)
            await pilot.pause()
            svg = app.export_screenshot().replace("&#160;", " ")
            await pilot.press("ctrl+q")
        session.close()
    assert "word4" in svg  # the race text is on screen
    assert raw_in(svg) == [] and KEY not in svg
