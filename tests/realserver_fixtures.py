"""A real vLLM (CPU build) serving a tiny random-weight Llama, as a session-wide test lane.

``scripts/realserver/install_vllm.sh`` (run by ``.ci/run``) installs vLLM into its own venv under
``$LANEMON_VLLM_HOME`` (default ``~/.cache/lanemon-vllm``) and builds the model there; the fixture
starts ``scripts/realserver/vllm.sh`` on a free loopback port once per session, waits for
``/v1/models`` and stops the whole process group at the end.  Where vLLM is not installed the tests
that use it are skipped with that reason; an installed vLLM that does not come up is a failure.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts" / "realserver"
VLLM_HOME = Path(os.environ.get("LANEMON_VLLM_HOME", Path.home() / ".cache" / "lanemon-vllm"))
START_TIMEOUT_S = float(os.environ.get("LANEMON_VLLM_START_TIMEOUT", "420"))  # first start compiles (~100 s)
MAX_MODEL_LEN = 4096


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class VLLMServer:
    url: str  # OpenAI base, .../v1
    root: str  # server root (for /metrics)
    log: Path
    proc: subprocess.Popen
    model: str = "lanemon-tiny"
    max_model_len: int = MAX_MODEL_LEN

    def metrics(self) -> str:
        return httpx.get(self.root + "/metrics", timeout=10).text


def vllm_missing_reason() -> str | None:
    py = VLLM_HOME / "venv" / "bin" / "python"
    if not py.exists():
        return (f"vLLM is not installed in {VLLM_HOME}/venv (scripts/realserver/install_vllm.sh installs it; "
                ".ci/run does so with a cache)")
    if not list((VLLM_HOME / "venv").glob(".lanemon-vllm-*")):
        return f"the vLLM install in {VLLM_HOME}/venv is unfinished (rerun scripts/realserver/install_vllm.sh)"
    return None


def start_vllm(tmp: Path, *extra: str) -> VLLMServer:
    """Start the test vLLM (building the tiny model first when it is missing) and wait for it."""
    py = VLLM_HOME / "venv" / "bin" / "python"
    if not (VLLM_HOME / "model" / "lanemon-tiny.json").exists():
        built = subprocess.run([str(py), str(SCRIPTS / "build_tiny_model.py"), str(VLLM_HOME / "model")],
                               capture_output=True, text=True, timeout=600)
        if built.returncode != 0:
            pytest.fail(f"building the tiny model failed: {built.stderr[-2000:]}")
    port = free_port()
    log_path = tmp / f"vllm-{port}.log"
    log = log_path.open("wb")  # vLLM logs a lot: a pipe would fill up and block it
    proc = subprocess.Popen([str(SCRIPTS / "vllm.sh"), str(port), *extra], stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # its own process group: the engine core is a child
    log.close()
    root = f"http://127.0.0.1:{port}"
    server = VLLMServer(root + "/v1", root, log_path, proc)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f"vLLM exited with {proc.returncode}: {log_path.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(server.url + "/models", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_vllm(server)
            pytest.fail(f"vLLM did not answer /v1/models within {START_TIMEOUT_S:.0f} s: "
                        f"{log_path.read_text(errors='replace')[-3000:]}")
        time.sleep(1.0)


def stop_vllm(server: VLLMServer) -> None:
    if server.proc is None or server.proc.poll() is not None:
        return
    try:
        os.killpg(server.proc.pid, signal.SIGTERM)
        server.proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """The session's vLLM lane (skipped where vLLM is not installed).

    ``LANEMON_VLLM_URL=http://127.0.0.1:PORT/v1`` uses a vLLM already started with
    ``scripts/realserver/vllm.sh PORT`` instead (faster when iterating on these tests).
    """
    given = os.environ.get("LANEMON_VLLM_URL")
    if given:
        url = given.rstrip("/")
        yield VLLMServer(url, url.removesuffix("/v1"), Path(os.devnull), None)  # type: ignore[arg-type]
        return
    reason = vllm_missing_reason()
    if reason:
        pytest.skip(reason)
    server = start_vllm(tmp_path_factory.mktemp("vllm"))
    try:
        yield server
    finally:
        stop_vllm(server)


@pytest.fixture(scope="session")
def vllm_url(vllm_server):
    return vllm_server.url
