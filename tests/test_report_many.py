"""`lanemon report` over several recordings: each bench from the recording that holds it."""

from __future__ import annotations

import json
import subprocess
import sys


def lanemon(*args):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=180)


def test_report_of_two_recordings_holds_both_sections(tmp_path):
    agree, kl = tmp_path / "agree.jsonl", tmp_path / "kl.jsonl"
    assert lanemon("agree", "--demo", "--time-scale", "0.02", "--prompts", "4", "--tokens", "24", "--json",
                   "--record", str(agree)).returncode == 0
    assert lanemon("kl", "--reference", "B", "--demo", "--time-scale", "0.02", "--prompts", "1", "--json",
                   "--record", str(kl)).returncode == 3
    out = lanemon("report", str(agree), str(kl), "--format", "json")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["agree"]["total"] == 4 and r["kl"]["lanes"]["A"]["status"] == "not_exposed"
    assert r["environment"]["recordings"] == [str(agree), str(kl)]
    md = lanemon("report", str(agree), str(kl)).stdout
    assert "not exposed by lane A" in md and "Greedy agreement" in md
    # the same bench twice: the first is used and the duplicate is named
    dup = lanemon("report", str(agree), str(agree), "--format", "json")
    assert dup.returncode == 0 and "agree appears in several recordings" in dup.stderr


def test_two_single_lane_qeval_recordings_are_joined_and_paired():
    from pathlib import Path

    samples = Path(__file__).resolve().parents[1] / "sample_sessions"
    out = lanemon("report", str(samples / "qeval-A.jsonl"), str(samples / "qeval-B.jsonl"), "--format", "json")
    assert out.returncode == 0, out.stderr
    q = json.loads(out.stdout)["qeval"]
    assert set(q["lanes"]) == {"A", "B"} and "several recordings" not in out.stderr
    assert (q["compare"]["kept"], q["compare"]["broke"], q["compare"]["fixed"], q["compare"]["p_value"]) == (71, 0, 0, 1.0)
