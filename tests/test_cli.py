"""The command line: help, exit codes, clear one-line errors (never tracebacks), `check`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import orjson
import pytest

from lanemon.events import SCHEMA_NAME


def lanemon(*args, timeout=60, env=None):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def assert_clean_failure(out, code, words):
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout
    assert words in out.stderr


def test_help_lists_the_commands():
    out = lanemon("--help")
    assert out.returncode == 0
    for command in ("live", "demo", "sim", "check", "replay"):
        assert f"    {command} " in out.stdout


def test_check_passes_against_each_simulated_lane(fast_sims):
    reports = []
    for sim in fast_sims:
        out = lanemon("check", sim.url, "--json")
        assert out.returncode == 0, out.stdout + out.stderr
        report = json.loads(out.stdout)
        reports.append(report)
        assert report["passed"] is True
        checks = {c["name"]: c for c in report["checks"]}
        assert set(checks) == {"models", "completion", "stream_completion", "stream_chat", "usage", "tools", "logprobs"}
        assert all(c["passed"] for c in checks.values() if c["required"])
        chat = checks["stream_chat"]
        # a stream with no rate says why (its chunks came in a burst: the simulator at 20x beside a busy machine;
        # every token in its first chunk; tests/test_check_result.py checks each reason)
        assert chat["ttft_s"] > 0, chat
        assert (chat["tok_s"] is not None and chat["tok_s"] > 0) or "no decode rate (" in chat["detail"], chat
        assert checks["tools"]["passed"] is True
    # the write-up: lane A rejects logprobs; lane B serves generation logprobs
    lp = {r["url"]: next(c for c in r["checks"] if c["name"] == "logprobs") for r in reports}
    assert lp[fast_sims[0].url]["passed"] is False and "not supported" in lp[fast_sims[0].url]["detail"]
    assert lp[fast_sims[1].url]["passed"] is True


def test_check_table_output(fast_sims):
    out = lanemon("check", fast_sims[0].url)
    assert out.returncode == 0
    assert "stream_chat" in out.stdout and "required checks passed" in out.stdout


def test_check_against_a_closed_port_fails_clearly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = lanemon("check", f"http://127.0.0.1:{port}/v1", "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["passed"] is False and "connection refused" in report["checks"][0]["detail"]
    assert "Traceback" not in out.stderr


def test_check_a_configured_lane_by_name(fast_sims, tmp_path):
    cfg = tmp_path / "lanes.toml"
    cfg.write_text(f'[lanes.A]\nurl = "{fast_sims[0].url}"\n')
    out = lanemon("check", "A", "--config", str(cfg), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["passed"]
    assert_clean_failure(lanemon("check", "Z", "--config", str(cfg)), 2, "neither a URL nor a configured lane")


@pytest.mark.parametrize(
    "args, words",
    [
        (("live",), "no lanes configured"),
        (("live", "--lane", "A=localhost:8001"), "not an http(s) URL"),
        (("live", "--lane", "nonsense"), "expected NAME=URL"),
        (("sim", "--profile", "vllm-fast"), "unknown profile"),
        (("check", "ftp://x/v1"), "not an http(s) URL"),
        (("replay", "/nonexistent/s.jsonl"), "no such file"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, words):
    out = lanemon(*args)
    assert_clean_failure(out, 2, words)
    assert len(out.stderr.strip().splitlines()) == 1


def test_bad_config_file_names_the_field(tmp_path):
    cfg = tmp_path / "lanes.toml"
    cfg.write_text('[lanes.A]\nurl = "http://127.0.0.1:8001/v1"\ntemprature = 0\n')
    assert_clean_failure(lanemon("live", "--config", str(cfg)), 2, "'temprature'")


def test_replay_refuses_a_future_schema(tmp_path):
    p = tmp_path / "future.jsonl"
    p.write_bytes(orjson.dumps({"schema": SCHEMA_NAME, "version": "7.0", "lanemon": "7.1.0"}) + b"\n")
    assert_clean_failure(lanemon("replay", str(p)), 2, "upgrade lanemon")
