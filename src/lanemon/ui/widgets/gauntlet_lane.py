"""One lane's column on the gauntlet screen: hop cells, current file, per-turn TTFT/decode bars, reps."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Label, Static

from lanemon.ui.format import markup_escape as escape
from lanemon.folds.gauntlet import LaneView
from lanemon.ui.widgets.lane_card import LaneCard
from lanemon.ui.widgets.status_bar import markup_cells

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
TAIL = 18
"""A turn row's times after its bar where there are no turns yet: `` 12.34 + 29.68 s ✓`` (the rows' own times
set it once there are: `` 1.42 + 0.17 s ✓`` is 16)."""


def turn_rows(turns: list, scale: float, width: int | None) -> tuple[str, list[str], list[str]]:
    """The turns' header (markup), one row per turn (markup) and the columns left out, for ``width`` cells.

    The row is the turn, the prompt and cached tokens, the stacked bar and the times; where a bar of 6 cells
    does not fit beside them (80x24's 34-cell card read ``■ d…`` and ``████…``), the cached column goes
    whole, then the prompt's, then the bar: never a column cut."""
    width = width or 60
    times = [f"{_secs(tv.ttft_s).strip()} + {_secs(tv.decode_s).strip()} s" for tv in turns]
    time_w = max((len(t) for t in times), default=TAIL - 3)
    times = [" " + t.rjust(time_w) for t in times]
    tail = time_w + 3  # a blank, the times, a blank and the mark (` 1.42 + 0.17 s ✓`)
    sets = [("prompt", "cached"), ("prompt",), ()]
    cols = next((c for c in sets if width - 6 - 8 * len(c) - tail >= 6), ())
    prefix = 6 + 8 * len(cols)
    bar_w = max(0, min(40, width - prefix - tail))
    if bar_w < 6:
        bar_w = 0
    head = "turn  " + "".join(f"{c:<6}  " for c in cols)
    head += "[$accent]■[/] TTFT  [$primary]■[/] decode" if bar_w else "TTFT + decode"
    rows = []
    for tv, secs in zip(turns, times):
        prompt = f"{tv.prompt_tokens:>6,}" if tv.prompt_tokens is not None else "     –"
        cached = f"{tv.cached_tokens:>6,}" if tv.cached_tokens else "     –"
        mark = "" if tv.ok is None else ("[$success]✓[/]" if tv.ok else "[$error]✗[/]")
        row = f"{tv.turn + 1:>4}  " + "".join(f"{prompt if c == 'prompt' else cached}  " for c in cols)
        if bar_w:
            row += turn_bar(tv.ttft_s, tv.decode_s, scale, bar_w)
        rows.append(f"{row}{secs} {mark}")
    return head, rows, [c for c in ("prompt", "cached") if c not in cols]


def fit_forms(forms: list[str], width: int | None) -> str:
    """The first of ``forms`` (markup, fullest first) whose plain text fits ``width`` (None: the first)."""
    if not width:
        return forms[0]
    return next((f for f in forms if markup_cells(f) <= width), forms[-1])


def pack(items: list[str], width: int | None, sep: str = "  ") -> str:
    """``items`` (markup) joined on lines of at most ``width`` cells, a line break only between items (the reps
    line wrapped ``✓ 22.39 s (20`` / ``calls)``)."""
    lines: list[str] = []
    used = 0
    for item in items:
        n = markup_cells(item)
        if lines and width and used + len(sep) + n > width:
            lines.append("\n" + item)
            used = n
        else:
            lines.append((sep if lines else "") + item)
            used += (len(sep) if len(lines) > 1 else 0) + n
    return "".join(lines)


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

    _drawn: tuple | None = None
    """The last :meth:`update_from` call, drawn again when the card's width changes (its rows are fitted to the
    width of the layout they were drawn in: a replay that finished before the layout settled kept `■ d…`)."""

    def on_resize(self) -> None:
        if self._drawn is not None:
            args, kwargs = self._drawn
            self.call_after_refresh(self.update_from, *args, **kwargs)

    def update_from(self, view: LaneView, *, hops: int, reps: int, scale: float, now_ns: int,
                    running: bool) -> None:
        self._drawn = ((view,), {"hops": hops, "reps": reps, "scale": scale, "now_ns": now_ns, "running": running})
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
        now = self.query_one("#now", Label)
        elapsed = f"[b]{view.elapsed_s(now_ns):.2f} s[/]"
        now.update(fit_forms([f"{phase}  [dim]elapsed[/] {elapsed}  [dim]turn[/] {turn}",
                              f"{phase}  [dim]elapsed[/] {elapsed}", f"{phase}  {elapsed}"],
                             now.content_region.width))
        turns_widget = self.query_one("#turns", Static)
        head, rows, hidden = turn_rows(view.turns, scale, turns_widget.size.width or None)
        room = turns_widget.size.height
        width = self.query_one("#turns-head", Label).content_region.width or None
        notes = []
        if room and len(rows) > room:  # the latest turns; ↑/↓ on the screen scroll back (``back`` turns)
            self.back = max(0, min(self.back, len(rows) - room))
            end = len(rows) - self.back
            notes.append(f" [dim]{end - room + 1}–{end}↑↓[/]")  # turns shown (the footer: ↑↓ turns)
            rows = rows[end - room:end]
        else:
            self.back = 0
        if hidden:  # the columns left out, named where the line has room
            notes.append(f"  [dim]hidden: {', '.join(hidden)}[/]")
        tight = head.replace(" TTFT  ", " TTFT ")  # one blank fewer, for the turns shown (`9–21↑↓`) at 100x30
        forms = [h + "".join(notes) for h in (head, tight)] + (
            [h + notes[0] for h in (head, tight)] if len(notes) > 1 else []) + [head]
        head_label = self.query_one("#turns-head", Label)
        text = fit_forms(forms, width)
        below = ""
        if hidden and "hidden:" not in text:  # no room beside the header (80x24's 34-cell card): a line of its
            # own, in the blank line over the header, never the columns left out without a word
            below = fit_forms([f"[dim]hidden: {', '.join(hidden)} tokens[/]", f"[dim]hidden: {', '.join(hidden)}[/]",
                               f"[dim]{len(hidden)} hidden[/]"], width)
        head_label.update(f"{below}\n{text}" if below else text)
        lines = 2 if below else 1
        if head_label.styles.height is None or head_label.styles.height.value != lines:
            head_label.styles.height = lines
            now.styles.margin = (0, 0, 2 - lines, 0)
        turns_widget.update("\n".join(rows))
        reps_widget = self.query_one("#reps", Static)
        reps_widget.update(self._reps_text(view, reps, reps_widget.content_region.width or None))
        self.set_class(view.phase == "done", "-done")
        self.set_class(view.phase in ("failed", "error"), "-failed")
        self.mark(good=view.phase == "done", bad=view.phase in ("failed", "error"))

    @staticmethod
    def _reps_text(view: LaneView, reps: int, width: int | None = None) -> str:
        parts = []
        for r in view.results:
            if r.correct:
                parts.append(f"[$success]✓[/] {r.wall_s:.2f} s ({r.tool_calls} calls)")
            else:
                parts.append(f"[$error]✗ {escape(r.stopped)}[/] {r.wall_s:.2f} s")
        from lanemon.workloads.gauntlet.results import reps_seen  # the result's own count of correct reps

        seen = reps_seen([r.wall_s for r in view.results], [r.correct for r in view.results],
                         [r.tool_calls for r in view.results])
        head = f"[b]{seen.correct}/{seen.reps}[/] correct" + (f" of {reps}" if seen.reps < reps else "")
        return pack([head, *parts], width)
