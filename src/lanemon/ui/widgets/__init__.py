"""Dashboard widgets, one per module."""

from lanemon.ui.widgets.lane_panel import LanePanel
from lanemon.ui.widgets.status_bar import StatusBar

__all__ = ["LanePanel", "StatusBar"]
