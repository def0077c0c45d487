"""``lanemon live --headless``: a live session's probe loops, the exporter and the alert rules, no TUI.

Runs until interrupted (Ctrl-C / SIGINT, SIGTERM) or until ``duration_s`` has passed; the session records
as usual.  Alert transitions go to stderr as one line each (``Transition.line``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from lanemon.folds.monitor import MonitorState
from lanemon.measure.alerts import Rule, Transition
from lanemon.monitor.alerting import Alerter
from lanemon.monitor.exporter import ExporterServer, serve_monitor
from lanemon.untrusted import inert


class ListenError(Exception):
    """The exporter could not bind (the message says where and why)."""


def stderr_line(tr: Transition) -> None:
    print(f"lanemon: {inert(tr.line(), 2000)}", file=sys.stderr, flush=True)  # a rule's name is the user's file's


class Monitor:
    """What a live session gets beside (or instead of) the dashboard: the monitor fold, alerts, exporter."""

    def __init__(self, session: Any, rules: Sequence[Rule], *, window_s: float, slo: dict[str, float] | None,
                 listen: tuple[str, int] | None = None, alert_interval: float = 1.0,
                 on_transition: Callable[[Transition], None] | None = None) -> None:
        self.session = session
        self.state = MonitorState([(lane.name, lane.url, lane.model) for lane in session.lane_configs],
                                  window_s=window_s, slo=slo)
        session.bus.subscribe(self.state.apply)
        self.alerter = Alerter(rules, self.state, session.bus.publish, session.clock, interval=alert_interval,
                               on_transition=on_transition) if rules else None
        self.exporter: ExporterServer | None = None
        self._stop = asyncio.Event()
        if listen is not None:
            self.exporter = serve_monitor(self.state, self.alerter.engine if self.alerter else None, *listen)

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
