"""The headless monitor says which lane went down, why, and when it came back (issue 40, item 1): one line on
stderr at once and on every change (escapes stripped), a ``lane_state`` event in the recording, exit 1 when a
lane was down during a ``--duration`` run, ``lanemon_lane_up`` and a down counter on the exporter, and the
alert rule ``down > 0 for ...`` firing on it.  Short runs: ``--duration`` of 2-4 s, probes every 0.1-0.2 s."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.monitor import Availability, MonitorState
from lanemon.monitor.exporter import make_registry
from lanemon.recording.schema import decode_event
from lanemon.sim.server import SimThread

from test_monitor_live import ANNOUNCE, Lanemon

S = 1_000_000_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _probe(t: int, ok: bool, message: str = "connection refused (http://x/v1/models)", lane: str = "D") -> Event:
    data = {"ok": True, "model": "m1", "latency_s": 0.01} if ok else {"ok": False, "cls": "connect",
                                                                      "message": message}
    return Event(t, schema.PROBE, lane, None, data)


def _events(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_availability_reports_each_change_once_with_its_reason_and_how_long():
    av = Availability()
    changes = [av.apply(e) for e in (_probe(1 * S, True), _probe(2 * S, False), _probe(3 * S, False),
                                       _probe(5 * S, True), _probe(6 * S, True))]
    assert changes[0] is None and changes[2] is None and changes[4] is None  # the first up and repeats: quiet
    down, up = changes[1], changes[3]
    assert (down.state, down.lane, down.cls, down.t_ns) == ("down", "D", "connect", 2 * S)
    assert "connection refused" in down.message
    assert (up.state, up.since_ns, up.down_s) == ("up", 2 * S, 3.0)
    assert av.downs == {"D": 1} and av.ever_down == {"D"}
    assert "lane D DOWN at +2.0s" in down.line() and "connection refused" in down.line()
    assert "lane D UP at +5.0s" in up.line() and "down 3.0 s" in up.line()
    # a first probe that fails is a change: the lane is down from the start
    assert Availability().apply(_probe(0, False)).state == "down"


def test_a_probe_is_read_as_its_type_and_one_that_does_not_fit_changes_nothing():
    """Availability decodes each probe into results.readings.ProbeResult: a failed one without a message is named by
    its status; a recording's probe whose fields are not what lanemon writes (an "ok" one listing numbers as
    models) says nothing about the lane, so a lane that is down stays down."""
    av = Availability()
    down = av.apply(Event(S, schema.PROBE, "D", None, {"ok": False, "cls": "http", "status": 503}))
    assert (down.state, down.cls, down.message) == ("down", "http", "503")
    assert av.apply(Event(2 * S, schema.PROBE, "D", None, {"ok": True, "models": [1, 2]})) is None
    assert av.apply(Event(3 * S, schema.PROBE, "D", None, {"ok": "yes"})) is None
    assert "D" in av.down_since
    assert av.apply(Event(4 * S, schema.PROBE, "D", None, {"ok": True, "models": ["m"]})).state == "up"


def test_a_down_line_is_stripped_of_terminal_escapes_and_the_event_fits_the_schema():
    av = Availability()
    ch = av.apply(_probe(S, False, message="refused \x1b]0;PWNED\x07\x1b[31mred\x1b[0m" + "x" * 5000))
    line = ch.line()
    assert "\x1b" not in line and "\x07" not in line and len(line) < 400
    ev = Event(S, schema.LANE_STATE, "D", None, ch.to_json())
    row = decode_event(json.dumps(ev.to_json_obj()).encode())
    assert row.kind == schema.LANE_STATE and row.data["state"] == "down" and schema.LANE_STATE in schema.ALL_KINDS


def test_the_exporter_counts_downs_and_keeps_the_lane_up_gauge():
    st = MonitorState([("D", "http://d/v1", None)])
    for ev in (_probe(1 * S, True), _probe(2 * S, False), _probe(3 * S, True), _probe(4 * S, False)):
        st.apply(ev)
    fams = {f.name: f for f in text_string_to_metric_families(generate_latest(make_registry(st)).decode())}
    assert [s.value for s in fams["lanemon_lane_up"].samples] == [0.0]
    assert [s.value for s in fams["lanemon_lane_down"].samples if s.name == "lanemon_lane_down_total"] == [2.0]


def test_headless_says_which_lane_is_down_records_it_fires_the_rule_and_exits_1(tmp_path):
    rec = tmp_path / "live.jsonl"
    port = _free_port()
    with SimThread("tensorfold-exl3", time_scale=0.1) as sim:
        proc = subprocess.run(
            [sys.executable, "-m", "lanemon", "live", "--headless", "--lane", f"A={sim.base_url}",
             "--lane", f"D=http://127.0.0.1:{port}/v1", "--interval", "0.1", "--duration", "2.5",
             "--alert", "down > 0 for 1s", "--record", str(rec)],
            capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr
    assert "lane D DOWN at +" in err and "connection refused" in err, err
    assert "lane A DOWN" not in err
    assert "alert FIRING [warning] lane D: down > 0 for 1s" in err
    assert "lane D was down" in err  # the closing line says what made the exit code 1
    states = [(e["lane"], e["data"]["state"]) for e in _events(rec) if e["kind"] == "lane_state"]
    assert states == [("D", "down")]


def test_headless_all_up_still_exits_0(tmp_path):
    with SimThread("tensorfold-exl3", time_scale=0.1) as sim:
        proc = subprocess.run(
            [sys.executable, "-m", "lanemon", "live", "--headless", "--lane", f"A={sim.base_url}", "--interval",
             "0.1", "--duration", "2", "--record", str(tmp_path / "r.jsonl")], capture_output=True, text=True,
            timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "DOWN" not in proc.stderr


def test_a_lane_that_comes_back_says_when_and_the_exporter_follows(tmp_path):
    rec = tmp_path / "live.jsonl"
    port = _free_port()
    lm = Lanemon("live", "--headless", "--serve-metrics", "127.0.0.1:0", "--lane", f"D=http://127.0.0.1:{port}/v1",
                 "--interval", "0.1", "--duration", "4", "--record", str(rec))
    try:
        _, m = lm.wait_for(ANNOUNCE.pattern, 30)
        lm.wait_for(r"lane D DOWN at \+", 15)
        text = httpx.get(m.group(1), timeout=5).text
        assert 'lanemon_lane_up{lane="D"' in text and text.count("lanemon_lane_up{") == 1
        assert any(line.startswith("lanemon_lane_up{") and line.endswith(" 0.0") for line in text.splitlines())
        with SimThread("tensorfold-exl3", port=port, time_scale=0.1):
            lm.wait_for(r"lane D UP at \+[0-9.]+s \(down [0-9.]+ s", 15)
            deadline = time.monotonic() + 5  # the exposition is rendered at most once a second: wait for it
            while time.monotonic() < deadline:
                text = httpx.get(m.group(1), timeout=5).text
                if any(ln.startswith("lanemon_lane_up{") and ln.endswith(" 1.0") for ln in text.splitlines()):
                    break
                time.sleep(0.2)
            assert any(line.startswith("lanemon_lane_up{") and line.endswith(" 1.0") for line in text.splitlines())
            deadline = time.monotonic() + 20
            while lm.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        code = lm.stop()
    assert code == 1  # it was down during the run
    states = [e["data"]["state"] for e in _events(rec) if e["kind"] == "lane_state"]
    assert states == ["down", "up"]
