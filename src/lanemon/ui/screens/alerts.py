"""The alerts: every alert that fired or resolved in the stream (live or replayed), newest first.

Opened with ``!`` from any screen.  Drawn from the app's alert log (``alert`` events, folded in
``LanemonApp._fold``) only when it grew: the screen costs nothing while no alert moves.
"""

from __future__ import annotations

import msgspec
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lanemon.measure.alerts import unit_suffix
from lanemon.results.monitor_events import AlertEvent, read_alert_leniently
from lanemon.ui import format as fmt
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.footer import Footer
from lanemon.untrusted import inert

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


MAX_FIRING = 256
"""Distinct alerts listed as firing at once; more are counted ("and N more")."""
VALUES_SHOWN = 8


def brief_alert(d: dict) -> AlertEvent:
    """An ``alert`` event's data as the screens show it (results/monitor_events.AlertEvent, read leniently: a cut
    or odd alert shows too), bounded whatever the event held: state, severity, the alert's name (120 characters),
    its rule, lane and the first :data:`VALUES_SHOWN` values, escapes stripped."""
    a = read_alert_leniently(d)
    return msgspec.structs.replace(
        a, state=inert(a.state, 16), severity=inert(a.severity, 10), alert=inert(a.alert, 120),
        rule=inert(a.rule, 120), lane=inert(a.lane, 16),
        values={inert(k, 20): v for k, v in list(a.values.items())[:VALUES_SHOWN]})


def render_alerts(log: list[tuple[int, str, AlertEvent]], firing: dict[tuple[str, str], int], more: int = 0) -> Text:
    """The alert log as one Rich Text (never parsed as markup): firing ones first, then every transition."""
    out = Text()
    if firing:
        out.append(f"firing now ({len(firing) + more}):\n", style="bold")
        for (lane, alert), t in sorted(firing.items(), key=lambda kv: kv[1]):
            out.append(f"  ● {inert(lane, 16)}  {inert(alert, 120)}  since {fmt.event_time(t)}\n", style="bold red")
        if more:
            out.append(f"  and {more} more not listed (at most {MAX_FIRING} distinct alerts are listed)\n",
                       style="bold red")
        out.append("\n")
    if not log:
        out.append("no alert has fired (rules: lanes.toml [[alerts]] or --alert; docs/MONITOR.md)", style="dim")
        return out
    out.append("every transition, newest first:\n", style="bold")
    for t, lane, d in reversed(log[-500:]):
        state, sev = d.state, d.severity
        vals = " ".join(f"{k}={v:.4g}{unit_suffix(k)}" if v is not None else f"{k}=-"
                        for k, v in list(d.values.items())[:VALUES_SHOWN])
        out.append(f"  {fmt.event_time(t)}  ")
        out.append(f"{'FIRING ' if state == 'firing' else 'resolved'}", style="bold red" if state == "firing" else "green")
        out.append(f" [{inert(sev, 10)}]", style=SEVERITY_STYLE.get(sev, ""))
        out.append(f"  lane {inert(lane, 16)}: {d.alert}  ({vals})\n")
    return out


class AlertsScreen(LanemonScreen):
    """Alerts fired and resolved, the firing ones on top."""

    NAME = "alerts"
    DEFAULT_CSS = """
    AlertsScreen #al-head { height: 1; padding: 0 1; background: $panel; color: $text; width: 1fr; }
    AlertsScreen #al-scroll { height: 1fr; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="al-head")
        with VerticalScroll(id="al-scroll"):
            yield Static("", id="al-list")
        yield Footer()

    def fingerprint(self, app) -> tuple:
        return (len(app.alert_log), len(app.alerts_firing), app.alerts_firing_more)

    def draw(self, app) -> None:
        n = len(app.alerts_firing) + app.alerts_firing_more
        self.query_one("#al-head", Label).update(
            Text(f"ALERTS · {n} firing · {len(app.alert_log)} transition{'s' * (len(app.alert_log) != 1)}"))
        self.query_one("#al-list", Static).update(render_alerts(app.alert_log, app.alerts_firing,
                                                                        app.alerts_firing_more))
