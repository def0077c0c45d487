"""The errors: every error the lanes' cards keep, newest first, each message whole.

Opened with ``e`` from any screen; a lane card whose error line is cut says so (``… e: whole``,
``widgets/lane_panel.error_lines``).  Drawn from the dashboard fold's per-lane error logs (the last
``folds.dashboard.ERRORS_KEPT`` of each lane) only when one grew or the width changed.  The messages were
made inert, redacted and bounded where they entered (``client/http.py``, docs/SECURITY.md); a recording
replayed from elsewhere is bounded here again (:data:`lanemon.untrusted.MESSAGE_LIMIT` characters).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from lanemon.folds.dashboard import ERRORS_KEPT
from lanemon.ui import format as fmt
from lanemon.ui.colours import lane_colours
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.footer import Footer
from lanemon.ui.widgets.lane_panel import wrap_spans
from lanemon.untrusted import MESSAGE_LIMIT, inert


def render_errors(lanes: dict[str, Any], width: int, colours: dict[str, str] | None = None) -> Text:
    """Every kept error of ``lanes`` (name -> ``LaneState``), newest first, as one Rich Text (never parsed as
    markup): ``+13.9s  B  http  HTTP 500: …`` with the whole message wrapped under itself in ``width``
    columns."""
    colours = colours or {}
    rows = sorted(((t, str(lane), str(cls), msg) for lane, st in lanes.items() for t, cls, msg in st.errors),
                  key=lambda r: r[0], reverse=True)
    out = Text()
    if not rows:
        out.append("no errors", style="dim")
        return out
    lane_w = min(16, max(len(inert(r[1], 16)) for r in rows))
    cls_w = min(12, max(len(inert(r[2], 12)) for r in rows))
    for t, lane, cls, msg in rows:
        when = fmt.event_time(t)
        head = Text(f"{when:>8}  ", style="dim")
        head.append(f"{inert(lane, 16):<{lane_w}}", style=f"bold {colours.get(lane, '')}".strip())
        head.append("  ")
        head.append(f"{inert(cls, 12):<{cls_w}}", style="bold" if cls == "cancelled" else "bold red")
        head.append("  ")
        text = " ".join(inert(msg, MESSAGE_LIMIT).split())
        indent = head.cell_len
        spans = wrap_spans(text, max(20, width - indent)) if text else [(0, 0)]
        out.append_text(head)
        for i, (start, end) in enumerate(spans):
            if i:
                out.append("\n" + " " * indent)
            out.append(text[start:end])
        out.append("\n")
    out.rstrip()
    return out


class ErrorsScreen(LanemonScreen):
    """Every lane's kept errors, newest first, each message whole (``e``)."""

    NAME = "errors"
    DEFAULT_CSS = """
    ErrorsScreen #er-head { height: 1; padding: 0 1; background: $panel; color: $text; width: 1fr; }
    ErrorsScreen #er-scroll { height: 1fr; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="er-head")
        with VerticalScroll(id="er-scroll"):
            yield Static("", id="er-list")
        yield from self.replay_bar()
        yield Footer()

    def fingerprint(self, app: Any) -> tuple:
        return (self.size.width, *((n, len(st.errors), st.errors[-1][0] if st.errors else None)
                                   for n, st in app.state.lanes.items()))

    def draw(self, app: Any) -> None:
        lanes = app.state.lanes
        kept = sum(len(st.errors) for st in lanes.values())
        counts = " · ".join(f"{inert(n, 16)} {len(st.errors)}" for n, st in lanes.items())
        self.query_one("#er-head", Label).update(Text(
            f"ERRORS · {kept} kept, newest first ({counts}; the last {ERRORS_KEPT} of each lane)"))
        width = self.size.width - 4  # the padding and the scrollbar's two columns, whether it shows or not
        self.query_one("#er-list", Static).update(render_errors(lanes, width, lane_colours(app, list(lanes))))
