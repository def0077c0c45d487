"""Issue 11, done-when: a full run against lanes that echo a planted key, reached through URLs that carry
credentials, leaves no copy of any secret in any file lanemon wrote or any byte sent to a share viewer.

The run: the live dashboard (headless pilot, /metrics scraped, a dead lane among them) shared with a
connected viewer, then `check`, `race`, `bench decode`, `qeval run`, `gauntlet`, `report` (every
format) and `export` (both formats) as real CLI processes.  Every file under the run's directory
(recordings, results, reports, exports, the XDG data/config/cache/state dirs) and every byte the
viewer received is searched for every secret.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from hostile_server import HostileLane, HostileServer
from websockets.asyncio.client import connect

from lanemon.cli.launch import lane_secrets
from lanemon.config import ProbeConfig, load_config
from lanemon.recording.writer import Recorder, make_header
from lanemon.sessions.sources import LiveSession
from lanemon.share import protocol as P
from lanemon.share.server import Publisher
from lanemon.ui.app import make_app

KEY = "sk-hostile-fullrun-5f4e3d2c1b0a"
PASSWORD = "pw-Secret-6021"
QKEY = "qkey-1123581321"
QTOKEN = "qtok-2357111317"
HEADER = "hdr-secret-4242424242"
SECRETS = (KEY, PASSWORD, QKEY, QTOKEN, HEADER)
KEY_ENV = "HOSTILE_FULLRUN_KEY"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def found(data: bytes) -> list[str]:
    return [s for s in SECRETS if s.encode() in data]


@pytest.fixture
def run_dir(tmp_path):
    for sub in ("data", "config", "cache", "state"):
        (tmp_path / "xdg" / sub).mkdir(parents=True)
    return tmp_path


def env_for(run_dir: Path) -> dict[str, str]:
    return dict(os.environ, **{KEY_ENV: KEY, "XDG_DATA_HOME": str(run_dir / "xdg/data"),
                               "XDG_CONFIG_HOME": str(run_dir / "xdg/config"),
                               "XDG_CACHE_HOME": str(run_dir / "xdg/cache"),
                               "XDG_STATE_HOME": str(run_dir / "xdg/state"), "COLUMNS": "200"})


def write_config(run_dir: Path, a: int, b: int, dead: int) -> Path:
    cfg = run_dir / "xdg/config/lanemon/lanes.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f'[lanes.A]\nurl = "http://alice:{PASSWORD}@127.0.0.1:{a}/v1?api_key={QKEY}&token={QTOKEN}"\n'
        f'api_key_env = "{KEY_ENV}"\nheaders = {{ "X-Api-Key" = "{HEADER}" }}\n'
        f'[lanes.B]\nurl = "http://127.0.0.1:{b}/v1?token={QTOKEN}"\napi_key_env = "{KEY_ENV}"\n'
        f'[lanes.C]\nurl = "http://alice:{PASSWORD}@127.0.0.1:{dead}/v1?api_key={QKEY}"\n')
    return cfg


async def live_and_shared(cfg: Path, run_dir: Path) -> bytes:
    """The live dashboard on all three lanes, recorded and shared; returns every byte the viewer got."""
    lanes = list(load_config(cfg).lanes)
    recorder = Recorder(run_dir / "live.jsonl", make_header("live", [lane.public() for lane in lanes]))
    session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=8), recorder=recorder,
                          metrics_interval=0.2)
    publisher = Publisher(session, port=0, redact=lane_secrets(session))
    received: list[bytes] = []
    app = make_app(session, refresh_hz=10)
    async with app.run_test(size=(140, 40)) as pilot:
        async with publisher:
            async with connect(publisher.url, max_size=None) as ws:
                await ws.send(orjson.dumps({"type": "hello", "token": publisher.token, "protocol": P.PROTOCOL}))
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        msg = await asyncio.wait_for(ws.recv(), 0.5)
                    except asyncio.TimeoutError:
                        msg = None
                    if msg is not None:
                        received.append(msg if isinstance(msg, bytes) else msg.encode())
                    st = app.state.lanes
                    if (st["A"].requests_ok >= 1 and st["A"].requests_err >= 1 and st["B"].requests_ok >= 1
                            and st["C"].up is False and st["A"].server.last_t is not None):
                        break
                    await pilot.pause(0)
                app.redraw(force=True)
                await pilot.pause()
                received.append(app.export_screenshot().encode())
                await pilot.press("q")
    session.close()
    assert app.state.lanes["A"].requests_ok >= 1 and app.state.lanes["A"].requests_err >= 1
    assert app.state.lanes["C"].up is False
    return b"".join(received)


@pytest.mark.timeout(600)  # ~60 s on a quiet machine; much more beside four CPU hogs
def test_a_full_run_leaves_no_secret_anywhere(run_dir, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)  # the in-process live session reads the key as lanemon would
    lane = lambda: HostileLane(KEY, unauthorized_every=3, stream_error_every=4, words=6)  # noqa: E731
    with HostileServer(lane()) as a, HostileServer(lane()) as b:
        cfg = write_config(run_dir, a.port, b.port, closed_port())
        env = env_for(run_dir)
        viewer_bytes = asyncio.run(live_and_shared(cfg, run_dir))
        outputs: list[bytes] = [viewer_bytes]

        def lanemon(*args: str, ok=(0, 1)) -> None:
            out = subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, timeout=120, env=env,
                                 cwd=run_dir)
            outputs.extend((out.stdout, out.stderr))
            assert b"Traceback" not in out.stderr, out.stderr.decode()[-2000:]
            assert out.returncode in ok, (args, out.returncode, out.stderr.decode()[-2000:])

        common = ("--config", str(cfg), "--lanes", "A,B")
        lanemon("check", "A", "--config", str(cfg), "--json")
        lanemon("check", "C", "--config", str(cfg), "--json")
        lanemon("race", *common, "--prompt", "hi", "--max-tokens", "6", "--chat", "--json",
                "--record", "race.jsonl")
        lanemon("bench", "decode", *common, "--levels", "1,2", "--no-categories", "--max-tokens", "6", "--json",
                "--record", "bench.jsonl")
        lanemon("qeval", "run", "A", "--config", str(cfg), "--tasks", "json_escape,code_fizzbuzz", "--max-tokens",
                "32", "--json", "-o", "qeval.json", "--record", "qeval.jsonl", ok=(0, 1, 2))
        lanemon("gauntlet", *common, "--reps", "1", "--hops", "2", "--max-turns", "3", "--json",
                "--record", "gauntlet.jsonl")
        recordings = sorted(p.name for p in run_dir.glob("*.jsonl"))
        assert recordings == ["bench.jsonl", "gauntlet.jsonl", "live.jsonl", "qeval.jsonl", "race.jsonl"]
        for fmt in ("md", "html", "json", "csv"):
            lanemon("report", *recordings, "-o", f"report.{fmt}")
        for rec in recordings:
            lanemon("export", rec, "--requests", "-o", f"{rec}.csv")
        lanemon("export", "live.jsonl", "--requests", "-o", "live.export.jsonl")
        served = a.requests + b.requests
    # the lanes really were hostile, and really were asked with the secrets
    assert any(r.path.endswith("/metrics") for r in served)
    assert sum(1 for r in served if r.query.get("token") == [QTOKEN]) > 20
    assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in served)
    assert any(r.headers.get("x-api-key") == HEADER for r in served)
    written = [p for p in run_dir.rglob("*") if p.is_file() and p.name != "lanes.toml"]
    assert len(written) >= 16, written  # 5 recordings, the qeval result, 4 reports, 6 exports
    leaks = {str(p.relative_to(run_dir)): found(p.read_bytes()) for p in written}
    leaks = {k: v for k, v in leaks.items() if v}
    assert leaks == {}
    assert [found(o) for o in outputs if found(o)] == []
    assert b"[redacted]" in (run_dir / "live.jsonl").read_bytes()  # the echoes happened and were replaced
