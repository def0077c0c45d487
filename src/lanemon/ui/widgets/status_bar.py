"""The one-line status bar: mode, event count, session time, pause/speed, recording."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape

def short_path(path: Path | str | None) -> str:
    """The recording path with the home directory shown as ``~``."""
    if path is None:
        return ""
    text = str(path)
    home = str(Path.home())
    if home and home != "/" and text.startswith(home + "/"):
        text = "~" + text[len(home) :]
    return text

class StatusBar(Horizontal):
    """Session-wide facts; every value comes from the source or from event time."""

    DEFAULT_CSS = """
    StatusBar {
        dock: top;
        height: 1;
        background: $panel;
        color: $text;
    }
    StatusBar Label { text-wrap: nowrap; text-overflow: ellipsis; }
    StatusBar #mode { padding: 0 1; text-style: bold; background: $primary; color: $background; }
    StatusBar #mode.-live { background: $success; }
    StatusBar #mode.-demo { background: $secondary; }
    StatusBar #mode.-replay { background: $accent; }
    StatusBar #info { width: auto; padding: 0 1; }
    StatusBar #path { width: 1fr; color: $text-muted; padding: 0 1; text-align: right; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="mode")
        yield Label("", id="info")
        yield Label("", id="path")

    def show(self, source, state) -> None:
        """The bar for a source (its mode, pause, speed, recording) and the dashboard fold (events, time)."""
        self.update_from(
            mode=getattr(source, "mode", "live"),
            events=state.events,
            last_t=state.last_t,
            paused=bool(getattr(source, "paused", False)),
            speed=getattr(source, "speed", None),
            finished=bool(getattr(source, "finished", False)),
            recording_path=getattr(source, "recording_path", None),
        )

    def update_from(
        self,
        *,
        mode: str,
        events: int,
        last_t: int,
        paused: bool,
        speed: float | None,
        finished: bool,
        recording_path: Path | str | None,
    ) -> None:
        mode_label = self.query_one("#mode", Label)
        mode_label.update(mode.upper())
        for m in ("live", "demo", "replay"):
            mode_label.set_class(mode == m, f"-{m}")

        parts = [f"[b]{events:,}[/] events", f"[dim]t[/] {fmt.event_time(last_t)}"]
        if mode == "replay" and speed is not None:
            parts.append(f"[dim]speed[/] [b]{fmt.speed(speed)}[/]")
        if paused:
            parts.append("[$warning b]❚❚ PAUSED[/]")
        if finished:
            parts.append("[$accent b]■ replay finished[/]" if mode != "attach" else "[$accent b]■ share ended[/]")
        self.query_one("#info", Label).update("  │  ".join(parts))

        path = short_path(recording_path)
        if path:
            verb = "from" if mode == "replay" else "rec →"
            self.query_one("#path", Label).update(f"{verb} {escape(path)}")
        else:
            self.query_one("#path", Label).update("[dim]not recording[/]" if mode != "replay" else "")
