"""The monitor's fold (folds/monitor.py), its exporter text (monitor/exporter.py) and the typed summary
(measure/summary.py), on scripted events: only complete requests lanemon was not starved during feed latency."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.exposition import generate_latest

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.monitor import MonitorState
from lanemon.measure.alerts import AlertEngine, parse_rule
from lanemon.measure.summary import SummaryFold
from lanemon.monitor.exporter import ExporterServer, make_registry

MS = 1_000_000
S = 1_000_000_000


def _request(lane, req, sent, ttft_ms, tokens=10, step_ms=10, finish="length"):
    evs = [Event(sent, schema.REQUEST, lane, req, {"endpoint": "completions", "purpose": "probe"})]
    for i in range(tokens):
        evs.append(Event(sent + ttft_ms * MS + i * step_ms * MS, schema.TOKEN, lane, req, {"text": "x", "n": 1}))
    end = sent + ttft_ms * MS + tokens * step_ms * MS
    evs.append(Event(end, schema.USAGE, lane, req, {"prompt_tokens": 5, "completion_tokens": tokens}))
    evs.append(Event(end, schema.DONE, lane, req, {"finish_reason": finish}))
    return evs


def _error(lane, req, sent):
    return [Event(sent, schema.REQUEST, lane, req, {"endpoint": "completions", "purpose": "probe"}),
            Event(sent + 5 * MS, schema.ERROR, lane, req, {"cls": "http", "message": "HTTP 503", "status": 503})]


def _load(t, t0, bound):
    return Event(t, schema.CLIENT_LOAD, None, None, {"t0": t0, "lag_ms": 40.0 if bound else 1.0, "bound": bound})


def _session():
    """Lane A: 3 clean requests (TTFT 100, 200, 300 ms), one while lanemon was starved (TTFT 900 ms), one
    HTTP error; the engine's /metrics with KV use and preemptions."""
    evs = [Event(0, schema.PROBE, "A", None, {"ok": True, "model": "m1", "latency_s": 0.01}),
           Event(1, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "kv_usage": 0.5,
                                                        "waiting": 2, "running": 1, "preemptions_total": 3})]
    evs += _request("A", "r1", 1 * S, 100)
    evs += _request("A", "r2", 2 * S, 200)
    evs += _request("A", "r3", 3 * S, 300)
    evs += _request("A", "r4", 4 * S, 900)  # starved: client_load bound over it
    evs += _error("A", "r5", 5 * S)
    evs += [_load(int(3.9 * S), 0, False), _load(int(4.5 * S), int(3.9 * S), True), _load(6 * S, int(4.5 * S), False)]
    evs.append(Event(6 * S, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "kv_usage": 0.93,
                                                                "waiting": 7, "running": 4, "preemptions_total": 8}))
    return sorted(evs, key=lambda e: e.t)


def _fold(slo=None):
    st = MonitorState([("A", "http://a/v1", None)], window_s=60, slo=slo)
    for ev in _session():
        st.apply(ev)
    return st


def test_figures_count_only_clean_complete_requests():
    st = _fold(slo={"ttft": 0.25})
    f = st.figures(7 * S)["A"]
    assert f["ttft_p50"] == pytest.approx(0.2)  # 0.1, 0.2, 0.3 only
    assert f["ttft_p99"] == pytest.approx(0.3)  # a p99 over 3 samples is their max (the dashboard's rule)
    assert f["up"] == 1.0 and f["down"] == 0.0
    assert f["requests"] == 5 and f["error_share"] == pytest.approx(1 / 5)
    assert f["slo_attainment"] == pytest.approx(2 / 4)  # r1, r2 of r1-r3 + the error; r4 (starved) not judged
    assert f["goodput"] == pytest.approx(2 / 7)
    assert (f["kv_usage"], f["waiting"], f["running"], f["preemptions"]) == (0.93, 7.0, 4.0, 5.0)
    ttft, tpot = st.hists["A"]
    assert ttft.n == 3 and ttft.total == pytest.approx(0.6)
    assert tpot.n == 3 and tpot.total == pytest.approx(0.03)  # 10 ms per token after the first
    assert st.figures(7 * S)["A"]["ttft_p50"] is not None
    assert st.figures(200 * S)["A"]["ttft_p50"] is None  # nothing in the window: no figure, no alert


