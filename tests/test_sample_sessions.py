"""Every shipped sample session replays and reports; the schema cannot move without regenerating them."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lanemon.recording.reader import Recording
from lanemon.reports.render import render
from lanemon.events import SCHEMA_VERSION_STR
from lanemon.reports.analyse import analyze
from lanemon.results.common import to_json_obj
from lanemon.sessions.sources import ReplaySession
from lanemon.folds.dashboard import SessionState

SAMPLES = Path(__file__).resolve().parents[1] / "sample_sessions"
FILES = sorted(SAMPLES.glob("*.jsonl"))
EXPECTED = {"demo", "decode", "prefill", "needles", "races", "qeval-A", "qeval-B", "agree", "kl", "gauntlet",
            "yesterday", "today"}


def test_every_sample_is_there():
    assert {p.stem for p in FILES} == EXPECTED


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_sample_replays_and_reports(path):
    rec = Recording(path)
    assert rec.header["version"] == SCHEMA_VERSION_STR, (
        f"{path.name} was written with schema {rec.header['version']}, lanemon now writes {SCHEMA_VERSION_STR}: "
        "regenerate the samples with sample_sessions/make.sh")
    events = list(rec.events())
    assert rec.warnings == [] and events

    # replay at full speed through the same source the dashboard uses
    replay = ReplaySession(path, speed=float("inf"))
    state = SessionState([(lane.name, lane.url, lane.model) for lane in replay.lanes])
    replay.bus.subscribe(state.apply)
    asyncio.run(replay.run())
    assert replay.finished and state.events == len(events)

    analysis = analyze(path)
    assert analysis.warnings == []
    for fmt in ("md", "html", "json", "csv"):
        assert render(analysis, fmt)


def _analysis(name):
    return analyze(SAMPLES / f"{name}.jsonl")


def test_decode_sample_shows_the_crossover():
    d = to_json_obj(_analysis("decode").decode)  # the crossover as --json prints it
    assert d["crossover"] and d["crossover"]["leader_before"] == "A" and d["crossover"]["leader_after"] == "B"


def test_quality_samples_match_the_writeup():
    for lane in ("A", "B"):
        q = json.loads((SAMPLES / f"qeval-{lane}.json").read_text())
        assert (q["passed"], q["total"]) == (71, 75)
    out = subprocess.run([sys.executable, "-m", "lanemon", "qeval", "compare", str(SAMPLES / "qeval-A.json"),
                          str(SAMPLES / "qeval-B.json"), "--json"], capture_output=True, text=True, timeout=60)
    r = json.loads(out.stdout)
    assert (r["kept"], r["broke"], r["fixed"], r["p_value"]) == (71, 0, 0, 1.0)
    a = _analysis("agree").agree
    assert (a.exact, a.median_first_divergence_word, a.agree_ge_10_words, a.diverge_at_0) == (0, 2, 9, 18)


def test_yesterday_vs_today_names_the_regression():
    out = subprocess.run([sys.executable, "-m", "lanemon", "compare", str(SAMPLES / "yesterday.jsonl"),
                          str(SAMPLES / "today.jsonl"), "--format", "json"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    # 2 reps a side: nothing can be tested, so nothing is significant; the regression on B is named as
    # beyond the noise band (untested), and A stays inside it
    assert not [row for row in r["rows"] if row["significant"]]
    worse = [row for row in r["rows"] if row["beyond_band"] and row["better"] == "old"]
    assert worse and all(row["lane"] == "B" for row in worse)
    assert not [row for row in r["rows"] if row["beyond_band"] and row["lane"] == "A"]
