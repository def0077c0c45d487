"""Issue 11, done-when: a full run against lanes that echo a planted key, reached through URLs that carry
credentials, leaves no copy of any secret in any file lanemon wrote or any byte sent to a share viewer.

The run: the live dashboard (headless pilot, /metrics scraped, a dead lane among them) shared with a
connected viewer, then `check`, `race`, `bench decode`, `qeval run`, `gauntlet`, `report` (every
format) and `export` (both formats) as real CLI processes.  Every file under the run's directory
(recordings, results, reports, exports, the XDG data/config/cache/state dirs) and every byte the
viewer received is searched for every secret.

Cost: 15-17 CPU-s in all, quiet or beside CPU hogs: the live part 3-4 CPU-s (most of it the app's start), each
CLI process 0.4-1.6 CPU-s, most of it Python's start and imports.  Each process has a CPU budget from what it
is asked to do (:func:`cpu_bound`); one past it is stopped with its Python stack (:class:`Steps`), so a step
that spins says where, on a quiet machine or a loaded one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import psutil
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


REQUEST_S = 2.0
"""Each lane's ``timeout`` and ``deadline`` in lanes.toml: no request waits longer (the hostile lanes answer in
milliseconds: the bench's 54 requests took 3 s wall under a load average of 20)."""
CPU_S = 8.0
CPU_PER_REQUEST_S = 0.05
"""A step's CPU budget is CPU_S + CPU_PER_REQUEST_S per request it is asked for (:func:`cpu_bound`).  Measured
(quiet, and beside four CPU hogs at a load average of ~20, the same): a report 0.9-1.3 CPU-s, an export 0.4-0.6,
the bench (54 requests) 1.0-1.6, a check 0.6-0.9.  CPU, unlike wall time, does not grow with the machine's load:
a step that spins (the gauntlet did, issue 40) is stopped after seconds of its own CPU, loaded or not."""


def cpu_bound(requests: int) -> float:
    """CPU seconds a CLI step asked for ``requests`` requests may use."""
    return CPU_S + requests * CPU_PER_REQUEST_S


def write_config(run_dir: Path, a: int, b: int, dead: int) -> Path:
    cfg = run_dir / "xdg/config/lanemon/lanes.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    limits = f"timeout = {REQUEST_S}\ndeadline = {REQUEST_S}\n"
    cfg.write_text(
        f'[lanes.A]\nurl = "http://alice:{PASSWORD}@127.0.0.1:{a}/v1?api_key={QKEY}&token={QTOKEN}"\n'
        f'api_key_env = "{KEY_ENV}"\nheaders = {{ "X-Api-Key" = "{HEADER}" }}\n{limits}'
        f'[lanes.B]\nurl = "http://127.0.0.1:{b}/v1?token={QTOKEN}"\napi_key_env = "{KEY_ENV}"\n{limits}'
        f'[lanes.C]\nurl = "http://alice:{PASSWORD}@127.0.0.1:{dead}/v1?api_key={QKEY}"\n{limits}')
    return cfg


class Steps:
    """Runs lanemon CLI steps as real processes and keeps what each cost.  A step past its CPU budget
    (:func:`cpu_bound`), or still running when the test's own time is nearly out (``deadline``, a blocked
    process: each request ends at its lane's deadline, so only a hang blocks), is stopped with every thread's
    Python stack on its stderr (``-X faulthandler`` + SIGABRT), and the test fails saying where it was."""

    def __init__(self, env: dict[str, str], cwd: Path, served: Callable[[], int], deadline: float) -> None:
        self.env, self.cwd, self.served, self.deadline = env, cwd, served, deadline
        self.outputs: list[bytes] = []
        self.costs: list[tuple[str, float, float]] = []
        """(the step, wall seconds, CPU seconds of its process)."""

    def __call__(self, *args: str, requests: int = 0, ok=(0, 1)) -> None:
        out_at = args.index("-o") + 1 if "-o" in args else None
        name = " ".join(a for a in (args[0], args[1], args[out_at] if out_at else "") if a and a[0] != "-")
        budget = cpu_bound(requests)
        t0, served, before = time.monotonic(), self.served(), resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "lanemon", *args], env=self.env,
                                cwd=self.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ps, cpu = psutil.Process(proc.pid), 0.0
        while True:
            try:
                out, err = proc.communicate(timeout=0.5)  # retried after a timeout: no output is lost
                break
            except subprocess.TimeoutExpired:
                with contextlib.suppress(psutil.Error):
                    times = ps.cpu_times()
                    cpu = times.user + times.system
                if cpu > budget or time.monotonic() > self.deadline:
                    self._abort(proc, name, f"asked for {requests} requests, it used {cpu:.1f} CPU-s (its budget "
                                            f"{budget:.1f}) in {time.monotonic() - t0:.0f} s")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        self.costs.append((name, time.monotonic() - t0, cpu))
        self.outputs.extend((out, err))
        assert b"Traceback" not in err, err.decode()[-2000:]
        assert b"was never awaited" not in err, err.decode()[-2000:]  # a task cancelled before it ran (runner.py)
        assert proc.returncode in ok, (args, proc.returncode, err.decode()[-2000:])
        assert self.served() - served <= requests, (name, self.served() - served, "requests; its budget counts", requests)

    def _abort(self, proc: subprocess.Popen, name: str, why: str) -> None:
        proc.send_signal(signal.SIGABRT)  # faulthandler writes every thread's stack to stderr
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        pytest.fail(f"lanemon {name} stopped: {why} (steps before: {self.report()}); its stderr ends:\n"
                    f"{err.decode(errors='replace')[-4000:]}")

    def report(self) -> str:
        return ", ".join(f"{name} {wall:.1f} s ({cpu:.1f} CPU-s)" for name, wall, cpu in self.costs)


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