def test_exporter_text_has_the_families_labelled_by_lane_and_model():
    st = _fold(slo={"ttft": 0.25})
    eng = AlertEngine([parse_rule("kv_usage > 90%", severity="critical")])
    eng.evaluate(7 * S, st.figures(7 * S))
    text = generate_latest(make_registry(st, eng)).decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    labels = {"lane": "A"}

    def value(fam, name, **extra):
        return next(s.value for s in fams[fam].samples if s.name == name and s.labels == {**labels, **extra})

    assert fams["lanemon_ttft_seconds"].type == "histogram"
    assert value("lanemon_ttft_seconds", "lanemon_ttft_seconds_count") == 3
    assert value("lanemon_ttft_seconds", "lanemon_ttft_seconds_bucket", le="0.2") == 2  # 0.1, 0.2 (le is <=)
    assert value("lanemon_ttft_seconds", "lanemon_ttft_seconds_bucket", le="+Inf") == 3
    assert value("lanemon_tpot_seconds", "lanemon_tpot_seconds_count") == 3
    assert value("lanemon_requests", "lanemon_requests_total", outcome="complete") == 4
    assert value("lanemon_requests", "lanemon_requests_total", outcome="error") == 1
    assert value("lanemon_lane_up", "lanemon_lane_up") == 1
    assert value("lanemon_lane_info", "lanemon_lane_info", model="m1") == 1
    assert value("lanemon_window_error_ratio", "lanemon_window_error_ratio") == pytest.approx(1 / 5)
    assert value("lanemon_engine_kv_cache_usage_ratio", "lanemon_engine_kv_cache_usage_ratio") == 0.93
    assert value("lanemon_engine_requests_waiting", "lanemon_engine_requests_waiting") == 7
    assert value("lanemon_slo_attainment_ratio", "lanemon_slo_attainment_ratio") == pytest.approx(0.5)
    assert value("lanemon_alerts_firing", "lanemon_alerts_firing", severity="critical") == 1
    assert value("lanemon_alerts_firing", "lanemon_alerts_firing", severity="warning") == 0


def test_the_exporter_server_answers_metrics_and_refuses_the_rest():
    async def go():
        srv = ExporterServer("127.0.0.1", 0, lambda: b"lanemon_x 1\n")
        await srv.start()
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{srv.port}", timeout=5) as c:
                ok = await c.get("/metrics")
                missing = await c.get("/secrets")
                post = await c.post("/metrics", content=b"x")
                huge = await c.get("/metrics", headers={"x-big": "y" * 20_000})
            return ok, missing, post, huge, srv.scrapes
        finally:
            await srv.close()

    ok, missing, post, huge, scrapes = asyncio.run(go())
    assert ok.status_code == 200 and ok.text == "lanemon_x 1\n" and ok.headers["content-type"].startswith("text/plain")
    assert (missing.status_code, post.status_code, huge.status_code) == (404, 405, 431)
    assert scrapes == 1


def test_summary_rows_follow_the_same_rules():
    header = {"command": "live", "created": "2026-01-01T00:00:00+00:00", "wall_t0_s": 1.0, "lanemon": "9",
              "slo": {"ttft": 0.25}}
    [row] = SummaryFold(header, session="s.jsonl").feed(_session()).summaries()
    assert (row.lane, row.workload, row.model, row.engine, row.requests, row.complete, row.error) == \
        ("A", "probe", "m1", "vllm", 5, 4, 1)
    assert row.client_bound == 1 and row.ttft_p50 == pytest.approx(0.2) and row.latency_n == 3
    assert row.ttft_p90 is None and row.ttft_max == pytest.approx(0.3)  # 3 samples carry no p90
    assert row.slo == {"ttft": 0.25} and row.slo_attainment == pytest.approx(0.5)
    assert not row.simulated and row.lanemon_version == "9" and row.started_s == 1.0


def test_a_shift_is_judged_against_the_lanes_own_spread():
    from lanemon.measure.summary import shift

    assert shift([0.2, 0.21]) is None  # too few earlier sessions
    assert shift([0.2, 0.21, 0.19, None]) is None  # the latest has no figure
    steady = shift([0.20, 0.22, 0.18, 0.21, 0.205])
    assert steady is not None and not steady.shifted and steady.n == 4
    slower = shift([0.20, 0.22, 0.18, 0.21, 0.30])
    assert slower is not None and slower.shifted and slower.change == pytest.approx(0.3 / 0.205 - 1)
    noisy = shift([0.1, 0.3, 0.15, 0.28, 0.30])  # a lane that always varied that much: no shift
    assert noisy is not None and not noisy.shifted
    flat = shift([0.2, 0.2, 0.2, 0.204])  # no spread at all: 5 % of the median is the floor
    assert flat is not None and not flat.shifted and shift([0.2, 0.2, 0.2, 0.22]).shifted


