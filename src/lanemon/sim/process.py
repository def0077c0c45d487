"""The simulator as a child process: ``python -m lanemon.sim`` on a free loopback port.

Used by ``lanemon demo`` and every ``--demo`` run (cli/common.py ``demo_lanes``), by the tests
(tests/simproc.py) and the bench scripts.  The in-process variant is :class:`lanemon.sim.server.SimThread`;
a separate process is what a measurement wants (its CPU is not the client's, and the GIL is not shared).

A child never outlives the process that started it: ``python -m lanemon.sim`` reads :data:`PARENT_ENV` and
asks the kernel for SIGKILL when that parent dies (Linux ``PR_SET_PDEATHSIG``; also on SIGKILL of the
parent), and exits at once if the parent is already gone.  It runs in a process group of its own, so a
Ctrl-C typed at the terminal reaches lanemon (which winds down its run) and not the lanes mid-request;
:meth:`SimProcess.stop` ends it.
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


ANNOUNCE = re.compile(r"listening on (http://\S+/v1)")
TELEMETRY = re.compile(r"GPU telemetry .* on (http://\S+/metrics)")  # announced first (--gpu-telemetry-port)
PARENT_ENV = "LANEMON_SIM_PARENT"
"""Set to the starting process's pid: the child dies with it (see :func:`die_with_parent`)."""


def die_with_parent() -> None:
    """In the simulator child: SIGKILL when the process named by :data:`PARENT_ENV` dies.

    Linux only (``prctl(PR_SET_PDEATHSIG)``, which the kernel delivers when the thread that forked the child
    ends; lanemon starts its simulators from the main thread).  Elsewhere nothing happens and the parent's
    ``stop()`` remains the way out.  If the parent died before the request was made, exit now.
    """
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if str(os.getppid()) != parent:
        os._exit(1)


class SimProcess:
    """``python -m lanemon.sim`` in a subprocess; ``.url`` is its base URL (``…/v1``), ``.base`` without it.

    ``stderr``: where the simulator's log goes -- a path (a file is created there and kept) or None (an
    anonymous temporary file, quoted if it fails to start).  Never a pipe nobody reads: a full pipe would
    block the simulator mid-run.
    """

    def __init__(self, profile: str, time_scale: float = 1.0, seed: int = 0, extra: tuple[str, ...] = (),
                 stderr: str | os.PathLike | None = None, start_timeout: float = 30.0, wait: bool = True):
        """Start the child; with *wait* (the default) also wait until it listens (:meth:`wait_ready`).
        Start several with ``wait=False`` and then wait for each, to start them side by side."""
        self.profile = profile
        self.start_timeout = start_timeout
        self.log: IO[bytes] = open(stderr, "wb") if stderr is not None else tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lanemon.sim", "--profile", profile, "--port", "0",
             "--time-scale", str(time_scale), "--seed", str(seed), *extra],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, text=True,
            env={**os.environ, PARENT_ENV: str(os.getpid())}, process_group=0,
        )
        self.url: str | None = None
        self.base = ""
        self.telemetry_url: str | None = None
        """The simulated GPU's dcgm-exporter URL when started with ``--gpu-telemetry-port`` (sim/gpu.py)."""
        if wait:
            self.wait_ready()

    def wait_ready(self) -> "SimProcess":
        """Wait for the child's announce line (its URL); RuntimeError with its log if it does not come."""
        if self.url is not None:
            return self
        profile = self.profile
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            t = TELEMETRY.search(line)
            if t:
                self.telemetry_url = t.group(1)
            m = ANNOUNCE.search(line)
            if m:
                self.url = m.group(1)
                break
        if self.url is None:
            self.proc.kill()
            self.proc.wait()
            code = self.proc.returncode
            lines = [line for line in self.log_text().splitlines() if line.strip()]
            last = f": {lines[-1].strip()[:500]}" if lines else ""  # the error; the whole log is log_text()
            raise RuntimeError(f"simulator {profile} did not start (exit {code}){last}")
        self.base = self.url.removesuffix("/v1")
        return self

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
        import httpx

        return httpx.get(self.base + "/sim/trace", timeout=30).json()["requests"]

    def clear_trace(self) -> None:
        import httpx

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
