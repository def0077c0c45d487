"""The live dashboard: one :class:`LanePanel` per lane, side by side."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Footer

from lanemon.folds.dashboard import SessionState
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.host_panel import HostPanel
from lanemon.ui.widgets.lane_panel import LanePanel
from lanemon.ui.widgets.status_bar import StatusBar


def panel_id(lane: str) -> str:
    """A DOM id for a lane name (lane names allow '.', which ids do not)."""
    return "lane-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in lane)


class DashboardScreen(LanemonScreen):
    """Status bar, lane panels, footer.  Redrawn by the app via :meth:`refresh_from`."""

    NAME = "dashboard"

    def __init__(self, lanes: list[str], source: Any = None) -> None:
        super().__init__()
        self._lanes = list(lanes)
        self._source = source

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="lanes"):
            for name in self._lanes:
                yield LanePanel(name, id=panel_id(name))
        yield HostPanel(id="host")  # hidden until `h`
        if self._source is not None and hasattr(self._source, "seek"):  # a seekable replay
            from lanemon.ui.widgets.timeline_bar import TimelineBar

            yield TimelineBar(self._source, id="timeline")
        yield Footer()

    def fingerprint(self, app: Any) -> tuple:
        s = app.source
        return (app.state.version, s.paused, s.speed, s.finished, str(s.recording_path))

    def draw(self, app: Any) -> None:
        self.refresh_from(app.state, app.source)

    def panel(self, lane: str) -> LanePanel:
        return self.query_one(f"#{panel_id(lane)}", LanePanel)

    def refresh_from(self, state: SessionState, source: Any) -> None:
        """Redraw everything from ``state``; lanes first seen in events get a panel."""
        new = [name for name in state.lanes if name not in self._lanes]
        if new:
            container = self.query_one("#lanes", Horizontal)
            for name in new:
                self._lanes.append(name)
                container.mount(LanePanel(name, id=panel_id(name)))
            self.call_after_refresh(self.refresh_from, state, source)
            return
        for name in self._lanes:
            self.panel(name).update_from(state.lane(name))
        self.query_one(HostPanel).update_from(state.host)
        self.query_one(StatusBar).update_from(
            mode=getattr(source, "mode", "live"),
            events=state.events,
            last_t=state.last_t,
            paused=bool(getattr(source, "paused", False)),
            speed=getattr(source, "speed", None),
            finished=bool(getattr(source, "finished", False)),
            recording_path=getattr(source, "recording_path", None),
        )