# the CLI steps and the requests each is asked for (an upper bound; a /models or /metrics read counts too)
CHECK_REQUESTS = 10
RACE_REQUESTS = 2 * 8
BENCH_REQUESTS = 2 * 30  # per lane: 8-10 completions (C1, C3 on two categories), /models and /metrics at each edge
QEVAL_REQUESTS = 2 * 3
GAUNTLET_REQUESTS = 2 * (1 + 2 + 3)  # per lane: the probe, two calibrations, three turns
LIVE_S = 60.0
"""The live part's bound (it waits for what it checks; 3-4 CPU-s with the lanes' threads, most of it the app's
start)."""
TIMEOUT = 600
"""The whole run: 45-60 s quiet (15-17 CPU-s), 277 s beside four CPU hogs with other work on the machine (load
average ~20, each step's wall 10-25x its CPU).  The CLI steps stop 30 s before it, with a stack."""


@pytest.mark.timeout(TIMEOUT)
def test_a_full_run_leaves_no_secret_anywhere(run_dir, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)  # the in-process live session reads the key as lanemon would
    lane = lambda: HostileLane(KEY, unauthorized_every=3, stream_error_every=4, words=6)  # noqa: E731
    with HostileServer(lane()) as a, HostileServer(lane()) as b:
        cfg = write_config(run_dir, a.port, b.port, closed_port())
        t0, cpu0 = time.monotonic(), time.process_time()
        lanemon = Steps(env_for(run_dir), run_dir, lambda: len(a.requests) + len(b.requests), t0 + TIMEOUT - 30)
        lanemon.outputs.append(asyncio.run(asyncio.wait_for(live_and_shared(cfg, run_dir), LIVE_S)))
        live = f"live {time.monotonic() - t0:.1f} s ({time.process_time() - cpu0:.1f} CPU-s with the lanes' threads)"

        def completions() -> dict[str, int]:
            return {name: sum(1 for r in srv.requests if r.path.endswith("/completions"))
                    for name, srv in (("A", a), ("B", b))}

        common = ("--config", str(cfg), "--lanes", "A,B")
        lanemon("check", "A", "--config", str(cfg), "--json", requests=CHECK_REQUESTS)
        lanemon("check", "C", "--config", str(cfg), "--json", requests=1)
        lanemon("race", *common, "--prompt", "hi", "--max-tokens", "6", "--chat", "--json",
                "--record", "race.jsonl", requests=RACE_REQUESTS)
        # two categories at C1 and C3: 8 completions in a row per lane, so every lane answers at least one 401
        # (every 3rd) and one stream error (every 4th, one of two multiples of 4 not a multiple of 12)
        before = completions()
        lanemon("bench", "decode", *common, "--levels", "1,3", "--categories", "coding,prose", "--no-categories",
                "--max-tokens", "6", "--json", "--record", "bench.jsonl", requests=BENCH_REQUESTS)
        assert all(v - before[k] >= 8 for k, v in completions().items()), (before, completions())
        lanemon("qeval", "run", "A", "--config", str(cfg), "--tasks", "json_escape,code_fizzbuzz", "--max-tokens",
                "32", "--json", "-o", "qeval.json", "--record", "qeval.jsonl", ok=(0, 1, 2), requests=QEVAL_REQUESTS)
        lanemon("gauntlet", *common, "--reps", "1", "--hops", "2", "--max-turns", "3", "--json",
                "--record", "gauntlet.jsonl", requests=GAUNTLET_REQUESTS)
        recordings = sorted(p.name for p in run_dir.glob("*.jsonl"))
        assert recordings == ["bench.jsonl", "gauntlet.jsonl", "live.jsonl", "qeval.jsonl", "race.jsonl"]
        for fmt in ("md", "html", "json", "csv"):
            lanemon("report", *recordings, "-o", f"report.{fmt}")
        for rec in recordings:
            lanemon("export", rec, "--requests", "-o", f"{rec}.csv")
        lanemon("export", "live.jsonl", "--requests", "-o", "live.export.jsonl")
        served = a.requests + b.requests
    print(f"{live}; {lanemon.report()}")  # shown when the test fails: what each step cost
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
    assert [found(o) for o in lanemon.outputs if found(o)] == []
    assert b"[redacted]" in (run_dir / "live.jsonl").read_bytes()  # the echoes happened and were replaced
