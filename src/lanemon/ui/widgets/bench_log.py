"""The bench screen's error log: newest first, one line each.

A line longer than the log is cut with ``…`` and the title then says where the whole is (``e: whole``, the
errors screen, screens/errors.py); more errors than the log shows: ``e: all``.  Redrawn only when the errors
or the width changed (it is handed the errors at every redraw tick)."""

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

    _drawn: tuple[int, int, tuple | None] | None = None

    def update_from(self, errors: list[tuple[int, str, str, str]]) -> None:
        """``errors``: (t_ns, lane, error class, message), oldest first."""
        total = len(errors)
        width = self.content_region.width  # 0 before the first layout: no line is judged cut yet
        key = (total, width, errors[-1] if errors else None)
        if key == self._drawn:
            return
        self._drawn = key
        if not errors:
            self.border_title = "errors"
            self.update("[dim]none[/]")
            return
        lines, cut = [], False
        for t, lane, cls, msg in errors[-SHOWN:][::-1]:
            style = "$text-muted b" if cls == "cancelled" else "$error b"
            text = " ".join(str(msg).split())
            tail = text if text and text != cls else ""
            when = fmt.event_time(t)
            cut = cut or bool(width) and len(f"{when} {lane} {cls} {tail}".rstrip()) > width
            tail = f" {escape(tail)}" if tail else ""
            lines.append(f"[dim]{when}[/] [b]{escape(lane)}[/] [{style}]{escape(cls)}[/]{tail}")
        more = total > SHOWN
        hint = "e: all, whole" if more and cut else "e: all" if more else "e: whole" if cut else ""
        self.border_title = f"errors · {total}" + (f" · {hint}" if hint else "")
        self.update("\n".join(lines))