def test_the_over_saturation_flag():
    from lanemon.folds.monitor import oversaturated

    assert oversaturated((1, 4), (0.2, 0.3), (500, 520)) is True  # queue up, TTFT +50 %, throughput flat
    assert oversaturated((1, 4), (0.2, 0.3), (500, 700)) is False  # throughput still grows: not saturated
    assert oversaturated((1, 1.5), (0.2, 0.3), (500, 500)) is False  # the queue did not grow
    assert oversaturated((1, 4), (0.2, 0.22), (500, 500)) is False  # TTFT barely moved
    assert oversaturated(None, (0.2, 0.3), (500, 500)) is None  # no /metrics: no flag
    st = MonitorState([("A", "u", None)], window_s=10)
    evs = []
    for i, (waiting, tok_s, ttft_ms) in enumerate([(0, 500, 100), (1, 505, 110), (4, 500, 200), (6, 498, 220)]):
        t = (i * 2 + 1) * S
        evs.append(Event(t, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "waiting": waiting,
                                                                "gen_tok_s": tok_s}))
        evs += _request("A", f"r{i}", t, ttft_ms)
    for ev in sorted(evs, key=lambda e: e.t):
        st.apply(ev)
    assert st.figures(10 * S)["A"]["oversaturated"] == 1.0


def test_breaching_requests_are_the_judged_misses():
    from lanemon.folds.monitor import breaches

    st = _fold(slo={"ttft": 0.25})
    ends = breaches(st.series, "A", 0, 7 * S, {"ttft": 0.25})
    # r3 (TTFT 300 ms) and the error r5 missed; r4 ran while lanemon was starved: not judged
    assert ends == [3 * S + 400 * MS, 5 * S + 5 * MS]


def test_the_dashboard_badge_says_saturated_from_the_same_function():
    """The dashboard reads folds/monitor.saturation over its chart window from the app's series (the alert
    rules and the exporter read the same function over theirs)."""
    from lanemon.folds.monitor import saturation
    from lanemon.folds.series import SeriesState

    series = SeriesState(["A"])
    evs = []
    for i, (waiting, tok_s, ttft_ms) in enumerate([(0, 500, 100), (1, 505, 110), (4, 500, 200), (6, 498, 220)]):
        t = (i * 2 + 1) * S
        evs.append(Event(t, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "waiting": waiting,
                                                                "gen_tok_s": tok_s}))
        evs += _request("A", f"r{i}", t, ttft_ms)
    st = MonitorState([("A", "u", None)], window_s=10)
    for ev in sorted(evs, key=lambda e: e.t):
        st.apply(ev)
    assert saturation(st.series, "A", 0, 10 * S) == 1.0 == st.figures(10 * S)["A"]["oversaturated"]
    assert saturation(st.series, "A", 0, 4 * S) == 0.0  # the first two scrapes: TTFT 100 -> 110 ms barely moved
    assert saturation(series, "A", 0, 10 * S) is None  # nothing folded: no figures, no flag


async def test_a_saturated_lane_says_so_on_its_badge():
    from textual.widgets import Label

    from lanemon.ui.app import make_app
    from lanemon.ui.sample import ScriptedSource

    evs = [Event(1, schema.PROBE, "A", None, {"ok": True, "latency_s": 0.002, "models": ["m"]}),
           Event(2, schema.PROBE, "B", None, {"ok": True, "latency_s": 0.002, "models": ["m"]})]
    for lane, queue in (("A", [0, 1, 4, 6]), ("B", [0, 0, 0, 0])):  # B: the same TTFT rise, no queue
        for i, (waiting, ttft_ms) in enumerate(zip(queue, (100, 110, 200, 220))):
            t = (i * 2 + 1) * S
            evs.append(Event(t, schema.SERVER_METRICS, lane, None, {"ok": True, "engine": "vllm", "waiting": waiting,
                                                                    "gen_tok_s": 500}))
            evs += _request(lane, f"{lane}{i}", t, ttft_ms)
    app = make_app(ScriptedSource(sorted(evs, key=lambda e: e.t)))
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(200):  # the scripted events folded (not a timing bound: it stops as soon as they are)
            if app.source.finished and app.state.last_t >= 7 * S:
                break
            await pilot.pause(0.02)
        app.redraw(force=True)
        await pilot.pause()
        assert str(app.screen.query_one("#lane-A #badge", Label).visual.plain) == "SATURATED"
        assert str(app.screen.query_one("#lane-B #badge", Label).visual.plain).startswith("UP")
