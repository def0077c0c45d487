"""One lane's column on the gauntlet screen: hop cells, current file, per-turn TTFT/decode bars, reps."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Label, Static

from lanemon.ui.format import markup_escape as escape
from lanemon.folds.gauntlet import LaneView
from lanemon.ui.widgets.lane_card import LaneCard

BAR_WIDTH = 22
PHASES = {
    "waiting": "[dim]waiting[/]",
    "prefill": "[$accent]prefill[/]",
    "decode": "[$primary]decode[/]",
    "tool": "[$secondary]tool call[/]",
    "done": "[$success b]✓ correct[/]",
    "failed": "[$error b]✗ failed[/]",
    "error": "[$error b]✗ error[/]",
}


def hop_cells(cells: list[str], hops: int, running: bool) -> str:
    """``■■■▶□□`` markup: one cell per hop (ok / error / malformed), the next one marked while running."""
    out = []
    for c in cells:
        out.append({"ok": "[$success]■[/]", "malformed": "[$warning]■[/]"}.get(c, "[$error]■[/]"))
    pending = max(0, hops - len(cells))
    if pending and running:
        out.append("[$accent b]▶[/]")
        pending -= 1
    out.append("[dim]" + "□" * pending + "[/]" if pending else "")
    return "".join(out)


def turn_bar(ttft: float | None, decode: float | None, scale: float, width: int = BAR_WIDTH) -> str:
    """A stacked bar: TTFT (prefill) cells then decode cells, on a scale shared by all lanes."""
    if scale <= 0:
        return " " * width
    a = round((ttft or 0.0) / scale * width)
    b = round((decode or 0.0) / scale * width)
    if ttft and a == 0:
        a = 1
    if decode and b == 0:
        b = 1
    a, b = min(a, width), min(b, max(0, width - min(a, width)))
    return f"[$accent]{'█' * a}[/][$primary]{'█' * b}[/]{' ' * (width - a - b)}"


def _secs(value: float | None) -> str:
    return "  –  " if value is None else f"{value:5.2f}"


TURNS_HEAD = "turn  prompt  cached  [$accent]■[/] TTFT  [$primary]■[/] decode"


class GauntletLanePanel(LaneCard):
    """Everything the gauntlet screen shows about one lane, redrawn from a :class:`LaneView`.

    Its border is green once the lane solved the task (``-done``), red when it failed (``-failed``)."""

    DEFAULT_CSS = """
    GauntletLanePanel { height: 1fr; min-width: 30; }
    GauntletLanePanel #rep { width: auto; text-style: bold; margin-left: 1; }
    /* a narrow card (six lanes in two rows at 100 columns) cuts these with an ellipsis, never silently */
    GauntletLanePanel #file, GauntletLanePanel #now, GauntletLanePanel #turns-head { width: 1fr; }
    GauntletLanePanel #hops { height: auto; margin-top: 1; }
    GauntletLanePanel #file { color: $text; }
    GauntletLanePanel #now { margin-bottom: 1; }
    GauntletLanePanel #turns-head { color: $text-muted; height: 1; }
    GauntletLanePanel #turns { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    GauntletLanePanel #reps { height: auto; margin-top: 1; }
    """

    back = 0
    """Turns scrolled back from the latest (the gauntlet screen's ↑/↓); 0 follows the latest."""

    def compose(self) -> ComposeResult:
        yield self.header(Label("", id="model"), Label("", id="rep"))
        yield Static("", id="hops")
        yield Label("", id="file")
        yield Label("", id="now")
        yield Label(TURNS_HEAD, id="turns-head")
        yield Static("", id="turns")
        yield Static("", id="reps")

    def update_from(self, view: LaneView, *, hops: int, reps: int, scale: float, now_ns: int,
                    running: bool) -> None:
        self.paint_name()
        self.query_one("#model", Label).update(escape(view.model or ""))
        rep_text = f"rep {view.rep + 1}/{reps}" if view.rep >= 0 else f"{reps} reps"
        self.query_one("#rep", Label).update(rep_text)
        active = view.phase not in ("done", "failed", "error", "waiting")
        cells = hop_cells(view.cells, hops, running and active)
        self.query_one("#hops", Static).update(f"{cells}  [b]{view.hops_done}[/]/{hops} hops"
                                               f"  [dim]{view.tool_calls} calls[/]")
        self.query_one("#file", Label).update(
            f"[dim]file[/] {escape(view.current_file) if view.current_file else '[dim]–[/]'}")
        turn = len(view.turns)
        phase = PHASES.get(view.phase, escape(view.phase))
        self.query_one("#now", Label).update(
            f"{phase}  [dim]elapsed[/] [b]{view.elapsed_s(now_ns):.2f} s[/]  [dim]turn[/] {turn}")
        turns_widget = self.query_one("#turns", Static)
        # the bar takes what the columns and the times leave (one row per turn, never wrapped)
        bar_w = max(6, min(40, (turns_widget.size.width or 60) - 40))
        rows = []
        for tv in view.turns:
            prompt = f"{tv.prompt_tokens:>6,}" if tv.prompt_tokens is not None else "     –"
            cached = f"{tv.cached_tokens:>6,}" if tv.cached_tokens else "     –"
            mark = "" if tv.ok is None else ("[$success]✓[/]" if tv.ok else "[$error]✗[/]")
            rows.append(f"{tv.turn + 1:>4} {prompt}  {cached}  {turn_bar(tv.ttft_s, tv.decode_s, scale, bar_w)}"
                        f" {_secs(tv.ttft_s)} + {_secs(tv.decode_s).strip()} s {mark}")
        room = turns_widget.size.height
        head = TURNS_HEAD
        if room and len(rows) > room:  # the latest turns; ↑/↓ on the screen scroll back (``back`` turns)
            self.back = max(0, min(self.back, len(rows) - room))
            end = len(rows) - self.back
            head += f" [dim]{end - room + 1}–{end}↑↓[/]"  # turns shown (the footer: ↑↓ turns)
            rows = rows[end - room:end]
        else:
            self.back = 0
        self.query_one("#turns-head", Label).update(head)
        turns_widget.update("\n".join(rows))
        self.query_one("#reps", Static).update(self._reps_text(view, reps))
        self.set_class(view.phase == "done", "-done")
        self.set_class(view.phase in ("failed", "error"), "-failed")
        self.mark(good=view.phase == "done", bad=view.phase in ("failed", "error"))

    @staticmethod
    def _reps_text(view: LaneView, reps: int) -> str:
        parts = []
        for r in view.results:
            if r.correct:
                parts.append(f"[$success]✓[/] {r.wall_s:.2f} s ({r.tool_calls} calls)")
            else:
                parts.append(f"[$error]✗ {escape(r.stopped)}[/] {r.wall_s:.2f} s")
        done = len(view.results)
        correct = sum(1 for r in view.results if r.correct)
        head = f"[b]{correct}/{done}[/] correct" + (f" of {reps}" if done < reps else "")
        return head + ("  " + "  ".join(parts) if parts else "")
