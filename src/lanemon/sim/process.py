"""The simulator as a child process: ``python -m lanemon.sim`` on a free loopback port.

Used by ``--demo`` benchmarks that need the client's CPU to themselves (``lanemon bench sweep --demo``), by
the tests (tests/simproc.py) and the bench scripts.  The in-process variant is
:class:`lanemon.sim.server.SimThread`; a separate process is what a measurement wants (its CPU is not the
client's, and the GIL is not shared).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import httpx

ANNOUNCE = re.compile(r"listening on (http://\S+/v1)")


class SimProcess:
    """``python -m lanemon.sim`` in a subprocess; ``.url`` is its base URL (``…/v1``), ``.base`` without it.

    ``stderr``: where the simulator's log goes -- a path (a file is created there and kept) or None (an
    anonymous temporary file, quoted if it fails to start).  Never a pipe nobody reads: a full pipe would
    block the simulator mid-run.
    """

    def __init__(self, profile: str, time_scale: float = 1.0, seed: int = 0, extra: tuple[str, ...] = (),
                 stderr: str | os.PathLike | None = None, start_timeout: float = 30.0):
        self.log: IO[bytes] = open(stderr, "wb") if stderr is not None else tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lanemon.sim", "--profile", profile, "--port", "0",
             "--time-scale", str(time_scale), "--seed", str(seed), *extra],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, text=True,
        )
        deadline = time.monotonic() + start_timeout
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
            self.proc.wait()
            raise RuntimeError(f"simulator {profile} did not start: {self.log_text()[-2000:]}")
        self.base = self.url.removesuffix("/v1")

    def log_text(self) -> str:
        """What the simulator wrote to stderr so far."""
        self.log.flush()
        try:
            if isinstance(self.log.name, int):  # the anonymous temporary file (w+b)
                self.log.seek(0)
                return self.log.read().decode(errors="replace")
            return Path(os.fsdecode(self.log.name)).read_text(errors="replace")
        except (OSError, ValueError):
            return ""

    def trace(self) -> list[dict]:
        return httpx.get(self.base + "/sim/trace", timeout=30).json()["requests"]

    def clear_trace(self) -> None:
        httpx.delete(self.base + "/sim/trace", timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(Exception):
            self.proc.stdout.close()
        with contextlib.suppress(Exception):
            self.log.close()

    def __enter__(self) -> "SimProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
