"""The gauntlet screen's top line: mode, configuration, elapsed time, recording."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from lanemon.results.gauntlet import GauntletConfigInfo
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.status_bar import PathLabel, fit_items, markup_cells, path_verb, short_path, sim_note

SHED = (("system", 1), ("scale", 1), ("hops", 1))
"""What a narrow header gives up first, whole: the system prompt's size, the time scale, the hops × reps (the
lane cards say them); the time and `finished` stay (80x24 read `│  t +92`, the figure cut)."""


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
        yield PathLabel("", id="g-path")

    def update_from(self, *, mode: str, config: GauntletConfigInfo, elapsed_s: float, finished: bool,
                    recording_path: Path | str | None) -> None:
        chip = f"GAUNTLET · {mode.upper()}{sim_note(self.app)}"
        self.query_one("#g-mode", Label).update(chip)
        items: dict[str, list[tuple[str, str]]] = {}
        if config != GauntletConfigInfo():  # the run's start mark has come
            hops = "?" if config.hops is None else config.hops
            reps = "?" if config.reps is None else config.reps
            items["hops"] = [(f"[b]{hops}[/] hops × [b]{reps}[/] reps", f"{hops} hops × {reps} reps"), ("", "")]
            sp = f"system prompt {config.system_prompt_tokens or 0:,} tok"
            items["system"] = [(sp, sp), ("", "")]
            scale = config.time_scale if isinstance(config.time_scale, (int, float)) else None
            if scale not in (None, 1, 1.0):
                items["scale"] = [(f"[$warning]time ×{scale:g}[/]", f"time ×{scale:g}"), ("", "")]
        items["t"] = [(f"[dim]t[/] +{elapsed_s:.1f}s", f"t +{elapsed_s:.1f}s")]
        if finished:
            items["finished"] = [("[$success b]■ finished[/]", "■ finished")]
        room = self.size.width - (markup_cells(chip) + 2) - 2
        self.query_one("#g-info", Label).update(fit_items(items, room if self.size.width else None, SHED))
        path = short_path(recording_path)
        label = self.query_one("#g-path", PathLabel)
        verb = path_verb(mode)
        if path:  # the path, the file's name, the name alone, or nothing: whole, chosen again on a resize
            label.show_forms([f"{verb} {path}", f"{verb} {Path(path).name}", Path(path).name])
            label.update(escape(label.picked))
        else:
            label.show_forms(["not recording", "no rec"], dim=True)
            label.update(label.markup_of(label.picked))
