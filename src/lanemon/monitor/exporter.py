"""The Prometheus exporter: a custom collector over :class:`~lanemon.folds.monitor.MonitorState` in a private
registry (docs/MONITOR.md, "The exporter"); served by monitor/metrics_server.py, off the measuring loop.

Every series is labelled by ``lane`` alone, so a lane keeps its identity whatever its model does (down,
unknown, changed): the model id is the value of ``lanemon_lane_info{lane, model}`` (join on ``lane``), at
most :data:`~lanemon.folds.monitor.MAX_MODEL_IDS` distinct ids per lane (further ones read ``(other)``, and
``lanemon_lane_model_changes_total`` counts every change).  The families are :data:`FAMILIES`: name, type,
unit and HELP, one place for all of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import generate_latest

from lanemon.folds.monitor import MonitorState
from lanemon.measure.alerts import SEVERITIES, AlertEngine
from lanemon.measure.records import OUTCOMES
from lanemon.monitor.metrics_server import CONTENT_TYPE, ExporterServer, exposure_warning

__all__ = ["FAMILIES", "MonitorCollector", "make_registry", "serve_monitor", "ExporterServer", "CONTENT_TYPE",
           "exposure_warning"]

LABEL_MAX = 200

_OUTCOME_FIELD = {"complete": "requests_ok", "error": "requests_err", "truncated": "requests_truncated",
                  "empty": "requests_empty"}

#: name (without ``_total`` for counters) -> (type, unit, HELP).  The unit is the name's suffix and is said
#: in the HELP text too (the 0.0.4 text format has no UNIT line).
FAMILIES: dict[str, tuple[str, str, str]] = {
    "lanemon_lane_info": ("gauge", "", "1 for the lane's current model id (label model; at most 4 distinct ids "
                          "per lane, further ones read (other))"),
    "lanemon_lane_model_changes": ("counter", "", "Times the lane's model id changed (GET /models)"),
    "lanemon_lane_up": ("gauge", "", "1 when the lane's latest health probe (GET /models) answered, else 0"),
    "lanemon_lane_down": ("counter", "", "Times the lane went down (a health probe failed, at the start or "
                          "after it answered)"),
    "lanemon_ttft_seconds": ("histogram", "seconds", "Time to first token of complete requests, seconds, as "
                             "lanemon measured it (client side; starved samples left out)"),
    "lanemon_tpot_seconds": ("histogram", "seconds", "Time per output token after the first of complete "
                             "requests, seconds (client side; bursts and starved samples left out)"),
    "lanemon_requests": ("counter", "", "Finished requests by outcome (complete, error, truncated, empty); "
                         "lanemon's own cancellations not counted"),
    "lanemon_output_tokens": ("counter", "tokens", "Generated tokens of complete requests lanemon was not "
                              "starved during, tokens"),
    "lanemon_slo_attainment_ratio": ("gauge", "ratio", "Share (0..1) of the window's requests meeting every "
                                     "SLO target (errors are misses)"),
    "lanemon_goodput_requests_per_second": ("gauge", "req/s", "Requests meeting every SLO target per second of "
                                            "the window, req/s"),
    "lanemon_oversaturated": ("gauge", "", "1 when over the window the engine's queue grew and TTFT rose while "
                              "its throughput stayed flat (needs the engine's /metrics)"),
    "lanemon_window_error_ratio": ("gauge", "ratio", "Share (0..1) of the window's finished requests that did not "
                                   "complete (error, truncated, empty)"),
    "lanemon_window_decode_tokens_per_second": ("gauge", "tok/s", "Median per-stream decode rate of the window's "
                                                "complete requests, tok/s"),
    "lanemon_engine_kv_cache_usage_ratio": ("gauge", "ratio", "The engine's KV-cache use (0..1) at its latest "
                                            "/metrics scrape (vLLM, SGLang)"),
    "lanemon_engine_requests_waiting": ("gauge", "requests", "Requests queued in the engine at its latest "
                                        "/metrics scrape, requests"),
    "lanemon_engine_requests_running": ("gauge", "requests", "Requests running in the engine at its latest "
                                        "/metrics scrape, requests"),
    "lanemon_gpu_power_watts": ("gauge", "watts", "The lane's GPUs' power draw at the latest telemetry reading, "
                                "summed over its GPUs, watts"),
    "lanemon_gpu_energy_joules": ("counter", "joules", "The lane's GPUs' energy counter at the latest reading "
                                  "(summed over its GPUs, since the driver loaded), joules"),
    "lanemon_window_gpu_energy_joules": ("gauge", "joules", "Energy the lane's GPUs used over the window "
                                         "(their counter, else power integrated), joules"),
    "lanemon_window_gpu_power_mean_watts": ("gauge", "watts", "Mean power of the lane's GPUs over the window "
                                            "(window energy / window), watts"),
    "lanemon_window_output_tokens_per_joule": ("gauge", "tok/J", "Output tokens lanemon received over the "
                                               "window per joule the lane's GPUs used over it, tok/J (a lane "
                                               "serving others too reads low)"),
    "lanemon_window_usd_per_million_output_tokens": ("gauge", "USD/1M tok", "The lane's cost_per_hour times "
                                                     "the window, per million output tokens lanemon received "
                                                     "over it, USD"),
    "lanemon_cost_usd_per_hour": ("gauge", "USD/h", "The lane's cost_per_hour (lanes.toml / --cost), USD per "
                                  "hour"),
    "lanemon_alerts_firing": ("gauge", "", "Alert rules firing now, by severity"),
    "lanemon_window_seconds": ("gauge", "seconds", "The sliding window the window figures are computed over, "
                               "seconds"),
}

_KINDS = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily, "histogram": HistogramMetricFamily}


def _family(name: str, labels: list[str] | None = None) -> Any:
    kind, _, text = FAMILIES[name]
    return _KINDS[kind](name, text, labels=["lane"] if labels is None else labels)


def _label(text: Any) -> str:
    return str(text if text is not None else "")[:LABEL_MAX]


class MonitorCollector:
    """A prometheus_client collector reading one MonitorState (and the alert engine) on every scrape."""

    def __init__(self, state: MonitorState, alerts: AlertEngine | None = None) -> None:
        self.state = state
        self.alerts = alerts

    def describe(self) -> list:
        return []  # generated on each scrape: nothing to check at registration

    def collect(self) -> Iterator[Any]:
        st = self.state
        fam = {name: _family(name) for name in FAMILIES}
        fam["lanemon_lane_info"] = _family("lanemon_lane_info", ["lane", "model"])
        fam["lanemon_requests"] = _family("lanemon_requests", ["lane", "outcome"])
        fam["lanemon_alerts_firing"] = _family("lanemon_alerts_firing", ["lane", "severity"])
        fam["lanemon_window_seconds"] = _family("lanemon_window_seconds", [])
        fam["lanemon_window_seconds"].add_metric([], st.window_s)
        figures = st.figures()
        firing = self.alerts.firing() if self.alerts is not None else []

        def put(name: str, lv: list[str], value: float | None) -> None:
            if value is not None:
                fam[name].add_metric(lv, value)

        for name, lane in list(st.lanes.items()):
            lv = [_label(name)]
            model = st.model_label(name)
            if model is not None:
                fam["lanemon_lane_info"].add_metric([*lv, _label(model)], 1.0)
            put("lanemon_lane_model_changes", lv, st.model_changes.get(name, 0))
            hists = st.hists.get(name)
            if hists is not None:
                for key, h in zip(("lanemon_ttft_seconds", "lanemon_tpot_seconds"), hists):
                    buckets = [("+Inf" if b == float("inf") else repr(b), c) for b, c in h.cumulative()]
                    fam[key].add_metric(lv, buckets, h.total)
            for outcome in OUTCOMES:
                fam["lanemon_requests"].add_metric([*lv, outcome], getattr(lane, _OUTCOME_FIELD[outcome]))
            put("lanemon_output_tokens", lv, st.output_tokens.get(name, 0))
            put("lanemon_lane_up", lv, None if lane.up is None else float(lane.up))
            put("lanemon_lane_down", lv, st.availability.downs.get(name, 0))
            figs = figures.get(name, {})
            put("lanemon_slo_attainment_ratio", lv, figs.get("slo_attainment"))
            put("lanemon_goodput_requests_per_second", lv, figs.get("goodput"))
            put("lanemon_oversaturated", lv, figs.get("oversaturated"))
            put("lanemon_window_error_ratio", lv, figs.get("error_share"))
            put("lanemon_window_decode_tokens_per_second", lv, figs.get("decode_tok_s"))
            put("lanemon_engine_kv_cache_usage_ratio", lv, figs.get("kv_usage"))
            put("lanemon_engine_requests_waiting", lv, figs.get("waiting"))
            put("lanemon_engine_requests_running", lv, figs.get("running"))
            readings = st.gpu.get(name)
            if readings:
                put("lanemon_gpu_power_watts", lv, readings[-1].power_w)
                put("lanemon_gpu_energy_joules", lv,
                    None if readings[-1].energy_mj is None else readings[-1].energy_mj / 1000.0)
                eng = st.energy_figures(name)
                put("lanemon_window_gpu_energy_joules", lv, eng["energy_j"])
                put("lanemon_window_gpu_power_mean_watts", lv, eng["gpu_power_w_mean"])
                put("lanemon_window_output_tokens_per_joule", lv, eng["tokens_per_joule"])
            if name in st.cost_per_hour:
                put("lanemon_cost_usd_per_hour", lv, st.cost_per_hour[name])
                put("lanemon_window_usd_per_million_output_tokens", lv,
                    st.energy_figures(name)["usd_per_1m_output_tokens"])
            if self.alerts is not None:
                per = {s: 0 for s in SEVERITIES}
                for rule, ln, _ in firing:
                    if ln == name:
                        per[rule.severity] += 1
                for sev, n in per.items():
                    fam["lanemon_alerts_firing"].add_metric([*lv, sev], n)
        yield from fam.values()


def make_registry(state: MonitorState, alerts: AlertEngine | None = None) -> CollectorRegistry:
    """A private registry holding only lanemon's collector (never prometheus_client's global one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MonitorCollector(state, alerts))
    return registry


def serve_monitor(state: MonitorState, alerts: AlertEngine | None, host: str, port: int) -> ExporterServer:
    """An (unstarted) exporter over ``state``; ``await server.start()`` binds it."""
    registry = make_registry(state, alerts)
    return ExporterServer(host, port, lambda: generate_latest(registry))
