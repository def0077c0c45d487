"""One lane's column on the race screen: rank badge, live figures, the streamed text."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lanemon.folds.race import RaceLane
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.untrusted import shown_text
from lanemon.ui.format import ordinal
from lanemon.ui.widgets.lane_card import LaneCard

RANK_CLASSES = ("-r1", "-r2", "-rn", "-running", "-error", "-idle")


class RaceColumn(LaneCard):
    """A lane in a race, redrawn from a :class:`~lanemon.folds.race.RaceLane` on the app's timer.

    Its border is green for the winner (``-r1``), red for a lane that failed (``-error``)."""

    DEFAULT_CSS = """
    RaceColumn { height: 1fr; min-width: 24; }
    RaceColumn.-good { border: round $success 70%; }
    RaceColumn #rank { background: $panel; color: $text-muted; }
    RaceColumn #rank.-r1 { background: $success; color: $background; }
    RaceColumn #rank.-r2 { background: $warning; color: $background; }
    RaceColumn #rank.-rn { background: $secondary; color: $background; }
    RaceColumn #rank.-running { background: $primary 30%; color: $text; }
    RaceColumn #rank.-error { background: $error; color: $background; }
    RaceColumn #stats { color: $text; width: 1fr; }
    RaceColumn #stats2 { color: $text-muted; width: 1fr; }
    RaceColumn #text-scroll {
        height: 1fr;
        background: $boost;
        margin-top: 1;
        scrollbar-size-vertical: 1;
    }
    RaceColumn.-short #text-scroll { margin-top: 0; }
    RaceColumn #text { width: 1fr; padding: 0 1; }
    RaceColumn #text.-empty { color: $text-muted; }
    """

    def __init__(self, lane: str, *, id: str | None = None) -> None:
        super().__init__(lane, id=id)
        self._text_len = -1

    def on_resize(self) -> None:
        # a card with room for one line of text (six lanes at 100x30 once the result shows) spends it on
        # the text, not on the gap above it: the text still follows the lane to its end
        self.set_class(self.content_size.height < 6, "-short")

    def compose(self) -> ComposeResult:
        yield self.header(Label("", id="model"), Label("—", id="rank", classes="badge -idle"))
        yield Label("", id="stats")
        yield Label("", id="stats2")
        with VerticalScroll(id="text-scroll"):
            yield Static("", id="text", markup=False, classes="-empty")

    def _rank(self, text: str, cls: str) -> None:
        self.badge_state(self.query_one("#rank", Label), text, cls, RANK_CLASSES)
        for c in ("-r1", "-error"):
            self.set_class(c == cls, c)
        self.mark(good=cls == "-r1", bad=cls == "-error")

    def update_from(self, entry: RaceLane | None, *, now_ns: int, model: str | None = None) -> None:
        """Redraw from the lane's race entry (None: the lane is not in the race shown)."""
        q = self.query_one
        self.paint_name()
        q("#model", Label).update(escape(model) if model else "")
        text = q("#text", Static)
        if entry is None or entry.rec is None:
            self._rank("—", "-idle")
            q("#stats", Label).update("[dim]waiting for a race[/]" if entry is None else "[dim]not started[/]")
            q("#stats2", Label).update("")
            if self._text_len != 0:
                text.update("")
                text.set_class(True, "-empty")
                self._text_len = 0
            return
        m = entry.metrics(now_ns)
        elapsed = entry.elapsed_s(now_ns)
        if entry.error is not None:
            cls = entry.error.cls or "error"
            self._rank("ERR", "-error")
            msg = " ".join((entry.error.message or "").split())
            q("#stats", Label).update(f"[$error b]{escape(cls)}[/] {escape(msg)}")
        elif entry.rank is not None:
            style = {1: "-r1", 2: "-r2"}.get(entry.rank, "-rn")
            self._rank(ordinal(entry.rank), style)
        else:
            self._rank(f"● {fmt.seconds(elapsed)}", "-running")
        if entry.error is None:
            ttft = fmt.seconds(m.ttft_s) if m else "—"
            rate = fmt.tok_s(m.decode_tok_s) if m else "—"
            ttfo = ""
            if m is not None and m.ttfo_s is not None and m.reasoning_tokens:
                ttfo = f"  [dim]TTFO[/] [b]{fmt.seconds(m.ttfo_s)}[/]"
            q("#stats", Label).update(f"[dim]TTFT[/] [b]{ttft}[/]{ttfo}  [dim]decode[/] [b]{rate}[/]")
        tokens = m.output_tokens if m else 0
        est = " est." if m is not None and m.tokens_estimated else ""
        total = fmt.seconds(m.e2e_s if entry.finished and m else elapsed)
        think = ""
        if m is not None and m.reasoning_tokens:
            think = f" + {m.reasoning_tokens} think{' est.' if m.reasoning_estimated else ''}"
        q("#stats2", Label).update(f"{tokens} tok{est}{think}  ·  {'total' if entry.finished else 'elapsed'} {total}")
        body = entry.text
        reasoning = entry.reasoning_text
        size = len(body) + len(reasoning) * 3 + 1  # changes whenever either part grows
        if size != self._text_len:
            scroll = q("#text-scroll", VerticalScroll)
            if size < self._text_len or self._text_len <= 1:  # a new race: its text from the top
                scroll.anchor(False)
                scroll.scroll_home(animate=False)
            # the model's text as it may be shown: bidi controls visible, zero-width and mark floods out
            body, reasoning = shown_text(body), shown_text(reasoning)
            if reasoning:  # thinking models: the reasoning dimmed above the answer
                shown = Text(reasoning, style="dim italic")
                if body:
                    shown.append("\n\n")
                    shown.append(body)
                text.update(shown)
            else:
                text.update(body or "…")
            text.set_class(not (body or reasoning), "-empty")
            self._text_len = size
            scroll.call_after_refresh(self._follow, scroll)

    @staticmethod
    def _follow(scroll: VerticalScroll) -> None:
        """Once the text outgrows the box, anchor it: Textual then keeps the end in view after every
        layout as the text grows, until the user scrolls up (and again once they scroll back down).
        (Anchored while shorter than the box, the text would sit at its bottom.)"""
        if scroll.max_scroll_y > 0 and not scroll.is_anchored:
            scroll.anchor()
