"""``lanemon live --headless``: a live session's probe loops, the exporter and the alert rules, no TUI.

Runs until interrupted (Ctrl-C / SIGINT, SIGTERM) or until ``duration_s`` has passed; the session records
as usual.  Alert transitions go to stderr as one line each (``Transition.line``), and so does every lane
that goes down or comes back (``LaneChange.line``), at once; each such change is also a ``lane_state``
event on the bus (so the recording carries it).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.monitor import LaneChange, MonitorState
from lanemon.measure.alerts import Rule, Transition
from lanemon.monitor.alerting import Alerter
from lanemon.monitor.exporter import ExporterServer, serve_monitor
from lanemon.untrusted import inert


class ListenError(Exception):
    """The exporter could not bind (the message says where and why)."""


def stderr_line(tr: Transition | LaneChange) -> None:
    print(f"lanemon: {inert(tr.line(), 2000)}", file=sys.stderr, flush=True)  # a rule's name is the user's file's


class Monitor:
    """What a live session gets beside (or instead of) the dashboard: the monitor fold, alerts, exporter."""

    def __init__(self, session: Any, rules: Sequence[Rule], *, window_s: float, slo: dict[str, float] | None,
                 listen: tuple[str, int] | None = None, alert_interval: float = 1.0,
                 on_transition: Callable[[Transition], None] | None = None,
                 on_lane_change: Callable[[LaneChange], None] | None = None) -> None:
        self.session = session
        self.state = MonitorState([(lane.name, lane.url, lane.model) for lane in session.lane_configs],
                                  window_s=window_s, slo=slo)
        self.on_lane_change = on_lane_change
        session.bus.subscribe(self._apply)
        self.alerter = Alerter(rules, self.state, session.bus.publish, session.clock, interval=alert_interval,
                               on_transition=on_transition) if rules else None
        self.exporter: ExporterServer | None = None
        self._stop = asyncio.Event()
        if listen is not None:
            self.exporter = serve_monitor(self.state, self.alerter.engine if self.alerter else None, *listen)

    def _apply(self, ev: Event) -> None:
        self.state.apply(ev)
        change = self.state.last_change
        if change is None:
            return
        self.state.last_change = None
        self.session.bus.publish(Event(ev.t, schema.LANE_STATE, change.lane, None, change.to_json()))
        if self.on_lane_change is not None:
            self.on_lane_change(change)

    def down_summary(self, now_ns: int) -> list[str]:
        """One line per lane that was down during the session (or never answered a health probe)."""
        av = self.state.availability
        out = []
        for lane in self.state.lanes:
            if lane in av.ever_down:
                still = " and still is" if lane in av.down_since else ""
                n = av.downs.get(lane, 0)
                out.append(f"lane {inert(lane, 64)} was down {av.down_total_s(lane, now_ns):.1f} s of "
                           f"{now_ns / 1e9:.1f} s ({n} time{'s' * (n != 1)}){still}")
            elif lane not in av.seen:
                out.append(f"lane {inert(lane, 64)}: no health probe finished in {now_ns / 1e9:.1f} s")
        return out

    async def start(self) -> None:
        if self.exporter is not None:
            try:
                await self.exporter.start()
            except OSError as exc:
                raise ListenError(f"--serve-metrics {self.exporter.address}: cannot listen: "
                                  f"{exc.strerror or exc}") from None

    async def run(self) -> None:
        """The alert loop (or, without rules, nothing but the exporter) until stopped."""
        if self.alerter is not None:
            await self.alerter.run()
        else:
            await self._stop.wait()

    def stop(self) -> None:
        self._stop.set()
        if self.alerter is not None:
            self.alerter.stop()

    async def close(self) -> None:
        self.stop()
        if self.exporter is not None:
            await self.exporter.close()


async def run_headless(session: Any, monitor: Monitor, *, duration_s: float | None = None,
                       announce: Callable[[str], None] | None = None) -> None:
    """Start the exporter, then run the session and the alerts until stopped; SIGTERM stops it like Ctrl-C."""
    await monitor.start()
    if monitor.exporter is not None and announce is not None:
        announce(f"serving Prometheus metrics at http://{monitor.exporter.address}/metrics")
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGTERM, session.stop)

    async def timer() -> None:
        if duration_s is not None:
            await asyncio.sleep(duration_s)
            session.stop()

    stopper = asyncio.ensure_future(timer())
    alerts = asyncio.ensure_future(monitor.run())
    try:
        await session.run()
    finally:
        stopper.cancel()
        await monitor.close()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await alerts
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)
