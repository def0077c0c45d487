"""The per-request timeline: one bar per request over time, grouped by lane, coloured by phase.

Drawn from a :class:`~lanemon.folds.requests.RequestTimeline` (the pure fold every app keeps on its
bus) on a timer, only when the fold or the scope changed.  Keys: ``c`` next bench cell / race,
``x`` previous, ``a`` the whole session, ``Esc`` back.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lanemon.ui.widgets.footer import Footer
from lanemon.folds.requests import DECODE, EMPTY, ERROR, SHOWN, WAIT, RequestTimeline, layout, span
from lanemon.ui import format as fmt
from lanemon.ui.screens.base import LanemonScreen

GLYPH = {WAIT: ("▒", "yellow"), DECODE: ("█", "green"), ERROR: ("✖", "bold red"), EMPTY: (" ", "")}
LABEL_WIDTH = 14


def render_rows(timeline: RequestTimeline, cell: str | None, width: int, now_ns: int | None = None,
                limit: int = SHOWN) -> tuple[Text, int, int, int]:
    """(the bars as one Rich Text, requests shown, t0, t1) for ``cell`` (None: the whole session)."""
    bars = timeline.select(cell)
    t0, t1 = span(bars, now_ns)
    shown = bars[-limit:]
    out = Text()
    cols = max(10, width - LABEL_WIDTH - 1)
    lane = None
    for bar in shown:
        if bar.lane != lane:
            lane = bar.lane
            out.append(f"lane {lane}\n", style="bold")
        label = bar.req.rsplit("-", 1)[-1] if bar.req.startswith(f"{bar.lane}-") else bar.req
        out.append(f"  #{label:<{LABEL_WIDTH - 3}.{LABEL_WIDTH - 3}}", style="dim")
        run_kind, run_len = None, 0
        for kind in layout(bar, t0, t1, cols, now_ns) + [None]:  # type: ignore[list-item]
            if kind == run_kind:
                run_len += 1
                continue
            if run_kind is not None:
                glyph, style = GLYPH[run_kind]
                out.append(glyph * run_len, style=style or None)
            run_kind, run_len = kind, 1
        out.append("\n")
    return out, len(shown), t0, t1


class TimelineScreen(LanemonScreen):
    """Requests as bars over time (wait = sent -> first token, decode = first token -> end)."""

    BINDINGS = [
        Binding("c", "scope(1)", "Next cell"),
        Binding("x", "scope(-1)", "Previous cell"),
        Binding("a", "scope_all", "Whole session"),
    ]

    DEFAULT_CSS = """
    TimelineScreen #tl-head { height: 1; padding: 0 1; background: $panel; color: $text; width: 1fr; }
    TimelineScreen #tl-axis { height: 1; padding: 0 1; color: $text-muted; width: 1fr; }
    TimelineScreen #tl-scroll { height: 1fr; padding: 0 1; }
    TimelineScreen #tl-legend { height: 1; padding: 0 1; color: $text-muted; }
    """

    NAME = "timeline"

    def __init__(self, timeline: RequestTimeline, *, cell: str | None = None, live: bool = True) -> None:
        super().__init__()
        self.timeline = timeline
        self.cell = cell
        self.live = live

    def compose(self) -> ComposeResult:
        yield Label("", id="tl-head")
        yield Label("", id="tl-axis")
        with VerticalScroll(id="tl-scroll"):
            yield Static("", id="tl-bars")
        yield Label("[yellow]▒[/] queue + prefill (sent → first token)   [green]█[/] decode (first token → end)   "
                    "[bold red]✖[/] error", id="tl-legend")
        yield Footer()

    def on_resize(self) -> None:
        self.redraw(force=True)

    def fingerprint(self, app: object = None) -> tuple:
        return (self.timeline.version, self.timeline.last_t if self.live else 0, self.cell, self.size.width)

    def draw(self, app: object = None) -> None:
        self.redraw(force=True)

    def action_scope(self, step: int) -> None:
        cells = self.timeline.cells
        if not cells:
            self.notify("no bench cell or race yet", timeout=2)
            return
        if self.cell not in cells:
            self.cell = cells[0] if step > 0 else cells[-1]
        else:
            self.cell = cells[(cells.index(self.cell) + step) % len(cells)]
        self.redraw(force=True)

    def action_scope_all(self) -> None:
        self.cell = None
        self.redraw(force=True)

    def redraw(self, force: bool = False) -> bool:
        if not self.is_mounted:
            return False
        width = self.size.width - 2
        fp = self.fingerprint()
        if not force and fp == self.drawn:
            return False
        self.drawn = fp
        now = self.timeline.last_t if self.live else None
        text, n, t0, t1 = render_rows(self.timeline, self.cell, width, now)
        scope = "whole session" if self.cell is None else self.cell
        bars = self.timeline.select(self.cell)
        total, errors = self.timeline.totals(self.cell)  # counted over the session, kept or not
        running = sum(1 for b in bars if not b.finished)
        extra = f" · {running} running" if running else ""
        extra += f" · [$error]{errors} error{'s' if errors != 1 else ''}[/]" if errors else ""
        self.query_one("#tl-head", Label).update(
            f"[b]TIMELINE[/] · {scope} · {total} request{'s' if total != 1 else ''}{extra}"
            + (f" (last {n} shown)" if n < total else ""))
        if bars:
            self.query_one("#tl-axis", Label).update(
                f"{'':{LABEL_WIDTH}}{fmt.event_time(t0)} → {fmt.event_time(t1)}  ({fmt.seconds((t1 - t0) / 1e9)})")
        else:
            self.query_one("#tl-axis", Label).update("")
        self.query_one("#tl-bars", Static).update(text if bars else Text("no requests yet", style="dim"))
        return True
