"""The race screen's header: which race, its prompt, and whether it is running."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from lanemon.folds.race import RaceView
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape


class RaceHeader(Vertical):
    """Race number, prompt id/category, endpoint and budget, state, and the prompt itself."""

    DEFAULT_CSS = """
    RaceHeader { height: 2; margin: 1 1 0 1; }
    RaceHeader .row { height: 1; }
    RaceHeader Label { text-wrap: nowrap; text-overflow: ellipsis; }
    RaceHeader #race-chip { padding: 0 1; text-style: bold; background: $accent; color: $background; margin-right: 1; }
    RaceHeader #race-info { width: 1fr; }
    RaceHeader #race-state { padding: 0 1; text-style: bold; }
    RaceHeader #race-state.-running { background: $primary 30%; }
    RaceHeader #race-state.-done { background: $success; color: $background; }
    RaceHeader #race-state.-stopped { background: $warning; color: $background; }
    RaceHeader #race-prompt-text { color: $text-muted; width: 1fr; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Label("RACE", id="race-chip")
            yield Label("", id="race-info")
            yield Label("", id="race-state")
        yield Label("", id="race-prompt-text")

    def update_from(self, view: RaceView | None, *, count: int, now_ns: int, hint: str = "") -> None:
        q = self.query_one
        state = q("#race-state", Label)
        if view is None:
            q("#race-chip", Label).update("RACE")
            q("#race-info", Label).update(f"[dim]{escape(hint) or 'no race yet'}[/]")
            q("#race-prompt-text", Label).update("")
            state.update("")
            for c in ("-running", "-done", "-stopped"):
                state.set_class(False, c)
            return
        q("#race-chip", Label).update(f"RACE {view.index}" + (f" of {count}" if count > 1 else ""))
        bits = []
        if view.prompt_id:
            bits.append(f"[b]{escape(view.prompt_id)}[/]")
        if view.category:
            bits.append(f"({escape(view.category)})")
        if view.endpoint:
            bits.append(f"[dim]·[/] {escape(view.endpoint)}")
        if view.max_tokens:
            bits.append(f"[dim]· max[/] {view.max_tokens} tok")
        bits.append(f"[dim]· at[/] {fmt.event_time(view.start_t or 0)}")
        q("#race-info", Label).update(" ".join(bits))
        if view.stopped:
            label, cls = "■ stopped", "-stopped"
        elif view.complete:
            label, cls = "■ finished", "-done"
        else:
            since = (now_ns - (view.start_t or now_ns)) / 1e9
            label, cls = f"● racing {fmt.seconds(max(0.0, since))}", "-running"
        state.update(label)
        for c in ("-running", "-done", "-stopped"):
            state.set_class(c == cls, c)
        prompt = " ".join(view.prompt.split())
        q("#race-prompt-text", Label).update(f"[b]prompt[/] {escape(prompt)}" if prompt else "")
