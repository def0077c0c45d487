"""The Prometheus exporter: a custom collector over :class:`~lanemon.folds.monitor.MonitorState` in a private
registry (docs/MONITOR.md, "The exporter"); served by monitor/metrics_server.py, off the measuring loop.

Every series is labelled by ``lane`` alone, so a lane keeps its identity whatever its model does (down,
unknown, changed): the model id is the value of ``lanemon_lane_info{lane, model}`` (join on ``lane``), at
most :data:`~lanemon.folds.monitor.MAX_MODEL_IDS` distinct ids per lane (further ones read ``(other)``, and
``lanemon_lane_model_changes_total`` counts every change).  The families are :data:`FAMILIES`, named as the
metric catalogue (measure/catalogue.py) names them; their type, HELP and unit are the catalogue's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import generate_latest

from lanemon.folds.monitor import MonitorState
from lanemon.measure.alerts import SEVERITIES, AlertEngine
from lanemon.measure.catalogue import BY_PROMETHEUS
from lanemon.measure.records import OUTCOMES
from lanemon.monitor.metrics_server import CONTENT_TYPE, ExporterServer, exposure_warning

__all__ = ["FAMILIES", "family_help", "MonitorCollector", "make_registry", "serve_monitor", "ExporterServer", "CONTENT_TYPE",
           "exposure_warning"]

LABEL_MAX = 200

_OUTCOME_FIELD = {"complete": "requests_ok", "error": "requests_err", "truncated": "requests_truncated",
                  "empty": "requests_empty"}

FAMILIES: tuple[str, ...] = (
    "lanemon_lane_info", "lanemon_lane_model_changes_total", "lanemon_lane_up", "lanemon_lane_down_total",
    "lanemon_ttft_seconds", "lanemon_tpot_seconds", "lanemon_requests_total", "lanemon_output_tokens_total",
    "lanemon_slo_attainment_ratio", "lanemon_goodput_requests_per_second", "lanemon_oversaturated",
    "lanemon_window_error_ratio", "lanemon_window_decode_tokens_per_second", "lanemon_engine_kv_cache_usage_ratio",
    "lanemon_engine_requests_waiting", "lanemon_engine_requests_running", "lanemon_gpu_power_watts",
    "lanemon_gpu_energy_joules_total", "lanemon_window_gpu_energy_joules", "lanemon_window_gpu_power_mean_watts",
    "lanemon_tokens_per_joule", "lanemon_cost_usd_per_hour", "lanemon_usd_per_million_output_tokens",
    "lanemon_alerts_firing", "lanemon_window_seconds",
)
"""The families served, by their catalogue names (measure/catalogue.py gives each its type, HELP and unit)."""

_KINDS = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily, "histogram": HistogramMetricFamily}


def family_help(name: str) -> str:
    """The HELP text of family ``name``: the catalogue's, with its unit."""
    m = BY_PROMETHEUS[name]
    return f"{m.prometheus_help} [unit: {m.unit}]"


def _family(name: str, labels: list[str] | None = None) -> Any:
    m = BY_PROMETHEUS[name]
    return _KINDS[m.prometheus_type or "gauge"](name, family_help(name), labels=["lane"] if labels is None else labels)


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
        fam["lanemon_requests_total"] = _family("lanemon_requests_total", ["lane", "outcome"])
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
            put("lanemon_lane_model_changes_total", lv, st.model_changes.get(name, 0))
            hists = st.hists.get(name)
            if hists is not None:
                for key, h in zip(("lanemon_ttft_seconds", "lanemon_tpot_seconds"), hists):
                    buckets = [("+Inf" if b == float("inf") else repr(b), c) for b, c in h.cumulative()]
                    fam[key].add_metric(lv, buckets, h.total)
            for outcome in OUTCOMES:
                fam["lanemon_requests_total"].add_metric([*lv, outcome], getattr(lane, _OUTCOME_FIELD[outcome]))
            put("lanemon_output_tokens_total", lv, st.output_tokens.get(name, 0))
            put("lanemon_lane_up", lv, None if lane.up is None else float(lane.up))
            put("lanemon_lane_down_total", lv, st.availability.downs.get(name, 0))
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
            eng = st.energy_figures(name) if readings or name in st.cost_per_hour else {}
            if readings:
                put("lanemon_gpu_power_watts", lv, readings[-1].power_w)
                put("lanemon_gpu_energy_joules_total", lv,
                    None if readings[-1].energy_mj is None else readings[-1].energy_mj / 1000.0)
                put("lanemon_window_gpu_energy_joules", lv, eng["energy_j"])
                put("lanemon_window_gpu_power_mean_watts", lv, eng["gpu_power_w_mean"])
                put("lanemon_tokens_per_joule", lv, eng["tokens_per_joule"])
            if name in st.cost_per_hour:
                put("lanemon_cost_usd_per_hour", lv, st.cost_per_hour[name])
                put("lanemon_usd_per_million_output_tokens", lv, eng["usd_per_1m_output_tokens"])
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
