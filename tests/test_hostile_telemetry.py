"""Hostile GPU telemetry and numbers from outside (issue 39, rows 7, 8, 14, 15; docs/SECURITY.md, "Telemetry and
numbers from outside (round three)"): scripted endpoints (tests/hostile_telemetry.py) and hand-edited
recordings.  Every number read from outside is checked against float range and, where a bound exists, against
physics; what is out of range is dropped and counted, never shown or summed; telemetry never holds up a run,
and its failures are its own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import httpx
import msgspec
import pytest

import hostile_telemetry as ht
from hostile_server import HostileServer
from lanemon import events as schema
from lanemon.client.telemetry import TelemetryScraper
from lanemon.events import Clock, Event
from lanemon.measure.bounds import beyond_float, gpu_reading, number, within

NS = 1_000_000_000


def scrape(handler, **kw):
    """One reading of a hostile endpoint: (its data, the events emitted, seconds taken)."""
    events: list[Event] = []
    with HostileServer(handler) as srv:
        async def go():
            async with httpx.AsyncClient(follow_redirects=False) as http:
                s = TelemetryScraper("A", srv.url.replace("/v1", "/metrics"), http, clock=Clock(),
                                     emit=events.append, **kw)
                return await s.scrape()
        t0 = time.monotonic()
        data = asyncio.run(go())
        return data, events, time.monotonic() - t0


def race(tmp_path: Path, *telemetry: str, record: bool = False) -> tuple[subprocess.CompletedProcess, float, int]:
    """``lanemon race --demo --json`` with *telemetry* (NAME=URL) over the simulated lanes': (the process,
    seconds, peak RSS in MB of lanemon and its simulators)."""
    out, err = tmp_path / "out", tmp_path / "err"
    cmd = [sys.executable, "-m", "lanemon", "race", "--demo", "--time-scale", "0.2", "--max-tokens", "16", "--json",
           *(["--record", str(tmp_path / "race.jsonl")] if record else ["--no-record"])]
    for t in telemetry:
        cmd += ["--telemetry", t]
    t0 = time.monotonic()
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if proc.poll() is None and proc.returncode is None:
                proc.kill()
        proc.returncode = os.waitstatus_to_exitcode(status)
    took = time.monotonic() - t0
    done = subprocess.CompletedProcess(cmd, proc.returncode, out.read_text(), err.read_text())
    return done, took, usage.ru_maxrss // 1024


@pytest.fixture(scope="module")
def demo_race(tmp_path_factory):
    """One recorded ``race --demo`` (its file, and how long it took: the baseline for the drip)."""
    tmp = tmp_path_factory.mktemp("race")
    done, took, _ = race(tmp, record=True)
    assert done.returncode == 0, done.stderr
    return tmp / "race.jsonl", took


# ------------------------------------------------------------------------------------------ the one rule


def test_number_and_within_hold_only_finite_floats():
    assert number(3) == 3.0 and number(2.5) == 2.5
    for bad in (True, "7", None, float("nan"), float("inf"), -float("inf"), 10 ** 400, [1]):
        assert number(bad) is None, bad
    assert within(-1000, 0, 5000) is None and within(5000, 0, 5000) == 5000.0
    assert beyond_float({"a": [1, {"b": 10 ** 400}]}) == ".a[1].b" and beyond_float({"a": 10 ** 300}) is None


def test_a_reading_keeps_only_physically_possible_values_and_counts_the_rest():
    bad = {"ok": True, "power_w": -1000.0, "energy_mj": 5e3, "gpu_count": 2, "parse_s": 10 ** 400,
           "gpus": [{"gpu": "0", "util_pct": 1.7e308, "power_w": -1000.0, "temp_c": 500, "model": "x"},
                    {"gpu": "1", "util_pct": 50, "power_w": 30.0, "reasons": 4.5}]}
    clean, n = gpu_reading(bad)
    assert n == 6 and clean["dropped"] == 6
    assert "power_w" not in clean and "parse_s" not in clean and clean["energy_mj"] == 5e3
    assert clean["gpus"][0] == {"gpu": "0", "model": "x"}
    assert clean["gpus"][1] == {"gpu": "1", "util_pct": 50, "power_w": 30.0}
    again, n2 = gpu_reading(clean)  # idempotent: the count recorded with a reading is kept, not doubled
    assert again == clean and n2 == 0


# ------------------------------------------------------------------------------------------ row 7


def test_live_drops_impossible_values_counts_them_and_the_panel_says_so():
    from lanemon.folds.dashboard import SessionState, gpu_text

    data, events, _ = scrape(lambda req: ht.text(ht.impossible()))
    assert data.ok and data.dropped == 3, data  # +Inf %, -1000 W, 500 °C
    assert data.power_w == 30.5 and all(g.dropped == 0 for g in data.gpus)
    st = SessionState()
    st.apply(Event(0, schema.LANE, "A", None, {"name": "A", "url": "http://x/v1", "telemetry": "http://g/metrics"}))
    st.apply(events[0])
    text = gpu_text(st.lane("A").gpu)
    assert text.startswith("40% · 30 W") and text.endswith("3 values dropped"), text


def _replayed_gpu_event(data: dict, t: int = NS) -> bytes:
    return json.dumps({"t": t, "kind": "gpu", "lane": "A", "data": data}).encode()


def test_a_replayed_reading_with_impossible_values_shows_none_of_them(tmp_path):
    """Row 7: a recording's GPU event with an overflowing utilisation and -1000 W showed ``GPU inf% · -1000… W``
    in replay (live dropped such values; replay did not)."""
    from lanemon.folds.dashboard import SessionState, gpu_text
    from lanemon.folds.series import SeriesState
    from lanemon.recording.reader import Recording
    from lanemon.recording.writer import make_header

    lanes = [{"name": "A", "url": "http://127.0.0.1:1/v1", "model": "m", "telemetry": "http://g/metrics"}]
    bad = {"ok": True, "source": "dcgm", "power_w": -1000.0, "gpu_count": 2,
           "gpus": [{"gpu": "0", "util_pct": 1.7e308, "power_w": -1000.0, "temp_c": 45.0},
                    {"gpu": "1", "util_pct": 1.7e308, "power_w": 20.0}]}
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n".join([json.dumps(make_header("demo", lanes)).encode(),
                                 json.dumps({"t": 0, "kind": "lane", "lane": "A", "data": lanes[0]}).encode(),
                                 _replayed_gpu_event(bad)]) + b"\n")
    st, series = SessionState(), SeriesState()
    for ev in Recording(path).events():
        st.apply(ev)
        series.apply(ev)
    text = gpu_text(st.lane("A").gpu)
    assert "inf" not in text and "-1000" not in text, text
    assert text == "45 °C · ×2 · 4 values dropped", text  # -1000 W twice, 1.7e308 % twice
    assert len(series.lane("A").gpu) == 0  # nothing possible to draw: power and utilisation both dropped


def test_an_overflowing_number_in_a_gpu_event_no_longer_drops_the_race_results(tmp_path, demo_race):
    """Row 7, second half: one such event made the report drop the race results, exit 0."""
    rec = tmp_path / "race.jsonl"
    lines = demo_race[0].read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"kind":"gpu"' in line)
    obj = json.loads(lines[at])
    obj["data"]["parse_s"] = 10 ** 400
    lines[at] = json.dumps(obj).encode()
    rec.write_bytes(b"\n".join(lines) + b"\n")
    out = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    report = json.loads(out.stdout)
    assert report["race"]["races"][0]["lanes"]["A"]["outcome"] == "complete"
    assert not any("could not be computed" in w for w in report["warnings"]), report["warnings"]
    assert any(f"line {at + 1}: skipped" in w and "float's range" in w for w in report["warnings"])


def test_a_race_against_a_counter_jumping_1e16_mj_per_read_shows_no_impossible_energy(tmp_path):
    """Row 5, end to end: a telemetry endpoint whose energy counter jumped 1e16 mJ per read made a race report
    2.1e12 J, 5.3e14 W and 0.0 tok/J.  Each such interval is dropped and counted, never summed or shown."""
    with HostileServer(ht.jumping()) as jump:
        done, _, _ = race(tmp_path, f"A={jump.url.replace('/v1', '/metrics')}")
    assert done.returncode == 0, done.stderr
    a = json.loads(done.stdout)["races"][0]["lanes"]["A"]
    assert a["energy_dropped"] >= 1 and "dropped" in (a["energy_note"] or a["energy_reason"] or ""), a
    assert a["energy_j"] is None or a["energy_j"] < 1000, a  # a 16-token race on one GB10: joules, not 1e12
    assert a["gpu_power_w_mean"] is None or a["gpu_power_w_mean"] < 5000, a
    assert a["tokens_per_joule"] is None or a["tokens_per_joule"] > 0, a


def test_a_recorded_counter_from_0_to_1e18_mj_across_the_race_is_reported_with_a_word(tmp_path, demo_race):
    """Row 6, end to end: a recording whose energy counter went from 0 to 1e18 mJ during the race made the
    report show 1.0e15 J and 2.4e16 W without a word."""
    lines = demo_race[0].read_bytes().splitlines()
    objs = [json.loads(line) for line in lines[1:]]
    race_req = next(o["req"] for o in objs if o["kind"] == "request" and o.get("lane") == "A"
                    and o["data"].get("purpose") == "race")
    span = [o["t"] for o in objs if o.get("req") == race_req]
    mid = (min(span) + max(span)) // 2
    # the jump is placed by time, in the middle of lane A's race request (inside the race's window), not by
    # sample count: how many samples fall before and after the race depends on how busy the machine was.  The
    # counter keeps rising as it did (from 0, and from just under 1e18 after the jump: a reading over 1e18 mJ is
    # out of range and never read at all; a counter that stops moving reads as a cached source, its change
    # placed between two readings, perhaps outside the race)
    gpu = [i for i, line in enumerate(lines) if b'"kind":"gpu"' in line and b'"lane":"A"' in line
           and json.loads(line)["data"].get("ok")]
    first = json.loads(lines[gpu[0]])["data"]["energy_mj"]
    after = [i for i in gpu if json.loads(lines[i])["t"] > mid]
    assert after and len(after) < len(gpu), "lane A's telemetry has a sample on both sides of its race request"
    for i in gpu:
        obj = json.loads(lines[i])
        obj["data"]["energy_mj"] = obj["data"]["energy_mj"] - first + (1e18 - 1e9 if i in after else 0.0)
        lines[i] = json.dumps(obj).encode()
    rec = tmp_path / "jump.jsonl"
    rec.write_bytes(b"\n".join(lines) + b"\n")
    out = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    from lanemon.results.analysis import Analysis

    lane = msgspec.json.decode(out.stdout, type=Analysis).race.lanes["A"]  # the report's JSON, read by its contract
    assert lane.energy_j is None or lane.energy_j < 1000, lane
    assert lane.gpu_power_w_mean is None or lane.gpu_power_w_mean < 5000, lane
    assert lane.energy_dropped >= 1 and "dropped" in (lane.energy_note or lane.energy_reason or ""), lane
    md = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "md"],
                        capture_output=True, text=True, timeout=60)
    assert md.returncode == 0 and not re.search(r"\de\+1[0-9]", md.stdout), md.stdout[-2000:]


# ------------------------------------------------------------------------------------------ row 8


@pytest.fixture(scope="module")
def huge_counter_recording(demo_race):
    """A demo race recording whose first server_metrics scrape says ``requests_success_total`` is 10^400."""
    good = demo_race[0]
    lines = good.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"kind":"server_metrics"' in line and b'"ok":true' in line)
    obj = json.loads(lines[at])
    obj["data"]["requests_success_total"] = 10 ** 400  # json writes it as 401 digits
    lines[at] = json.dumps(obj).encode()
    bad = good.with_name("huge.jsonl")
    bad.write_bytes(b"\n".join(lines) + b"\n")
    return good, bad, at + 1


@pytest.mark.parametrize("fmt", ["md", "html", "json", "csv"])
def test_a_counter_of_ten_to_the_400_is_a_skipped_line_not_a_traceback(huge_counter_recording, fmt):
    """Row 8: ``report`` (all four formats) crashed with an OverflowError traceback, exit 1."""
    _, bad, lineno = huge_counter_recording
    out = subprocess.run([sys.executable, "-m", "lanemon", "report", str(bad), "--format", fmt],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert f"line {lineno}: skipped (a number past float's range at `$.data.requests_success_total`)" in out.stderr


def test_compare_reads_a_recording_with_a_counter_of_ten_to_the_400(huge_counter_recording):
    good, bad, lineno = huge_counter_recording
    out = subprocess.run([sys.executable, "-m", "lanemon", "compare", str(good), str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert f"line {lineno}: skipped" in out.stderr


def test_a_big_integer_in_a_fold_is_not_a_crash():
    """The live folds read /metrics figures through the same rule (math.isfinite(10**400) raises)."""
    from lanemon.folds.series import SeriesState

    series = SeriesState()
    series.apply(Event(0, schema.LANE, "A", None, {"name": "A", "url": "http://x/v1"}))
    series.apply(Event(NS, schema.SERVER_METRICS, "A", None, {"ok": True, "running": 10 ** 400, "waiting": 2}))
    assert series.lane("A").server[-1][1] == {"waiting": 2.0}


# ------------------------------------------------------------------------------------------ row 14


def test_a_200000_gpu_endpoint_costs_one_bounded_reading():
    """Row 14: 200,000 GPUs in 8 MiB took a race 26 s and 215 MB; now the body is refused past 2 MiB."""
    body = ht.many_gpus()
    assert 7 << 20 < len(body) <= 8 << 20
    data, events, took = scrape(lambda req: ht.text(body))
    assert not data.ok and "larger than" in data.message and took < 3, (data, took)
    from lanemon.folds.dashboard import GpuState, gpu_text

    gpu = GpuState()
    gpu.apply(events[0].t, events[0].data)
    assert gpu_text(gpu).startswith("failing: ") and "larger than 2 MiB" in gpu_text(gpu)  # not "unreachable"


def test_live_applies_its_telemetry_flag(tmp_path):
    """``lanemon live --telemetry A=...`` was accepted and silently ignored (the issue's endpoints were read
    through lanes.toml)."""
    import argparse

    from lanemon.cli.live import _load

    (tmp_path / "lanes.toml").write_text("")
    config = _load(argparse.Namespace(config=str(tmp_path / "lanes.toml"), lane=["A=http://127.0.0.1:1/v1"],
                                      telemetry=["A=http://127.0.0.1:2/metrics"], cost=["A=2"]))
    assert config.lanes[0].telemetry == "http://127.0.0.1:2/metrics" and config.lanes[0].cost_per_hour == 2


def test_many_gpus_under_the_body_cap_are_read_in_milliseconds_and_kept_to_64():
    tracemalloc.start()
    try:
        data, _, took = scrape(lambda req: ht.text(ht.many_gpus(45_000)))  # 1.9 MB
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert data.ok and data.gpu_count == 64 and data.power_w == 640.0, data.message
    assert peak < 24 << 20 and took < 5, (peak, took)  # under tracemalloc, on 2 shared cores


def test_a_1_mb_label_is_not_read():
    """Row 14: one 1 MB label cost 180 MB."""
    tracemalloc.start()
    try:
        data, _, _ = scrape(lambda req: ht.text(ht.big_label() + ht.SANE.encode()))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert data.ok and data.gpu_count == 1 and data.dropped == 1, data
    assert peak < 12 << 20, peak


def test_a_dripping_endpoint_never_holds_up_the_race(tmp_path, demo_race):
    """Row 14: a race of 1.4 s took 51.9 s against a telemetry endpoint that drips."""
    base_s = demo_race[1]
    with HostileServer(lambda req: ht.dripping()) as srv:
        done, took, _ = race(tmp_path, f"A={srv.url.replace('/v1', '/metrics')}")
    assert done.returncode == 0, done.stderr
    lane = json.loads(done.stdout)["races"][0]["lanes"]["A"]
    assert lane["outcome"] == "complete" and lane["energy_j"] is None
    assert "GPU telemetry" in lane["energy_reason"], lane["energy_reason"]
    assert took < base_s + 6, (took, base_s)


# ------------------------------------------------------------------------------------------ row 15


@pytest.mark.parametrize("handler, words", [(ht.redirect, "307 -> http://evil.example:9400/metrics"),
                                            (ht.bomb, "gzip body")])
def test_a_telemetry_error_is_the_telemetry_endpoints_not_the_lanes(handler, words):
    data, _, _ = scrape(handler)
    assert not data.ok and words in data.message, data
    assert data.message.startswith("GPU telemetry") and not re.search(r"\blane\b", data.message), data
    assert "the telemetry endpoint" in data.message or "GPU telemetry answered" in data.message


def test_a_race_names_the_telemetry_failure(tmp_path):
    """Row 15: the race said "no GPU telemetry for this lane" when its telemetry endpoint redirected."""
    with HostileServer(ht.redirect) as red, HostileServer(ht.bomb) as bomb:
        done, _, _ = race(tmp_path, f"A={red.url.replace('/v1', '/metrics')}",
                          f"B={bomb.url.replace('/v1', '/metrics')}")
    assert done.returncode == 0, done.stderr
    lanes = json.loads(done.stdout)["races"][0]["lanes"]
    assert lanes["A"]["energy_reason"].startswith("GPU telemetry answered 307 -> http://evil.example"), lanes["A"]
    assert lanes["B"]["energy_reason"].startswith("GPU telemetry: the telemetry endpoint's gzip body"), lanes["B"]
    assert "a compression bomb" in lanes["B"]["energy_reason"] or "more than 2 MiB" in lanes["B"]["energy_reason"]


# ------------------------------------------------------------------------------------------ /metrics


def test_metrics_with_infinities_and_overflowing_sums_keep_the_rest_and_count_them():
    """A lane's /metrics saying ``+Inf`` requests running failed the whole scrape (``int(inf)``: OverflowError),
    and two ranks of 1e308 waiting summed to inf."""
    from lanemon.client.prom import MetricsScraper, scrape_data

    body = ("vllm:num_requests_running +Inf\nvllm:num_requests_waiting{engine=\"0\"} 1e308\n"
            "vllm:num_requests_waiting{engine=\"1\"} 1e308\nvllm:generation_tokens_total 1e300\n"
            "vllm:prompt_tokens_total 120\nvllm:kv_cache_usage_perc 0.5\n")
    s = MetricsScraper("A", "http://x/v1", None, clock=Clock(), emit=lambda e: None)  # type: ignore[arg-type]
    data = scrape_data(s._read(body, 0, 0.01))  # as the event holds it
    assert data["ok"] and data["prompt_tokens_total"] == 120 and data["kv_usage"] == 0.5, data
    assert "running" not in data and "waiting" not in data and "generation_tokens_total" not in data
    assert data["dropped"] == 3
    json.dumps(data, allow_nan=False)  # every number left is one a recording can hold
