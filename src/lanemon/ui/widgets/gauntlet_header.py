"""The gauntlet screen's top line: mode, configuration, elapsed time, recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.status_bar import path_verb, short_path, sim_note


class GauntletHeader(Horizontal):
    DEFAULT_CSS = """
    GauntletHeader { dock: top; height: 1; background: $panel; color: $text; }
    GauntletHeader Label { text-wrap: nowrap; text-overflow: ellipsis; }
    GauntletHeader #g-mode { padding: 0 1; text-style: bold; background: $secondary; color: $background; }
    GauntletHeader #g-info { width: auto; padding: 0 1; }
    GauntletHeader #g-path { width: 1fr; color: $text-muted; padding: 0 1; text-align: right; }
    """

    def compose(self) -> ComposeResult:
        yield Label("GAUNTLET", id="g-mode")
        yield Label("", id="g-info")
        yield Label("", id="g-path")

    def update_from(self, *, mode: str, config: dict[str, Any], elapsed_s: float, finished: bool,
                    recording_path: Path | str | None) -> None:
        self.query_one("#g-mode", Label).update(f"GAUNTLET · {mode.upper()}{sim_note(self.app)}")
        parts = []
        if config:
            parts.append(f"[b]{config.get('hops', '?')}[/] hops × [b]{config.get('reps', '?')}[/] reps")
            parts.append(f"system prompt {int(config.get('system_prompt_tokens', 0)):,} tok")
            if config.get("time_scale") not in (None, 1, 1.0):
                parts.append(f"[$warning]time ×{config['time_scale']:g}[/]")
        parts.append(f"[dim]t[/] +{elapsed_s:.1f}s")
        if finished:
            parts.append("[$success b]■ finished[/]")
        self.query_one("#g-info", Label).update("  │  ".join(parts))
        path = short_path(recording_path)
        self.query_one("#g-path", Label).update(f"{path_verb(mode)} {escape(path)}" if path else "[dim]not recording[/]")
