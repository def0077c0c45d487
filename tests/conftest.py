"""Shared fixtures: simulated lanes as real subprocesses on loopback."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from realserver_fixtures import vllm_server, vllm_url  # noqa: F401 (session fixtures: one vLLM per session)

ANNOUNCE = re.compile(r"listening on (http://\S+/v1)")


class SimProcess:
    """``python -m lanemon.sim`` in a subprocess; ``.url`` is its base URL."""

    def __init__(self, profile: str, time_scale: float = 1.0, seed: int = 0, extra: tuple[str, ...] = ()):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lanemon.sim", "--profile", profile, "--port", "0",
             "--time-scale", str(time_scale), "--seed", str(seed), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 20
        self.url = None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = ANNOUNCE.search(line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.proc.kill()
            raise RuntimeError(f"simulator {profile} did not start: {self.proc.stderr.read()[:2000]}")

    def trace(self) -> list[dict]:
        return httpx.get(self.url.removesuffix("/v1") + "/sim/trace", timeout=10).json()["requests"]

    def clear_trace(self) -> None:
        httpx.delete(self.url.removesuffix("/v1") + "/sim/trace", timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.stdout.close()
            self.proc.stderr.close()


@contextlib.contextmanager
def sim_pair(time_scale: float, seed: int = 0):
    a = SimProcess("tensorfold-exl3", time_scale, seed)
    try:
        b = SimProcess("sglang-native", time_scale, seed)
    except Exception:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


@pytest.fixture(scope="session")
def fast_sims():
    """Both simulated lanes at 20x speed (time_scale 0.05), shared by quick tests."""
    with sim_pair(0.05) as pair:
        yield pair


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Never write recordings or read config from the real user's XDG dirs."""
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
    os.environ.pop("LANEMON_THEME", None)
