"""`lanemon report` end to end: real recordings of tiny simulated runs, every format, errors exit 2."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from lanemon.cli.common import demo_lanes
from lanemon.recording.writer import Recorder, make_header
from lanemon.reports.analyse import analyze
from lanemon.results.analysis import TYPED, Analysis
from lanemon.results.common import as_result, to_json_obj
from lanemon.results.decode import DecodeResult

bench = pytest.importorskip("lanemon.workloads.bench.run")


def lanemon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> dict[str, tuple[Path, dict]]:
    """One tiny recording per bench (decode, prefill) made with the real BenchRun, and the run's own results."""
    out = {}
    d = tmp_path_factory.mktemp("rec")
    specs = {"decode": bench.BenchOptions(levels=[1, 2], categories=["coding", "prose"], seed=1, max_tokens=32),
             "prefill": bench.BenchOptions(lengths=[2000, 8000], seed=1)}
    with demo_lanes(0.02) as lanes:
        for kind, opts in specs.items():
            path = d / f"{kind}.jsonl"
            rec = Recorder(path, make_header(f"bench {kind} --demo", [lane.public() for lane in lanes]))
            run = bench.BenchRun(kind, lanes, opts, recorder=rec)
            asyncio.run(run.run())
            rec.close()
            out[kind] = (path, to_json_obj(run.results()))  # the JSON the analysis holds
    return out


@pytest.mark.parametrize("kind", ["decode", "prefill"])
def test_analyze_recording_equals_the_runs_results(recordings, kind):
    path, results = recordings[kind]
    a = analyze(path)
    assert a.bench(kind) == as_result(results, TYPED[kind])  # the run's own result, typed
    assert a.warnings == []
    env = a.environment
    assert [lane.name for lane in env.lanes] == ["A", "B"]
    assert env.command == f"bench {kind} --demo" and env.lanemon and env.created and env.host


def test_report_formats_and_output_file(recordings, tmp_path):
    path, results = recordings["decode"]
    md = lanemon("report", str(path))
    assert md.returncode == 0, md.stderr
    assert "## Decode: aggregate throughput vs concurrency" in md.stdout and "## Verdict" in md.stdout
    assert "## Prefill" not in md.stdout  # no prefill in this recording
    js = lanemon("report", str(path), "--format", "json")
    # the run's own result as its typed result prints it (bench decode --json prints the same: its own test)
    assert json.loads(js.stdout)["decode"] == to_json_obj(as_result(results, DecodeResult))
    out = tmp_path / "r.html"
    h = lanemon("report", str(path), "-o", str(out))  # format from the suffix
    assert h.returncode == 0 and h.stdout == ""
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    c = lanemon("report", str(recordings["prefill"][0]), "-o", str(tmp_path / "r.txt"), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.txt").read_text())))
    assert {r["bench"] for r in rows} == {"prefill"} and c.returncode == 0


def test_truncated_recording_reports_what_is_there_with_a_warning(recordings, tmp_path):
    path, _ = recordings["decode"]
    data = path.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    r = lanemon("report", str(cut))
    assert r.returncode == 0
    assert "truncated" in r.stderr
    assert "> **Warning:**" in r.stdout and "truncated" in r.stdout


def test_errors_are_one_line_exit_2(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    future = tmp_path / "future.jsonl"
    future.write_text('{"schema": "lanemon.recording", "version": "9.0", "lanemon": "9.9.9"}\n')
    for args in ([str(bad)], [str(future)], [str(tmp_path / "missing.jsonl")],
                 [str(future), "-o", str(tmp_path / "x.pdf")]):
        r = lanemon("report", *args)
        assert r.returncode == 2, args
        assert r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("lanemon: ")
        assert "Traceback" not in r.stderr


def test_bench_cli_json_equals_report_json(tmp_path):
    """The brief's integration check through the CLI: `bench ... --record --json` vs `report --format json`."""
    rec = tmp_path / "cli.jsonl"
    run = lanemon("bench", "decode", "--demo", "--time-scale", "0.02", "--levels", "1,2", "--categories",
                  "coding,prose", "--max-tokens", "16", "--record", str(rec), "--json")
    if run.returncode != 0 and "invalid choice" in run.stderr:
        pytest.skip("`lanemon bench` is not available")
    assert run.returncode == 0, run.stderr
    rep = lanemon("report", str(rec), "--format", "json")
    assert rep.returncode == 0, rep.stderr
    # what the report prints of the decode run is its typed result: the same keys and values --json printed,
    # once both are read through the published contract (a key --json carries but leaves at its default is the
    # bench's contract, tested with the bench: tests/test_typed_bench_results.py)
    printed = json.loads(run.stdout)
    assert json.loads(rep.stdout)["decode"] == to_json_obj(as_result(printed, DecodeResult))
    assert msgspec.json.decode(rep.stdout, type=Analysis, strict=True).decode == as_result(printed, DecodeResult)
    for fmt in ("md", "html", "csv"):
        r = lanemon("report", str(rec), "--format", fmt)
        assert r.returncode == 0 and r.stdout, (fmt, r.stderr)
