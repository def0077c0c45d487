"""The bench screen's one-line header: bench kind, current cell, cells done, elapsed, recording."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.status_bar import short_path


class BenchStatus(Horizontal):
    """``DECODE │ running C3 rep 1 on A │ 14/24 cells │ elapsed +12.3s │ rec → …``."""

    DEFAULT_CSS = """
    BenchStatus { dock: top; height: 1; background: $panel; color: $text; }
    BenchStatus Label { text-wrap: nowrap; text-overflow: ellipsis; }
    BenchStatus #kind { padding: 0 1; text-style: bold; background: $secondary; color: $background; }
    BenchStatus #kind.-finished { background: $success; }
    BenchStatus #kind.-stopped { background: $warning; }
    BenchStatus #info { width: auto; padding: 0 1; }
    BenchStatus #path { width: 1fr; color: $text-muted; padding: 0 1; text-align: right; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="kind")
        yield Label("", id="info")
        yield Label("", id="path")

    def update_from(self, *, kind: str, state: str, current: str | None, done: int, total: int, elapsed: str,
                    errors: int, recording_path) -> None:
        chip = self.query_one("#kind", Label)
        chip.update(f"BENCH {kind.upper()}")
        chip.set_class(state == "finished", "-finished")
        chip.set_class(state == "stopped", "-stopped")
        if state == "finished":
            now = "[$success b]■ finished[/] [dim]q quits[/]"
        elif state == "stopped":
            now = "[$warning b]■ stopped[/] [dim]finished cells are kept[/]"
        elif current:
            now = f"[dim]running[/] [b]{escape(current)}[/]"
        else:
            now = "[dim]next cell…[/]" if done else "[dim]starting…[/]"
        parts = [now, f"[b]{done}[/]/{total} cells", f"[dim]elapsed[/] {elapsed}"]
        if errors:
            parts.append(f"[$error b]{errors} err[/]")
        self.query_one("#info", Label).update("  │  ".join(parts))
        path = short_path(recording_path)
        self.query_one("#path", Label).update(f"rec → {escape(path)}" if path else "[dim]not recording[/]")
