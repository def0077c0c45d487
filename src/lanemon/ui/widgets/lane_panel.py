"""One lane's column on the dashboard: identity, health, latest figures, server gauges, errors.

The lane's history is drawn on the dashboard's shared time charts (every lane on the same axes),
not here: a per-panel sparkline scaled to its own min and max cannot be compared across lanes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Static

from lanemon.folds.dashboard import LaneState
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.lane_card import LaneCard
from lanemon.ui.widgets.server_gauges import ServerGauges

ERRORS_SHOWN = 3
STATES = ("-unknown", "-up", "-down")
NARROW = 46
"""Panels narrower than this drop the medians and ranges (the window table has them)."""


class LanePanel(LaneCard):
    """Everything lanemon knows about one lane, redrawn from a :class:`LaneState`.

    The panel never reads the event stream; the app calls :meth:`update_from`
    on its redraw timer, so a burst of token events costs one repaint.  Its border is green while
    the lane is up (``-up``), red while it is down (``-down``).
    """

    DEFAULT_CSS = """
    LanePanel.-good { border: round $success 55%; }
    LanePanel #badge.-up { background: $success; color: $background; }
    LanePanel #badge.-down { background: $error; color: $background; }
    LanePanel #badge.-unknown { background: $panel; color: $text-muted; }
    LanePanel #model { color: $text; width: 1fr; }
    LanePanel .key { color: $text-muted; width: 9; }
    LanePanel .val { text-style: bold; width: auto; min-width: 7; margin-right: 1; }
    LanePanel .med { color: $text-muted; width: auto; margin-right: 1; }
    LanePanel .spark-label { color: $text-muted; width: 1fr; }
    /* a narrow panel (many lanes, small terminal) keeps the latest figures; the medians and
       ranges are in the window table under the panels */
    LanePanel.-narrow .med, LanePanel.-narrow #ttft-median, LanePanel.-narrow #tps-median,
    LanePanel.-narrow .spark-label { display: none; }
    LanePanel #requests { width: 1fr; }
    LanePanel #errors-title { color: $text-muted; }
    LanePanel #errors {
        height: auto;
        max-height: 3;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, lane: str, *, id: str | None = None) -> None:
        super().__init__(lane, id=id, classes="-unknown")

    def compose(self) -> ComposeResult:
        yield self.header(Label("", id="url"), Label("…", id="badge", classes="badge -unknown"))
        yield Label("model —", id="model")
        yield _figure_row("TTFT", "ttft")  # last · median of the last 120 · n and range
        yield _figure_row("decode", "tps")
        with Horizontal(classes="row"):
            yield Label("requests", classes="key")
            yield Label("", id="requests")
        yield ServerGauges(id="server")  # hidden until the lane's /metrics answered
        yield Label("errors", id="errors-title")
        yield Static("", id="errors")

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    def update_from(self, st: LaneState, now_ns: int = 0) -> None:
        """Redraw every field from the lane's folded state."""
        q = self.query_one
        self.paint_name()
        q("#url", Label).update(escape(st.url or ""))
        q("#model", Label).update(f"[dim]model[/] {escape(st.model)}" if st.model else "[dim]model —[/]")

        badge = q("#badge", Label)
        if st.up is None:
            state, text = "-unknown", "…"
        elif st.up:
            state = "-up"
            text = "UP" if st.models_latency_s is None else f"UP {st.models_latency_s * 1000:.0f} ms"
        else:
            state, text = "-down", "DOWN"
        self.badge_state(badge, text, state, STATES)
        for cls in STATES:
            self.set_class(cls == state, cls)
        self.mark(good=state == "-up", bad=state == "-down")

        est = " [$warning]est.[/]" if st.tokens_estimated else ""
        q("#ttft-last", Label).update(fmt.seconds(st.last_ttft_s))
        q("#ttft-median", Label).update(fmt.seconds(st.median_ttft_s))
        q("#tps-last", Label).update(fmt.tok_s(st.last_tps))
        q("#tps-median", Label).update(fmt.tok_s(st.median_tps))

        err_style = "$error" if st.requests_err else "$text-muted"
        bound = ""
        if st.client_bound:  # lanemon itself was starved while these ran: counted, not plotted as lane speed
            hot = st.last_client_bound_t is not None and now_ns - st.last_client_bound_t < 5_000_000_000
            bound = f"  [{'$warning b' if hot else '$warning'}]{st.client_bound} client-bound[/]"
        # truncated / empty replies and bursts: counted apart, never plotted (folds/dashboard.py)
        for n, word in ((getattr(st, "requests_truncated", 0), "truncated"), (getattr(st, "requests_empty", 0), "empty"),
                        (getattr(st, "bursts", 0), "burst")):
            if n:
                bound += f"  [$warning]{n} {word}[/]"
        stalled, wait_s = st.stalled(now_ns) if now_ns else (0, 0.0)
        stall = f"  [$warning b]{stalled} stalled {wait_s:.0f} s[/]" if stalled else ""  # in flight, no data
        q("#requests", Label).update(
            f"[b]{st.in_flight}[/] in flight{stall}  [$success]{st.requests_ok} ok[/]  "
            f"[{err_style}]{st.requests_err} err[/]" + bound)

        n_ttft = len(st.ttft_history)
        q("#ttft-label", Label).update(f"[dim]n={n_ttft} · {fmt.span(st.ttft_history, 's')}[/]" if n_ttft > 1 else "")
        n_tps = len(st.tps_history)
        q("#tps-label", Label).update(
            est.strip() + (f"  [dim]n={n_tps} · {fmt.span(st.tps_history, 'tok/s')}[/]" if n_tps > 1 else ""))
        q("#server", ServerGauges).update_from(st.server)

        errors = list(st.errors)[-ERRORS_SHOWN:][::-1]
        total = len(st.errors)
        q("#errors-title", Label).update(f"errors  [dim]{total} recent[/]" if total else "errors")
        if errors:
            lines = [_error_line(t, cls, msg) for t, cls, msg in errors]
            q("#errors", Static).update("\n".join(lines))
        else:
            q("#errors", Static).update("[dim]none[/]")


def _figure_row(key: str, prefix: str) -> Horizontal:
    """``TTFT  169 ms  med 172 ms  n=12 · 163–199 ms``: the latest, the median, the count and range."""
    return Horizontal(Label(key, classes="key"), Label("—", id=f"{prefix}-last", classes="val"),
                      Label("med", classes="med"), Label("—", id=f"{prefix}-median", classes="val"),
                      Label("", id=f"{prefix}-label", classes="spark-label"), classes="row")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error_line(t: int, cls: str, msg: str) -> str:
    """``+7.2s http 503 Service Unavailable``; lanemon's own cancellations are muted."""
    style = "$text-muted b" if cls == "cancelled" else "$error b"
    text = _one_line(msg)
    tail = f" {escape(text)}" if text and text != cls else ""
    return f"[dim]{fmt.event_time(t)}[/] [{style}]{escape(cls)}[/]{tail}"
