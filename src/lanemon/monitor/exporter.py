"""The Prometheus exporter: a custom collector over :class:`~lanemon.folds.monitor.MonitorState` in a private
registry, served by a bounded asyncio HTTP server (docs/MONITOR.md, "Exporter").

Families (labels ``lane``, ``model``):

* ``lanemon_ttft_seconds`` / ``lanemon_tpot_seconds`` -- histograms of complete requests that lanemon was
  not starved during (TPOT: not bursts either), since the monitor started;
* ``lanemon_requests_total{outcome}`` -- finished requests by outcome (complete, error, truncated, empty);
* ``lanemon_lane_up`` -- 1 when the latest health probe answered;
* ``lanemon_lane_down_total`` -- times the lane went down;
* ``lanemon_slo_attainment_ratio`` -- share of the window's requests meeting every SLO target (with an SLO);
* ``lanemon_goodput_requests_per_second`` -- those requests per second of the window (with an SLO);
* ``lanemon_oversaturated`` -- 1 when the queue grew and TTFT rose while throughput stayed flat (window halves);
* ``lanemon_alerts_firing{severity}`` -- alerts firing now;
* ``lanemon_window_seconds`` -- the window the ratios are computed over.

The server reads at most :data:`MAX_REQUEST_HEAD` bytes of a request within :data:`READ_TIMEOUT_S`, serves
at most :data:`MAX_CONNECTIONS` at once (others are closed), answers ``GET /metrics`` (and ``/``) and
closes every connection after one answer.  It binds where the user asked (default loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from lanemon.folds.monitor import MonitorState
from lanemon.measure.alerts import SEVERITIES, AlertEngine
from lanemon.measure.records import OUTCOMES

MAX_REQUEST_HEAD = 8192
READ_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 16
LABEL_MAX = 200

_OUTCOME_FIELD = {"complete": "requests_ok", "error": "requests_err", "truncated": "requests_truncated",
                  "empty": "requests_empty"}


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
        labels = ["lane", "model"]
        ttft = HistogramMetricFamily("lanemon_ttft_seconds", "Time to first token of complete requests, as lanemon "
                                     "measured it (client side; starved samples left out)", labels=labels)
        tpot = HistogramMetricFamily("lanemon_tpot_seconds", "Time per output token after the first of complete "
                                     "requests (client side; bursts and starved samples left out)", labels=labels)
        reqs = CounterMetricFamily("lanemon_requests", "Finished requests by outcome (complete, error, truncated, "
                                   "empty); lanemon's own cancellations not counted", labels=[*labels, "outcome"])
        up = GaugeMetricFamily("lanemon_lane_up", "1 when the lane's latest health probe (GET /models) answered",
                               labels=labels)
        downs = CounterMetricFamily("lanemon_lane_down", "Times the lane went down (a health probe failed after "
                                    "it answered, or from the start)", labels=labels)
        attain = GaugeMetricFamily("lanemon_slo_attainment_ratio", "Share of the window's requests meeting every "
                                   "SLO target (errors are misses)", labels=labels)
        good = GaugeMetricFamily("lanemon_goodput_requests_per_second", "Requests meeting every SLO target per "
                                 "second of the window", labels=labels)
        saturated = GaugeMetricFamily("lanemon_oversaturated", "1 when over the window the engine's queue grew and "
                                      "TTFT rose while its throughput stayed flat (needs the engine's /metrics)",
                                      labels=labels)
        firing = GaugeMetricFamily("lanemon_alerts_firing", "Alert rules firing now", labels=[*labels, "severity"])
        window = GaugeMetricFamily("lanemon_window_seconds", "The sliding window the ratios are computed over")
        window.add_metric([], st.window_s)
        figures = st.figures()
        for name, lane in list(st.lanes.items()):
            lv = [_label(name), _label(lane.model)]
            hists = st.hists.get(name)
            if hists is not None:
                for fam, h in zip((ttft, tpot), hists):
                    buckets = [("+Inf" if b == float("inf") else repr(b), c) for b, c in h.cumulative()]
                    fam.add_metric(lv, buckets, h.total)
            for outcome in OUTCOMES:
                reqs.add_metric([*lv, outcome], getattr(lane, _OUTCOME_FIELD[outcome]))
            if lane.up is not None:
                up.add_metric(lv, 1.0 if lane.up else 0.0)
            downs.add_metric(lv, st.availability.downs.get(name, 0))
            figs = figures.get(name, {})
            if figs.get("slo_attainment") is not None:
                attain.add_metric(lv, figs["slo_attainment"])
            if figs.get("goodput") is not None:
                good.add_metric(lv, figs["goodput"])
            if figs.get("oversaturated") is not None:
                saturated.add_metric(lv, figs["oversaturated"])
            if self.alerts is not None:
                per = {s: 0 for s in SEVERITIES}
                for rule, ln, _ in self.alerts.firing():
                    if ln == name:
                        per[rule.severity] += 1
                for sev, n in per.items():
                    firing.add_metric([*lv, sev], n)
        yield from (ttft, tpot, reqs, up, downs, attain, good, saturated, firing, window)


def make_registry(state: MonitorState, alerts: AlertEngine | None = None) -> CollectorRegistry:
    """A private registry holding only lanemon's collector (never prometheus_client's global one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MonitorCollector(state, alerts))
    return registry


class ExporterServer:
    """``GET /metrics`` over plain HTTP/1.1, bounded in size, time and connections; one answer per connection."""

    def __init__(self, host: str, port: int, render: Callable[[], bytes]) -> None:
        self.host, self.port = host, port
        self.render = render
        self.scrapes = 0
        self._server: asyncio.AbstractServer | None = None
        self._active = 0

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, limit=MAX_REQUEST_HEAD,
                                                  reuse_address=True)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._active >= MAX_CONNECTIONS:
            writer.close()
            return
        self._active += 1
        try:
            status, ctype, body = await self._answer(reader)
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\nCache-Control: no-store\r\n\r\n").encode("ascii")
            writer.write(head + body)
            await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._active -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
        except asyncio.LimitOverrunError:
            return "431 Request Header Fields Too Large", "text/plain", b"request head too large\n"
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return "400 Bad Request", "text/plain", b"bad request\n"
        method, target = parts[0], parts[1].split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"only GET\n"
        if target == "/metrics":
            self.scrapes += 1
            body = self.render()
            return "200 OK", CONTENT_TYPE_LATEST, b"" if method == "HEAD" else body
        if target == "/":
            return "200 OK", "text/plain; charset=utf-8", b"lanemon exporter: GET /metrics\n"
        return "404 Not Found", "text/plain", b"not found: GET /metrics\n"


def serve_monitor(state: MonitorState, alerts: AlertEngine | None, host: str, port: int) -> ExporterServer:
    """An (unstarted) exporter over ``state``; ``await server.start()`` binds it."""
    registry = make_registry(state, alerts)
    return ExporterServer(host, port, lambda: generate_latest(registry))
