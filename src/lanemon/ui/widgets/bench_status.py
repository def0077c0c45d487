"""The bench screen's one-line header: bench kind, current cell, cells done, elapsed, recording."""

from __future__ import annotations

from textual.widgets import Label

from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.status_bar import InfoBar, path_verb, short_path, sim_note


class BenchStatus(InfoBar):
    """``DECODE │ running C3 rep 1 on A │ 14/24 cells │ elapsed +12.3s │ rec → …``."""

    CHIP = "kind"
    CHIP_STATE = "-bench"

    def update_from(self, *, kind: str, state: str, current: str | None, done: int, total: int, elapsed: str,
                    errors: int, recording_path) -> None:
        self.show_chip(f"BENCH {kind.upper()}{sim_note(self.app)}", f"-{state}" if state in ("finished", "stopped") else "-bench",
                       ("-bench", "-finished", "-stopped"))
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
        replay = getattr(getattr(self.app, "source", None), "mode", "") == "replay"
        text = self.fit_path(path_verb("replay" if replay else ""), path, alone=replay, short="" if replay else "● rec")
        # `not recording`, a shorter whole form or nothing (80x24 read `elapsed +31.9s  no…`)
        self.query_one("#path", Label).update(escape(text) if path else self.fit_words("not recording", "no rec"))
