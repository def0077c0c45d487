"""The alerts: every alert that fired or resolved in the stream (live or replayed), newest first.

Opened with ``!`` from any screen.  Drawn from the app's alert log (``alert`` events, folded in
``LanemonApp._fold``) only when it grew: the screen costs nothing while no alert moves.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lanemon.measure.alerts import unit_suffix
from lanemon.ui import format as fmt
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.footer import Footer
from lanemon.untrusted import inert

SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


MAX_FIRING = 256
"""Distinct alerts listed as firing at once; more are counted ("and N more")."""
VALUES_SHOWN = 8


def brief_alert(d: dict) -> dict:
    """An ``alert`` event's data as the screens show it, bounded whatever the event held: state, severity,
    the alert's name (120 characters), lane and the first :data:`VALUES_SHOWN` values."""
    values = d.get("values") if isinstance(d.get("values"), dict) else {}
    return {"state": inert(d.get("state", "?"), 16), "severity": inert(d.get("severity", "warning"), 10),
            "alert": inert(d.get("alert", ""), 120), "lane": inert(d.get("lane", ""), 16),
            "values": {inert(k, 20): v for k, v in list(values.items())[:VALUES_SHOWN]}}


def render_alerts(log: list[tuple[int, str, dict]], firing: dict[tuple[str, str], int], more: int = 0) -> Text:
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
        state = str(d.get("state", "?"))
        sev = str(d.get("severity", "warning"))
        values = d.get("values") if isinstance(d.get("values"), dict) else {}
        vals = " ".join(f"{inert(k, 20)}={v:.4g}{unit_suffix(str(k))}" if isinstance(v, (int, float)) else f"{inert(k, 20)}=-"
                        for k, v in list(values.items())[:8])
        out.append(f"  {fmt.event_time(t)}  ")
        out.append(f"{'FIRING ' if state == 'firing' else 'resolved'}", style="bold red" if state == "firing" else "green")
        out.append(f" [{inert(sev, 10)}]", style=SEVERITY_STYLE.get(sev, ""))
        out.append(f"  lane {inert(lane, 16)}: {inert(d.get('alert', ''), 120)}  ({vals})\n")
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
