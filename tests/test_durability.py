"""Recordings survive SIGKILL mid-write and a full disk never stops the app."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

from lanemon.config import ProbeConfig
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import Recording
from lanemon.sessions.sources import LiveSession
from lanemon.cli.common import demo_lanes
from lanemon.ui.app import make_app


def test_sigkill_mid_write_leaves_every_complete_line_readable(tmp_path):
    rec = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "agree", "--demo", "--time-scale", "0.5",
                             "--json", "--record", str(rec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until tokens are streaming into the file
            if rec.exists() and rec.stat().st_size > 20_000:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the recording never grew")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    r = Recording(rec)
    events = list(r.events())
    raw = rec.read_bytes()
    complete_lines = raw.count(b"\n") - 1  # minus the header
    assert len(events) == complete_lines > 50
    assert len(r.warnings) <= 1  # at most the one cut line
    assert any(e.kind == "token" for e in events)


async def test_disk_full_stops_recording_with_a_warning_and_the_app_keeps_running(tmp_path):
    with demo_lanes(0.05) as lanes:
        recorder = Recorder(tmp_path / "full.jsonl", make_header("demo", [lane.public() for lane in lanes]))
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=16), mode="demo", recorder=recorder)
        app = make_app(session, refresh_hz=20)
        async with app.run_test(size=(120, 36)) as pilot:
            state = app.state
            deadline = time.monotonic() + 30
            while not all(l.requests_ok >= 1 for l in state.lanes.values()):  # plotted or client-bound
                assert time.monotonic() < deadline
                await pilot.pause(0.05)

            class FullDisk:
                def write(self, _):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

                flush = write

                def close(self):
                    pass

            recorder._fh.flush()
            recorder._fh = FullDisk()
            before = sum(l.requests_ok for l in state.lanes.values())
            deadline = time.monotonic() + 30
            while sum(l.requests_ok for l in state.lanes.values()) < before + 4:
                assert time.monotonic() < deadline
                await pilot.pause(0.05)
            assert recorder.failed and "No space left on device" in recorder.failed
            assert any("recording stopped" in msg for _, level, msg in state.notes if level == "error")
            await pilot.press("q")
        session.close()
    # what was written before the disk filled up is intact
    assert len(list(Recording(recorder.path).events())) > 10
