"""Issue 39 rows 3, 9, 10, 11, 20: the alert line on stderr, `history --rebuild` on a full disk, a FIFO among the
recordings, a read-only catalogue, and `lanemon web`'s access log."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from hostile_edges3 import ESC, leaks

from lanemon.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
SAMPLE = ROOT / "sample_sessions" / "races.jsonl"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def lanemon(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, **kw)


def recordings(where: Path, n: int = 3) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        shutil.copy(SAMPLE, where / f"r{i}.jsonl")
    return where


from test_hostile_lost_data import tmpfs  # noqa: E402  (one tmpfs helper for the hostile-disk tests)


# -- row 3: an alert's name from lanes.toml on the headless stderr line ------------------------------------
def test_the_headless_alert_line_is_inert(capsys):
    from lanemon.measure.alerts import Transition, parse_rule
    from lanemon.monitor.headless import stderr_line

    rule = parse_rule("ttft_p50 > 0.5", name="slow" + ESC, severity="warning")
    stderr_line(Transition("firing", rule, "A" + ESC, 10**9, 0, {"ttft_p50" + ESC: 0.7}))
    line = capsys.readouterr().err
    assert "alert FIRING [warning] lane A" in line and "slow" in line
    assert leaks(line) == [], leaks(line)


# -- row 9: --rebuild on a full disk ------------------------------------------------------------------------
def test_rebuild_on_a_full_disk_is_one_line_and_exit_4(tmp_path, monkeypatch, capsys):
    from lanemon.monitor import history

    real = history.insert
    calls = []

    def full(conn, rows, path=None):
        calls.append(path)
        if len(calls) > 1:
            raise sqlite3.OperationalError("database or disk is full")
        return real(conn, rows, path)

    monkeypatch.setattr(history, "insert", full)
    code = main(["history", "--rebuild", "--recordings", str(recordings(tmp_path / "recs")),
                 "--catalogue", str(tmp_path / "cat.sqlite3")])
    err = capsys.readouterr().err
    assert code == 4, err
    assert "disk is full" in err and "from the first 1 of 3 recordings" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_rebuild_on_a_real_full_tmpfs(tmp_path):
    recs = recordings(tmp_path / "recs", n=40)
    with tmpfs("48k") as disk:
        out = lanemon("history", "--rebuild", "--recordings", str(recs), "--catalogue", str(disk / "cat.sqlite3"),
                      timeout=120)
    assert out.returncode == 4, out.stderr
    assert "Traceback" not in out.stderr and "full" in out.stderr


# -- row 10: a FIFO named *.jsonl among the recordings --------------------------------------------------------
def test_rebuild_skips_a_fifo_named_jsonl(tmp_path):
    recs = recordings(tmp_path / "recs", n=1)
    os.mkfifo(recs / "trap.jsonl")
    out = lanemon("history", "--rebuild", "--recordings", str(recs), "--catalogue", str(tmp_path / "c.sqlite3"),
                  timeout=30)
    assert out.returncode == 0, out.stderr
    assert "trap.jsonl: not a regular file" in out.stderr and "from 1 recordings (1 skipped)" in out.stderr


def test_the_default_recordings_folder_skips_a_fifo_too(tmp_path):
    from lanemon.monitor import history

    recs = recordings(tmp_path / "data" / "lanemon" / "recordings", n=1)
    os.mkfifo(recs / "trap.jsonl")
    assert history.recordings_dir() == recs
    read, rows, problems = history.rebuild(tmp_path / "c.sqlite3")
    assert read == 1 and rows > 0 and any("not a regular file" in p for p in problems)


# -- row 11: a read-only catalogue ---------------------------------------------------------------------------
def test_a_read_only_catalogue_never_advises_rebuild(tmp_path):
    recs = recordings(tmp_path / "recs", n=1)
    with tmpfs("4m") as disk:
        cat = disk / "cat.sqlite3"
        built = lanemon("history", "--rebuild", "--recordings", str(recs), "--catalogue", str(cat))
        assert built.returncode == 0, built.stderr
        assert subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True).returncode == 0
        out = lanemon("history", "--catalogue", str(cat))
    assert out.returncode in (0, 2), out.stderr
    assert "--rebuild" not in out.stderr and "Traceback" not in out.stderr
    if out.returncode == 2:
        assert "read-only" in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- row 20: `lanemon web` keeps its token out of its access log -----------------------------------------------
def test_web_access_log_has_no_token(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), HOME=str(tmp_path),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "web", "--port", str(port), "--", "demo", "--no-record"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stderr.readline()
        m = re.search(r"\?token=([A-Za-z0-9_-]+)", first)
        assert m, first
        token = m.group(1)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                page = httpx.get(f"{base}/?token={token}", headers={"Referer": f"{base}/?token={token}"}, timeout=5)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert page.status_code == 200
        httpx.get(f"{base}/static/css/xterm.css?token={token}", headers={"Referer": f"{base}/?token={token}"},
                  timeout=5)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, rest = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, rest = proc.communicate()
    logged = re.sub(r"\s+", "", out + rest)  # the log handler wraps long lines (a token split across two)
    assert '"GET/' in logged  # the access log is there
    assert token not in logged, logged[-2000:]
