"""The race screen's header: which race, its prompt, and whether it is running."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from lanemon.folds.race import RaceView
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape


class _Fitted(Label):
    """A header label whose text is fitted to its width: fitted again whenever its width changes (the race line
    was fitted before the first layout, when it had no width, and never again)."""

    def on_resize(self) -> None:
        header = next((a for a in self.ancestors if isinstance(a, RaceHeader)), None)
        if header is not None:
            header.call_after_refresh(header._fit)


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

    _bits: list[tuple[int, str, str]] = []
    _prompt = ""

    def _fit(self) -> None:
        """The race's line with whole items only (the start time goes first, then the category, the endpoint,
        the budget: 80x24 read `· max 256 tok · at…`), and the prompt cut after a whole word."""
        if not self._bits:  # no race yet: the hint stays
            return
        info = self.query_one("#race-info", Label)
        info.update(fmt.fit(self._bits, info.content_region.width or 200, sep=" "))
        text = self.query_one("#race-prompt-text", Label)
        room = (text.content_region.width or 200) - len("prompt ")
        prompt = self._prompt
        if len(prompt) > room:  # a preview: whole words and the ellipsis
            prompt = prompt[: max(0, room - 1)].rsplit(" ", 1)[0] + "…"
        text.update(f"[b]prompt[/] {escape(prompt)}" if self._prompt else "")

    def compose(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Label("RACE", id="race-chip")
            yield _Fitted("", id="race-info")
            yield Label("", id="race-state")
        yield _Fitted("", id="race-prompt-text")

    def update_from(self, view: RaceView | None, *, count: int, now_ns: int, hint: str = "") -> None:
        q = self.query_one
        state = q("#race-state", Label)
        if view is None:
            q("#race-chip", Label).update("RACE")
            q("#race-info", Label).update(f"[dim]{escape(hint) or 'no race yet'}[/]")
            q("#race-prompt-text", Label).update("")
            self._bits, self._prompt = [], ""
            state.update("")
            for c in ("-running", "-done", "-stopped"):
                state.set_class(False, c)
            return
        q("#race-chip", Label).update(f"RACE {view.index}" + (f" of {count}" if count > 1 else ""))
        bits = []  # (priority, markup, plain): what goes first where the line is short (`· at…` was cut)
        if view.prompt_id:
            bits.append((0, f"[b]{escape(view.prompt_id)}[/]", view.prompt_id))
        if view.category:
            bits.append((3, f"({escape(view.category)})", f"({view.category})"))
        if view.endpoint:
            bits.append((2, f"[dim]·[/] {escape(view.endpoint)}", f"· {view.endpoint}"))
        if view.max_tokens:
            bits.append((1, f"[dim]· max[/] {view.max_tokens} tok", f"· max {view.max_tokens} tok"))
        at = fmt.event_time(view.start_t or 0)
        bits.append((4, f"[dim]· at[/] {at}", f"· at {at}"))
        self._bits = bits
        prompt = " ".join(view.prompt.split())
        self._prompt = prompt
        self._fit()
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

