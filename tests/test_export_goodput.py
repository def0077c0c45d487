"""Per-request export and goodput: rows and counts match the recording request by request."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from lanemon.measure import metrics
from lanemon.recording.reader import read_events
from lanemon.measure.records import assemble
from test_metrics import MS, request_events


def lanemon(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "agree.jsonl"
    out = lanemon("agree", "--demo", "--time-scale", "0.02", "--prompts", "4", "--tokens", "24", "--json",
                  "--record", str(path))
    assert out.returncode == 0, out.stderr
    return path


def test_export_jsonl_matches_the_recording_request_by_request(recording):
    out = lanemon("export", str(recording), "--requests")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    _, events, _ = read_events(recording)
    recs = {r.req: r for r in assemble(events)}
    assert len(rows) == len(recs) == 8
    for row in rows:
        rec = recs[row["req"]]
        m = metrics.request_metrics(rec)
        assert row["lane"] == rec.lane and row["status"] == "ok"
        assert row["ttft_s"] == m.ttft_s and row["e2e_s"] == m.e2e_s
        assert row["itl_s"] == list(m.itl_s) and len(row["itl_s"]) == m.chunks - 1
        assert row["output_tokens"] == rec.completion_tokens and row["tokens_estimated"] is False
        assert row["bench"] == "agree" and row["meta"]["prompt_id"] in range(4)


def test_export_csv_to_file(recording, tmp_path):
    target = tmp_path / "trace.csv"
    out = lanemon("export", str(recording), "--requests", "-o", str(target))
    assert out.returncode == 0 and "8 requests written" in out.stderr
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(rows) == 8 and {r["lane"] for r in rows} == {"A", "B"}
    assert all(len(r["itl_s"].split()) >= 1 for r in rows)


@pytest.mark.parametrize("args, words", [
    (("export", "/nonexistent.jsonl", "--requests"), "no such file"),
    (("export", "/nonexistent.jsonl"), "no such file"),  # --requests is the default, the only kind
])
def test_export_bad_input(args, words):
    out = lanemon(*args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr


def test_parse_slo():
    assert metrics.parse_slo(["ttft=0.5", "tpot=0.05", "e2e=10s"]) == {"ttft": 0.5, "tpot": 0.05, "e2e": 10.0}
    assert metrics.parse_slo(["ttft=0.5,e2e=2"]) == {"ttft": 0.5, "e2e": 2.0}
    for bad in (["ttft"], ["latency=1"], ["ttft=abc"], ["ttft=-1"]):
        with pytest.raises(ValueError):
            metrics.parse_slo(bad)


def test_goodput_matches_a_hand_count():
    # four requests over 1 s of wall time:
    fast = request_events("A-1", sent=0, tokens=[100 * MS, 120 * MS, 140 * MS], usage={"completion_tokens": 3},
                          end=140 * MS)  # ttft .1, tpot .02, e2e .14
    slow_first = request_events("A-2", sent=0, tokens=[600 * MS, 620 * MS], usage={"completion_tokens": 2},
                                end=620 * MS)  # ttft .6 > .5
    slow_decode = request_events("A-3", sent=0, tokens=[100 * MS, 400 * MS], usage={"completion_tokens": 2},
                                 end=1000 * MS)  # tpot .9 > .05
    failed = request_events("A-4", sent=0, tokens=[100 * MS], error={"cls": "cut"}, end=200 * MS)
    recs = assemble(fast + slow_first + slow_decode + failed)
    g = metrics.goodput(recs, {"ttft": 0.5, "tpot": 0.05})
    assert (g["good"], g["total"]) == (1, 4)
    assert g["share"] == 0.25 and g["rate_rps"] == pytest.approx(1 / 1.0)
    assert metrics.goodput(recs, {"e2e": 0.7})["good"] == 2


def test_export_of_simulated_lanes_says_so_on_every_row_and_at_the_top(tmp_path):
    """An export made from the simulator cannot pass for a real server's figures (issue 16 item 7)."""
    import csv
    import io
    import subprocess
    import sys

    rec = tmp_path / "agree.jsonl"
    out = subprocess.run([sys.executable, "-m", "lanemon", "agree", "--demo", "--time-scale", "0.02", "--prompts",
                          "2", "--tokens", "8", "--json", "--record", str(rec)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    exp = subprocess.run([sys.executable, "-m", "lanemon", "export", str(rec), "--requests", "--format", "csv"],
                         capture_output=True, text=True, timeout=60)
    assert exp.returncode == 0, exp.stderr
    assert "SIMULATED" in exp.stderr
    rows = list(csv.DictReader(io.StringIO(exp.stdout)))
    assert rows and all(r["simulated"] == "True" for r in rows)
