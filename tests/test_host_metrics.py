"""Host panel and server gauges: psutil sampling, the state fold, recording round trip,
a pilot against the simulated lanes, and one snapshot from fixed events."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import pytest
from textual.widgets import Label, Sparkline

from lanemon.config import LaneConfig, ProbeConfig
from lanemon.client.host import HostSampler
from lanemon import events as schema
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import Recording
from lanemon.events import Event
from lanemon.sessions.sources import LiveSession
from lanemon.sim.server import SimThread
from lanemon.folds.dashboard import SessionState
from lanemon.ui import format as fmt
from lanemon.ui.app import LanemonApp, make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource, sample_events
from lanemon.ui.widgets.host_panel import HostPanel, rate, size
from lanemon.ui.widgets.server_gauges import ServerGauges, bar

MS = 1_000_000
SNAP_PATH = Path("recordings/20260503-101500-demo.jsonl")


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget) -> str:
    return widget.visual.plain


def metric_events() -> list[Event]:
    """Fixed server_metrics (A in vLLM naming, B in SGLang naming) and host samples, every 2 s."""
    evs: list[Event] = []
    gen_a = [0, 130, 148, 151, 140, 236, 281, 260, 149, 150, 152, 147]
    gen_b = [0, 120, 134, 250, 301, 330, 128, 131, 133, 300, 420, 136]
    run_a = [0, 1, 1, 1, 1, 2, 4, 3, 1, 1, 1, 1]
    run_b = [0, 1, 1, 2, 3, 4, 1, 1, 1, 3, 6, 1]
    for i in range(12):
        t = 1_000 * MS + i * 2_000 * MS
        evs.append(Event(t, schema.SERVER_METRICS, "A", None, {
            "ok": True, "engine": "vllm", "latency_s": 0.003, "running": run_a[i], "waiting": 0,
            "kv_usage": 0.02 * run_a[i], "prompt_tokens_total": 24.0 * i, "generation_tokens_total": 64.0 * i,
            **({"gen_tok_s": float(gen_a[i]), "prompt_tok_s": 12.0 + i} if i else {})}))
        evs.append(Event(t + 5 * MS, schema.SERVER_METRICS, "B", None, {
            "ok": True, "engine": "sglang", "latency_s": 0.004, "running": run_b[i], "waiting": max(0, run_b[i] - 4),
            "kv_usage": 0.15 * run_b[i], "prompt_tokens_total": 24.0 * i, "generation_tokens_total": 64.0 * i,
            "prefix_hit_rate_gauge": 0.8, "gen_throughput": 134.0,
            **({"gen_tok_s": float(gen_b[i]), "prompt_tok_s": 12.0 + i, "prefix_hit_rate": 0.5 + 0.03 * i}
               if i else {})}))
        evs.append(Event(t + 500 * MS, schema.HOST, None, None, {
            "cpu_pct": [12, 35, 48, 22, 90, 64, 30, 18, 25, 71, 40, 33][i], "cpus": 2, "load1": 0.75,
            "mem_total": 25_275_973_632, "mem_used": 6_100_000_000 + i * 20_000_000, "mem_pct": 24.1 + 0.1 * i,
            "net_rx_Bps": 150_000.0 + 20_000 * i, "net_tx_Bps": 90_000.0 + 5_000 * i,
            "proc_cpu_pct": 8.0, "proc_rss": 89_128_960}))
    return evs


def all_events() -> list[Event]:
    return sorted(sample_events() + metric_events(), key=lambda e: e.t)


# -- pure pieces ------------------------------------------------------------------


def test_host_sampler_reads_this_machine():
    sampler = HostSampler()
    time.sleep(0.05)
    d = sampler.sample()
    assert 0.0 <= d.cpu_pct <= 100.0 and d.cpus >= 1
    assert 0 < d.mem_used <= d.mem_total and 0 < d.mem_pct <= 100
    assert d.net_rx_Bps >= 0 and d.net_tx_Bps >= 0
    assert d.proc_rss > 1_000_000


def test_state_folds_host_and_server_metrics():
    st = SessionState()
    for ev in metric_events():
        st.apply(ev)
    assert st.host.samples == 12 and list(st.host.cpu_pct)[-1] == 33
    a, b = st.lane("A").server, st.lane("B").server
    assert a.available and a.engine == "vllm" and len(a.gen_tok_s) == 11 and not a.hit_rate
    assert b.engine == "sglang" and b.last["running"] == 1 and list(b.hit_rate)[-1] == pytest.approx(0.83)
    st.apply(Event(99 * 10**9, schema.SERVER_METRICS, "B", None,
                   {"ok": False, "cls": "connect", "message": "connection refused"}))
    assert b.error == "connection refused" and b.available and b.last["running"] == 1  # last values kept


def test_recorded_metrics_replay_to_the_same_state(tmp_path):
    events = all_events()
    with Recorder(tmp_path / "s.jsonl", make_header("demo", msgspec.to_builtins(SAMPLE_LANES))) as rec:
        for ev in events:
            rec(ev)
    direct, replayed = SessionState(), SessionState()
    for ev in events:
        direct.apply(ev)
    for ev in Recording(rec.path).events():
        replayed.apply(ev)
    assert replayed.host == direct.host
    for name in ("A", "B"):
        assert replayed.lane(name).server == direct.lane(name).server


def test_formatting_helpers():
    assert bar(0.5, 8) == "████    " and bar(1.0, 4) == "████" and bar(0.0, 3) == "   "
    assert bar(0.03, 4) == "▏   " and bar(0.06, 4) == "▎   "
    assert size(89_128_960) == "85.0 MiB" and size(25_275_973_632) == "23.5 GiB" and size(512) == "512 B"
    assert rate(1_250_000) == "1.2 MB/s"


# -- pilots -----------------------------------------------------------------------


async def test_dashboard_against_simulated_lanes_host_toggle_and_server_gauges():
    with SimThread("tensorfold-exl3", time_scale=0.05) as a, SimThread("sglang-native", time_scale=0.05) as b:
        session = LiveSession([LaneConfig("A", a.base_url), LaneConfig("B", b.base_url)],
                              probe=ProbeConfig(interval=0.05, max_tokens=24), mode="demo",
                              metrics_interval=0.15, host_interval=0.15)
        app = make_app(session)
        async with app.run_test(size=(120, 40)) as pilot:
            host = app.screen.query_one(HostPanel)
            assert not host.display or not host.shown  # hidden by default
            assert host.region.height == 0
            deadline = time.monotonic() + 15
            st = app.state
            while time.monotonic() < deadline:
                if (st.host.samples >= 2 and all(len(st.lane(n).server.gen_tok_s) >= 3 for n in "AB")
                        and st.lane("A").requests_ok >= 2 and st.lane("B").requests_ok >= 2):
                    break
                await pilot.pause(0.1)
            else:
                pytest.fail("no server metrics / host samples from the simulated lanes")
            session.paused = True  # freeze the state (scrapes and probes in flight finish meanwhile)
            await pilot.pause(0.5)
            app.redraw(force=True)
            await pilot.pause()
            for name, engine, sim in (("A", "vLLM", "tensorfold-exl3"), ("B", "SGLang", "sglang-native")):
                gauges = app.screen.query_one(f"#lane-{name} ServerGauges", ServerGauges)
                server = st.lane(name).server
                assert gauges.display and gauges.region.height >= 3  # title, run/wait + KV, gen + prompt
                # the engine the lane simulates, and whose /metrics names it speaks (issue 40 item 4)
                title = plain(gauges.query_one("#srv-title", Label))
                assert title.startswith(f"server  {sim} (sim)")
                assert f"(sim, {engine} /metrics)" in title or len(title) + len(f", {engine} /metrics  TTFT 999 ms") > gauges.size.width
                assert plain(gauges.query_one("#srv-gen", Label)) == f"gen {fmt.tok_s(server.last.get('gen_tok_s'))}"
                assert list(gauges.query_one("#srv-gen-spark", Sparkline).data) == list(server.gen_tok_s)
                assert f"run {server.last['running']}" in plain(gauges.query_one("#srv-run", Label))
                assert sum(server.gen_tok_s) > 0 and server.last["generation_tokens_total"] > 0
            # the simulator counts what lanemon received: B's counters agree with lanemon's own usage blocks
            assert "prefix hit" in plain(app.screen.query_one("#lane-B #srv-title", Label))
            assert "prefix hit" not in plain(app.screen.query_one("#lane-A #srv-title", Label))

            await pilot.press("h")
            await pilot.pause()
            assert host.shown and host.region.height == 4
            assert plain(host.query_one("#host-cpu", Label)).startswith("CPU ")
            assert "%" in plain(host.query_one("#host-mem", Label))
            assert plain(host.query_one("#host-net", Label)).startswith("net ↓ ")
            assert list(host.query_one("#host-cpu-spark", Sparkline).data) == list(st.host.cpu_pct)
            await pilot.press("h")
            await pilot.pause()
            assert not host.shown and host.region.height == 0
            await pilot.press("q")
        session.close()


async def test_host_key_is_dashboard_only_and_replay_shows_recorded_samples():
    source = ScriptedSource(all_events(), mode="replay", speed=float("inf"), recording_path=SNAP_PATH)
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.check_action("toggle_host", ()) is True
        await pilot.press("h")
        app.redraw(force=True)
        await pilot.pause()
        host = app.screen.query_one(HostPanel)
        assert host.shown
        assert plain(host.query_one("#host-cpu", Label)) == "CPU 33% · 2 cpus · load 0.75"
        assert list(host.query_one("#host-cpu-spark", Sparkline).data) == [12, 35, 48, 22, 90, 64, 30, 18, 25,
                                                                            71, 40, 33]
        gauges = app.screen.query_one("#lane-B ServerGauges", ServerGauges)
        assert plain(gauges.query_one("#srv-kv-val", Label)) == "15%"
        assert plain(gauges.query_one("#srv-run", Label)) == "run 1  wait 0"


async def test_lane_without_metrics_shows_no_gauges():
    app = make_app(ScriptedSource(sample_events() + [
        Event(300 * MS, schema.SERVER_METRICS, "A", None,
              {"ok": False, "available": False, "status": 404, "cls": "http", "message": "no /metrics (HTTP 404)"})],
        mode="live", hold=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        app.redraw(force=True)
        await pilot.pause()
        for name in "AB":
            assert app.screen.query_one(f"#lane-{name} ServerGauges").region.height == 0
        assert "404" not in plain(app.screen.query_one("#lane-A #errors"))


# -- snapshot ---------------------------------------------------------------------


def test_snapshot_dashboard_with_server_gauges_and_host_panel(snap_compare):
    async def run_before(pilot) -> None:
        app: LanemonApp = pilot.app
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("h")
        app.redraw(force=True)
        await pilot.pause()

    app = make_app(ScriptedSource(all_events(), recording_path=SNAP_PATH))
    assert snap_compare(app, terminal_size=(120, 42), run_before=run_before)
