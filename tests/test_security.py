"""API keys never appear in recordings, logs, exports, reports or screens (planted-key test)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from lanemon.config import LaneConfig, ProbeConfig
from lanemon.recording.writer import Recorder, make_header
from lanemon.sessions.sources import LiveSession
from lanemon.sim.server import SimThread
from lanemon.ui.app import make_app

PLANTED = "sk-lanemon-planted-7f3a9c1e5b"


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=180,
                          env=env)


@pytest.fixture(scope="module")
def sims():
    with SimThread("tensorfold-exl3", time_scale=0.02) as a, SimThread("sglang-native", time_scale=0.02) as b:
        yield a, b


def test_planted_key_is_in_no_artefact_of_a_cli_run(sims, tmp_path):
    a, b = sims
    cfg = tmp_path / "lanes.toml"
    cfg.write_text(f'[lanes.A]\nurl = "{a.base_url}"\napi_key_env = "LANEMON_PLANTED_KEY"\n'
                   f'headers = {{ "X-Planted" = "{PLANTED}-header" }}\n'
                   f'[lanes.B]\nurl = "{b.base_url}"\napi_key_env = "LANEMON_PLANTED_KEY"\n')
    env = dict(os.environ, LANEMON_PLANTED_KEY=PLANTED)
    rec = tmp_path / "agree.jsonl"
    artefacts = []
    out = run("agree", "--config", str(cfg), "--prompts", "3", "--tokens", "16", "--json", "--record", str(rec), env=env)
    assert out.returncode == 0, out.stderr
    artefacts += [out.stdout, out.stderr, rec.read_text()]
    out = run("check", "A", "--config", str(cfg), "--json", env=env)
    artefacts += [out.stdout, out.stderr]
    out = run("export", str(rec), "--requests", env=env)
    artefacts += [out.stdout, out.stderr]
    for extra in (("report", str(rec), "--format", "html"), ("report", str(rec), "--format", "json"),
                  ("report", str(rec), "--format", "csv")):
        out = run(*extra, env=env)
        assert out.returncode == 0, out.stderr
        artefacts += [out.stdout, out.stderr]
    for text in artefacts:
        assert PLANTED not in text


async def test_planted_key_is_not_on_screen_or_in_the_live_recording(sims, tmp_path, monkeypatch):
    monkeypatch.setenv("LANEMON_PLANTED_KEY", PLANTED)
    a, b = sims
    lanes = [LaneConfig("A", a.base_url, api_key_env="LANEMON_PLANTED_KEY", headers={"X-Planted": PLANTED}),
             LaneConfig("B", b.base_url, api_key_env="LANEMON_PLANTED_KEY")]
    recorder = Recorder(tmp_path / "live.jsonl", make_header("live", [lane.public() for lane in lanes]))
    session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=8), recorder=recorder)
    app = make_app(session)
    async with app.run_test(size=(120, 36)) as pilot:
        deadline = time.monotonic() + 30
        while not all(l.requests_ok >= 2 for l in app.state.lanes.values()):
            assert time.monotonic() < deadline
            await pilot.pause(0.05)
        svg = app.export_screenshot()
        await pilot.press("q")
    session.close()
    assert "A" in svg and PLANTED not in svg
    assert PLANTED not in recorder.path.read_text()
