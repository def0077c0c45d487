"""One colour per lane, the same on every screen: the lane's position picks a theme variable.

Lane 1 is ``$primary``, lane 2 ``$accent``, then ``$success``, ``$secondary``, ``$warning``,
``$error`` and two fixed extras; the dashboard's time charts, the bench charts and the lane
badges all ask here, so lane B is the same colour in the legend, on the bars and on the lines.
Where the points of several lanes fall in one character cell (which holds one colour), the time
charts draw it in :func:`shared_colour`, the theme's foreground, which no lane uses.
"""

from __future__ import annotations

from typing import Any

from textual.color import Color

SERIES_VARS = ("primary", "accent", "success", "secondary", "warning", "error")
EXTRA = ("#C77DFF", "#2EC4B6")
FALLBACK = "#4FB3D9"


def lane_colour(app: Any, index: int) -> str:
    """The hex colour of the lane at ``index`` (0-based) in ``app``'s theme."""
    n = len(SERIES_VARS) + len(EXTRA)
    i = index % n
    if i >= len(SERIES_VARS):
        return EXTRA[i - len(SERIES_VARS)]
    variables = getattr(app, "theme_variables", None) or {}
    try:
        return Color.parse(variables.get(SERIES_VARS[i], FALLBACK)).hex
    except Exception:  # a theme without this variable
        return FALLBACK


def shared_colour(app: Any) -> str:
    """The hex colour of a chart cell that several lanes share: the theme's foreground."""
    variables = getattr(app, "theme_variables", None) or {}
    try:
        return Color.parse(variables.get("foreground", "#E0E0E0")).hex
    except Exception:  # a theme without a parsable foreground
        return "#E0E0E0"


def lane_colours(app: Any, lanes: list[str]) -> dict[str, str]:
    return {name: lane_colour(app, i) for i, name in enumerate(lanes)}


def rgb(colour: str) -> tuple[int, int, int]:
    return Color.parse(colour).rgb
