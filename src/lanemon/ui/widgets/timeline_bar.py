"""The replay timeline: one line with the playhead, a track with marker ticks, speed, state.

::

    ▶  1:02:03 / 2:45:10  ━━━━━━━━━━━━━━●──────┃─────────┃──────  ×4   ◆ race 3

It reads a seekable replay source (``playhead_ns``, ``duration_ns``,
``markers``, ``speed``, ``paused``, ``finished``, ``seeking``) on its own
timer, because the playhead moves with the wall clock even when no event
arrives, and repaints only when what it shows changed.  A click on the track
asks the app to seek there.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from rich.text import Text
from textual import events
from textual.reactive import reactive
from textual.widget import Widget

from lanemon.ui import format as fmt


def clock(t_ns: int) -> str:
    """Session time as ``m:ss.s`` below an hour, ``h:mm:ss`` above."""
    s = max(0, t_ns) / 1e9
    if s >= 3600:
        h, rest = divmod(int(s), 3600)
        return f"{h}:{rest // 60:02d}:{rest % 60:02d}"
    m, sec = divmod(s, 60)
    return f"{int(m)}:{sec:04.1f}"


class TimelineBar(Widget):
    """Where a replay is: elapsed / total, a track with markers, speed and pause state."""

    DEFAULT_CSS = """
    TimelineBar {
        height: 1;
        background: $panel;
        color: $text;
        padding: 0 1;
    }
    TimelineBar > .timeline-bar--played { color: $primary; }
    TimelineBar > .timeline-bar--rest { color: $foreground 30%; }
    TimelineBar > .timeline-bar--head { color: $accent; text-style: bold; }
    TimelineBar > .timeline-bar--marker { color: $warning; }
    TimelineBar > .timeline-bar--marker-played { color: $warning 60%; }
    TimelineBar > .timeline-bar--state { color: $accent; text-style: bold; }
    TimelineBar > .timeline-bar--dim { color: $text-muted; }
    """

    COMPONENT_CLASSES = {
        "timeline-bar--played",
        "timeline-bar--rest",
        "timeline-bar--head",
        "timeline-bar--marker",
        "timeline-bar--marker-played",
        "timeline-bar--state",
        "timeline-bar--dim",
    }

    view: reactive[tuple] = reactive(tuple, layout=False)
    """What is shown: (playhead, duration, speed, paused, finished, seeking, marker count); set by the timer."""

    def __init__(self, source: Any, *, refresh_hz: float = 10.0, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self._refresh_hz = refresh_hz
        self._track: tuple[int, int] = (0, 0)  # x range of the track in the last render

    def on_mount(self) -> None:
        self.sample()
        self.set_interval(1 / self._refresh_hz, self.sample)

    def sample(self) -> None:
        """Read the source; a repaint follows only if the view changed (reactive)."""
        s = self.source
        duration = int(getattr(s, "duration_ns", 0) or 0)
        head = int(getattr(s, "playhead_ns", 0) or 0)
        # tenths of a second are all the text shows; the track moves in cells
        self.view = (
            min(head, duration) // 100_000_000,
            duration // 100_000_000,
            getattr(s, "speed", None),
            bool(getattr(s, "paused", False)),
            bool(getattr(s, "finished", False)),
            bool(getattr(s, "seeking", False)),
            len(getattr(s, "markers", ()) or ()),
        )

    def state_label(self) -> str:
        s = self.source
        if getattr(s, "seeking", False):
            return "⟳"
        if getattr(s, "finished", False):
            return "■"
        if getattr(s, "paused", False):
            return "❚❚"
        return "▶"

    def current_marker(self) -> Any:
        """The last marker at or before the playhead, if any."""
        markers = getattr(self.source, "markers", None) or []
        head = getattr(self.source, "playhead_ns", 0)
        i = bisect.bisect_right([m.t for m in markers], head)
        return markers[i - 1] if i else None

    def render(self) -> Text:
        s = self.source
        style = self.get_component_rich_style
        duration = max(1, int(getattr(s, "duration_ns", 0) or 0))
        head = max(0, min(int(getattr(s, "playhead_ns", 0) or 0), duration))
        speed = getattr(s, "speed", None)
        left = Text.assemble(
            (f"{self.state_label():<2} ", style("timeline-bar--state")),
            (clock(head), "bold"),
            (" / ", style("timeline-bar--dim")),
            (clock(duration), ""),
            "  ",
        )
        right = Text.assemble(
            "  ",
            (fmt.speed(speed) if speed is not None else "", "bold"),
        )
        marker = self.current_marker()
        if marker is not None:
            labels = getattr(self.app, "marker_labels", {}) if self.is_attached else {}
            text = labels.get(marker.t) or (marker.label + (f" · {marker.lane}" if marker.lane else ""))
            right.append("  ◆ ", style("timeline-bar--marker"))
            right.append(text[:24], style("timeline-bar--dim"))
        width = self.content_size.width or self.size.width or 80
        track_w = max(10, width - left.cell_len - right.cell_len)
        self._track = (left.cell_len, left.cell_len + track_w)
        pos = min(track_w - 1, int(head / duration * track_w)) if track_w else 0
        cells = ["━"] * pos + ["●"] + ["─"] * (track_w - pos - 1)
        kinds = ["played"] * pos + ["head"] + ["rest"] * (track_w - pos - 1)
        for m in getattr(s, "markers", None) or []:
            x = min(track_w - 1, int(m.t / duration * track_w))
            if x != pos:
                cells[x] = "┃"
                kinds[x] = "marker-played" if x < pos else "marker"
        track = Text()
        for ch, kind in zip(cells, kinds):
            track.append(ch, style(f"timeline-bar--{kind}"))
        return Text.assemble(left, track, right, no_wrap=True, overflow="ellipsis")

    def on_click(self, event: events.Click) -> None:
        """A click on the track seeks there."""
        start, end = self._track
        x = event.x - self.styles.padding.left
        if end <= start or not (start <= x < end):
            return
        duration = int(getattr(self.source, "duration_ns", 0) or 0)
        target = int((x - start + 0.5) / (end - start) * duration)
        seek = getattr(self.app, "seek_to", None)
        if seek is not None and not math.isnan(target):
            seek(target)
