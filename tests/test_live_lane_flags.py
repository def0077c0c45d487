"""One lane-building path (issue 37, item 4): `live` reads --telemetry and --cost the way the benches do
(cli/common.load_lanes): a lane's GPU telemetry from the flag reaches the recording and the exporter; a bad
value or an unknown lane is one line and exit 2, as `bench decode` says it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lanemon.sim.server import SimThread


def _live(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lanemon", "live", "--headless", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("flag, words", [(("--cost", "A=free"), "--cost A: 'free' is not a number"),
                                         (("--telemetry", "Q=http://127.0.0.1:9/metrics"), "no lane named 'Q'"),
                                         (("--cost", "Q=3.5"), "no lane named 'Q'")])
def test_a_bad_lane_flag_is_one_line_and_exit_2_on_live_as_on_bench(flag, words, tmp_path):
    live = _live("--lane", "A=http://127.0.0.1:9/v1", *flag, "--duration", "1", "--no-record")
    bench = subprocess.run([sys.executable, "-m", "lanemon", "bench", "decode", "--headless", "--lane",
                            "A=http://127.0.0.1:9/v1", *flag, "--no-record"], capture_output=True, text=True,
                           timeout=60)
    assert (live.returncode, bench.returncode) == (2, 2), live.stderr
    assert words in live.stderr and live.stderr.count("\n") == 1
    assert live.stderr.split(": ", 1)[1] == bench.stderr.split(": ", 1)[1]


def test_live_takes_telemetry_and_cost_from_the_flags(tmp_path):
    rec = tmp_path / "live.jsonl"
    with SimThread("tensorfold-exl3", time_scale=0.1, gpu_telemetry_port=0) as sim:
        proc = _live("--lane", f"A={sim.base_url}", "--telemetry", f"A={sim.telemetry_url}", "--cost", "A=3.5",
                     "--interval", "0.2", "--duration", "3", "--record", str(rec))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in rec.read_text().splitlines()[1:]]
    lane = next(e for e in events if e["kind"] == "lane" and e["lane"] == "A")
    assert lane["data"]["cost_per_hour"] == 3.5 and lane["data"]["telemetry"].endswith("/metrics")
    assert any(e["kind"] == "gpu" and e["data"].get("ok") and e["data"].get("power_w") for e in events)
