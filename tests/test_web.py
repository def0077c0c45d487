"""`lanemon web`: textual-serve on loopback serves the page; bad input exits 2."""

from __future__ import annotations

import shlex
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from lanemon.cli.main import main
from lanemon.cli.web import is_loopback, served_command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_web_serves_the_page_on_loopback_and_stops_cleanly():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lanemon", "web", "--port", str(port), "--", "demo", "--time-scale", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        first = proc.stderr.readline()  # "lanemon web: serving ... on http://127.0.0.1:PORT/?token=... "
        url = first.split(" on ", 1)[-1].split(" ", 1)[0]
        assert url.startswith(f"http://127.0.0.1:{port}/?token="), first
        deadline = time.monotonic() + 30
        response = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                response = httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert response is not None, proc.stderr.read() if proc.poll() is not None else "no answer"
        assert response.status_code == 200
        assert "text/html" in response.headers["content-type"]
        page = response.text.lower()
        assert "textual" in page and "<html" in page
        assert f"ws://127.0.0.1:{port}/ws" in response.text or "/ws" in response.text  # the terminal socket
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("lanemon web did not stop on SIGINT")
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "`lanemon demo --time-scale 0.05`" in first + err


def test_served_command_is_this_lanemon():
    assert served_command([]) == shlex.join([sys.executable, "-m", "lanemon", "live"])
    assert served_command(["--", "replay", "my rec.jsonl", "--speed", "4"]).endswith(
        "-m lanemon replay 'my rec.jsonl' --speed 4")


def test_loopback_detection():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")


def test_web_cannot_serve_itself(capsys):
    assert main(["web", "--", "web"]) == 2
    assert "cannot serve itself" in capsys.readouterr().err


def test_missing_textual_serve_gives_a_clear_message(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)  # import fails
    assert main(["web", "--", "demo"]) == 2
    assert "pip install 'textual-serve" in capsys.readouterr().err
