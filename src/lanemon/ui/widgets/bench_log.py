"""The bench screen's error log: newest first, one line each."""

from __future__ import annotations

from textual.widgets import Static

from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape

SHOWN = 5


class BenchLog(Static):
    """``+12.3s A C4 http 503 Service Unavailable``; lanemon's own cancellations are muted."""

    DEFAULT_CSS = """
    BenchLog {
        height: auto;
        max-height: 7;
        border: round $primary 40%;
        border-title-color: $text-muted;
        padding: 0 1;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def on_mount(self) -> None:
        self.border_title = "errors"

    def update_from(self, errors: list[tuple[int, str, str, str]]) -> None:
        """``errors``: (t_ns, lane, error class, message), oldest first."""
        total = len(errors)
        self.border_title = f"errors · {total}" if total else "errors"
        if not errors:
            self.update("[dim]none[/]")
            return
        lines = []
        for t, lane, cls, msg in errors[-SHOWN:][::-1]:
            style = "$text-muted b" if cls == "cancelled" else "$error b"
            text = " ".join(str(msg).split())
            tail = f" {escape(text)}" if text and text != cls else ""
            lines.append(f"[dim]{fmt.event_time(t)}[/] [b]{escape(lane)}[/] [{style}]{escape(cls)}[/]{tail}")
        self.update("\n".join(lines))
