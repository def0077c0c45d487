"""One lane's column on the dashboard: identity, health, latest figures, server gauges, errors.

The lane's history is drawn on the dashboard's shared time charts (every lane on the same axes),
not here: a per-panel sparkline scaled to its own min and max cannot be compared across lanes.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.message import Message
from textual.containers import Horizontal
from textual.widgets import Label, Static

from lanemon.folds.dashboard import LaneState
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.format import fit
from lanemon.ui.widgets.lane_card import LaneCard
from lanemon.ui.widgets.server_gauges import ServerGauges
from lanemon.ui.widgets.repaint import set_text
from lanemon.untrusted import inert

ERRORS_SHOWN = 3
STATES = ("-unknown", "-up", "-down", "-saturated")
NARROW = 46
"""Panels narrower than this drop the medians and ranges (the window table has them)."""
CARD_WIDTH = 30
"""A full panel's least width."""
CARD_ROWS = 9
"""A full panel's usual height (border, name, model, TTFT, decode, requests, errors)."""
CARD_SHARE = 0.35
"""The share of the screen's rows the full panels may take; more and the lanes become one-line rows."""
ROW_WIDTH = 46
"""A one-line (compact) lane row's least width."""


def lane_grid(lanes: int, width: int, height: int) -> tuple[int, bool]:
    """``(columns, compact)`` for ``lanes`` panels on a ``width`` x ``height`` screen.

    Full panels at least :data:`CARD_WIDTH` wide, as many rows of them as it takes, balanced (4 lanes
    in 2 x 2 rather than 3 + 1); when those rows would take more than :data:`CARD_SHARE` of the
    screen (8 lanes at 100x30 or 160x45, 4 at 100x30), one-line rows at least :data:`ROW_WIDTH`
    wide instead, so the charts keep their room.  A single lane (zoomed) is always a full panel.
    """
    n = max(1, lanes)

    def balanced(least: int) -> tuple[int, int]:
        most = max(1, min(n, width // least))
        rows = -(-n // most)
        return -(-n // rows), rows

    columns, rows = balanced(CARD_WIDTH)
    if n == 1 or rows * CARD_ROWS <= height * CARD_SHARE:
        return columns, False
    return balanced(ROW_WIDTH)[0], True




class LanePanel(LaneCard):
    """Everything lanemon knows about one lane, redrawn from a :class:`LaneState`.

    The panel never reads the event stream; the app calls :meth:`update_from`
    on its redraw timer, so a burst of token events costs one repaint.  Its border is green while
    the lane is up (``-up``), red while it is down (``-down``).
    """

    DEFAULT_CSS = """
    LanePanel.-good { border: round $success 55%; }
    LanePanel:hover { background: $boost; }  /* a click zooms the lane */
    /* compact: one line per lane (name, the latest figures that fit, health), no border; the window
       table under the panels has the rest */
    LanePanel.-compact, LanePanel.-compact.-good, LanePanel.-compact.-bad { border: none; height: 1; }
    LanePanel.-compact > *, LanePanel.-compact ServerGauges.-shown { display: none; }
    LanePanel.-compact > .head { display: block; }
    LanePanel.-compact #url { display: none; }
    LanePanel #brief { display: none; width: 1fr; }
    LanePanel.-compact #brief { display: block; }
    LanePanel #badge.-up { background: $success; color: $background; }
    /* as wide as ``UP 999 ms``: the /models round trip moving between 4 and 13 ms must not reflow the screen */
    LanePanel #badge.-up { min-width: 11; text-align: center; }
    LanePanel.-compact #badge.-up { min-width: 5; }
    LanePanel #badge.-up.-tight { min-width: 4; }  /* 'UP' alone, where the URL needs the room */
    LanePanel #badge.-down { background: $error; color: $background; }
    LanePanel #badge.-saturated { background: $warning; color: $background; }
    LanePanel #badge.-unknown { background: $panel; color: $text-muted; }
    LanePanel #model { color: $text; width: 1fr; }
    LanePanel .key { color: $text-muted; width: 9; }
    LanePanel .val { text-style: bold; width: auto; min-width: 7; margin-right: 1; }
    /* a decode rate as wide as it gets under 1,000 tok/s (``111.4 tok/s``): its figure moving between
       ``77.8`` and ``111.4`` must not reflow the screen at every probe (docs/UI.md "Drawing cheaply") */
    LanePanel #tps-last, LanePanel #tps-median { min-width: 11; }
    LanePanel .med { color: $text-muted; width: auto; margin-right: 1; }
    LanePanel .spark-label { color: $text-muted; width: 1fr; }
    /* a narrow panel (many lanes, small terminal) keeps the latest figures; the medians and
       ranges are in the window table under the panels */
    LanePanel.-narrow .med, LanePanel.-narrow #ttft-median, LanePanel.-narrow #tps-median,
    LanePanel.-narrow .spark-label { display: none; }
    LanePanel #requests { width: 1fr; }
    /* GPU telemetry (docs/GPU.md): a row on every panel once any lane of the session has telemetry,
       one word on a lane without it */
    LanePanel #gpu-row { display: none; }
    LanePanel.-gpu #gpu-row { display: block; }
    LanePanel.-compact #gpu-row { display: none; }
    LanePanel #gpu { width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    LanePanel #errors-title { color: $text-muted; }
    /* the lines come fitted to the width from error_lines (a narrow card wraps its newest error; a cut line
       ends in '… e: whole'); the ellipsis is only a safety net */
    LanePanel #errors {
        height: auto;
        max-height: 3;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    class Chosen(Message):
        """The user clicked a lane's card or one-line row (the dashboard zooms it)."""

        def __init__(self, lane: str) -> None:
            super().__init__()
            self.lane = lane

    def __init__(self, lane: str, *, id: str | None = None) -> None:
        super().__init__(lane, id=id, classes="-unknown")

    def on_click(self, event: events.Click) -> None:
        """A click anywhere on the card, or on its one-line row, chooses the lane."""
        event.stop()
        self.post_message(self.Chosen(self.lane))

    @property
    def compact(self) -> bool:
        """One line (name, latest figures, health) instead of the full card; the screen decides."""
        return self.has_class("-compact")

    @compact.setter
    def compact(self, value: bool) -> None:
        self.set_class(value, "-compact")

    def compose(self) -> ComposeResult:
        yield self.header(Label("", id="url"), Label("…", id="badge", classes="badge -unknown"),
                          Label("", id="brief"))
        yield Label("model —", id="model")
        yield _figure_row("TTFT", "ttft")  # last · median of the last 120 · n and range
        yield _figure_row("decode", "tps")
        with Horizontal(classes="row"):
            yield Label("requests", classes="key")
            yield Label("", id="requests")
        yield ServerGauges(id="server")  # hidden until the lane's /metrics answered
        with Horizontal(classes="row", id="gpu-row"):  # shown when a lane of the session has GPU telemetry
            yield Label("GPU", classes="key")
            yield Label("", id="gpu")
        yield Label("errors", id="errors-title")
        yield Static("", id="errors")

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    def update_from(self, st: LaneState, now_ns: int = 0, gpu: bool = False, saturated: bool = False) -> None:
        """Redraw every field from the lane's folded state (*gpu*: some lane of the session has GPU
        telemetry, so this panel shows its GPU row too; *saturated*: over the chart window its queue grew
        and its TTFT rose while its throughput stayed flat, folds/monitor.saturation)."""
        q = self.query_one
        self.paint_name()
        set_text(q("#model", Label), f"[dim]model[/] {escape(st.model)}" if st.model else "[dim]model —[/]")

        badge = q("#badge", Label)
        if st.up is None:
            state, text = "-unknown", "…"
        elif st.up and saturated:  # up, but more load only waits longer
            state, text = "-saturated", "SATURATED"
        elif st.up:
            state = "-up"
            text = "UP" if st.models_latency_s is None else f"UP {st.models_latency_s * 1000:.0f} ms"
            if self.compact and self.size.width < ROW_WIDTH + 10:
                text = "UP"  # a one-line row keeps its room for the figures
        else:
            state, text = "-down", "DOWN"
        inner = self.size.width - 4  # border and padding
        up_w = 11 if state == "-up" and not self.compact else 0  # the -up badge's fixed width (CSS below)
        room = inner - (len(self.lane) + 3) - max(len(text) + 2, up_w)  # beside the name chip and the badge
        host = short_url(st.url or "", 0)
        tight = inner > 0 and not self.compact and text.startswith("UP ") and room < len(host)
        if tight:
            text = "UP"  # the URL's host and port before the probe's latency
            room = inner - (len(self.lane) + 3) - 4
        badge.set_class(tight, "-tight")  # its fixed width goes too (a class change: only when the room does)
        set_text(q("#url", Label), escape(short_url(st.url or "", room) if inner > 0 else st.url or ""))
        self.badge_state(badge, text, state, STATES)
        for cls in STATES:
            self.set_class(cls == state, cls)
        self.mark(good=state == "-up", bad=state == "-down")

        est = " [$warning]est.[/]" if st.tokens_estimated else ""
        set_text(q("#ttft-last", Label), fmt.seconds(st.last_ttft_s))
        set_text(q("#ttft-median", Label), fmt.seconds(st.median_ttft_s))
        set_text(q("#tps-last", Label), fmt.tok_s(st.last_tps))
        set_text(q("#tps-median", Label), fmt.tok_s(st.median_tps))

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
        set_text(q("#requests", Label), fit(_request_parts(st, stalled, wait_s, now_ns), self.size.width - 4 - 9)
                 if self.size.width > 13 else
                 f"[b]{st.in_flight}[/] in flight{stall}  [$success]{st.requests_ok} ok[/]  "
                 f"[{err_style}]{st.requests_err} err[/]" + bound)

        # the count and range, or the count alone, or nothing: whole where the card is narrow (three lanes at
        # 160x45 read `n=9 · 42…`)
        n_ttft = len(st.ttft_history)
        ttft_lab = q("#ttft-label", Label)
        set_text(ttft_lab, _whole(ttft_lab, [f"n={n_ttft} · {fmt.span(st.ttft_history, 's')}", f"n={n_ttft}"])
                 if n_ttft > 1 else "")
        n_tps = len(st.tps_history)
        tps_lab = q("#tps-label", Label)
        forms = [f"n={n_tps} · {fmt.span(st.tps_history, 'tok/s')}", f"n={n_tps}"] if n_tps > 1 else []
        count = _whole(tps_lab, forms, used=len("est.  ") if est else 2)
        set_text(tps_lab, est.strip() + ("  " + count if count else ""))
        q("#server", ServerGauges).update_from(st.server)
        shown = gpu or st.gpu.configured
        self.set_class(shown, "-gpu")
        if shown:
            set_text(q("#gpu", Label), gpu_markup(st.gpu))

        if self.compact:
            room = self.size.width - 2 - (len(self.lane) + 3) - (len(text) + 2) - 1
            set_text(q("#brief", Label), fit(_brief_parts(st, stalled, wait_s), room))

        errors = list(st.errors)[-ERRORS_SHOWN:][::-1]
        set_text(q("#errors-title", Label), errors_title(st))
        box = q("#errors", Static)
        if errors:
            rows = box.styles.max_height
            rows = int(rows.value) if rows is not None and rows.is_cells else ERRORS_SHOWN
            width = box.content_region.width or self.size.width
            # a lane back from an outage: that outage's errors are past (said so, with how long ago it came back)
            was = ((st.down_t, st.up_again_t, max(now_ns, st.up_again_t)) if st.up and st.down_t is not None
                   and st.up_again_t is not None else None)
            lines = error_lines(errors, st.url, width, rows, wrap_first=self.has_class("-narrow"), was=was)
            set_text(box, "\n".join(lines))
        else:
            set_text(box, "[dim]no errors[/]")  # its title is hidden on a short screen


def short_url(url: str, room: int) -> str:
    """The lane's URL in ``room`` columns: whole, then without the scheme, then without the path; the host
    and port always stay (``127.0.0.1:37581``, where ``http://127.0.0.1:37581/v1`` does not fit)."""
    rest = url.split("://", 1)[-1].rstrip("/")
    host = rest.split("/", 1)[0]
    for text in (url, rest, host):
        if len(text) <= room:
            return text
    return host or url


def errors_title(st: LaneState) -> str:
    """``errors  2 requests · 5 health checks``: the same request count as the card's ``err``, the failed
    ``GET /models`` probes apart (a lane that is down fails those, and sends no request)."""
    parts = []
    if st.requests_err:
        parts.append(f"{st.requests_err} request{'s' * (st.requests_err != 1)}")
    failed = getattr(st, "probes_failed", 0)
    if failed:
        parts.append(f"{failed} failed health check{'s' * (failed != 1)}")
    return f"errors  [dim]{' · '.join(parts)}[/]" if parts else "errors"


def _request_parts(st: LaneState, stalled: int, wait_s: float, now_ns: int) -> list[tuple[int, str, str]]:
    """The requests row as ``(priority, markup, plain)`` for :func:`fit`: ok and err always (a count is never
    cut from its label), then stalls, in flight and the flagged counts as they fit."""
    err_style = "$error" if st.requests_err else "$text-muted"
    parts = [(0, f"[$success]{st.requests_ok} ok[/]", f"{st.requests_ok} ok"),
             (0, f"[{err_style}]{st.requests_err} err[/]", f"{st.requests_err} err")]
    if stalled:
        parts.append((1, f"[$warning b]{stalled} stalled {wait_s:.0f} s[/]", f"{stalled} stalled {wait_s:.0f} s"))
    # none in flight says less than a flagged count: it goes first where the row is short
    parts.append((2 if st.in_flight else 4, f"[b]{st.in_flight}[/] in flight", f"{st.in_flight} in flight"))
    if st.client_bound:  # lanemon itself was starved while these ran: counted, not plotted as lane speed
        hot = st.last_client_bound_t is not None and now_ns - st.last_client_bound_t < 5_000_000_000
        parts.append((3, f"[{'$warning b' if hot else '$warning'}]{st.client_bound} client-bound[/]",
                      f"{st.client_bound} client-bound"))
    for n, word in ((getattr(st, "requests_truncated", 0), "truncated"), (getattr(st, "requests_empty", 0), "empty"),
                    (getattr(st, "bursts", 0), "burst")):
        if n:
            parts.append((3, f"[$warning]{n} {word}[/]", f"{n} {word}"))
    return parts


def gpu_markup(gpu) -> str:
    """The GPU row: ``folds.dashboard.gpu_text`` (utilisation, power, temperature, memory or "unified"),
    dim when it is one word (untracked, waiting), in the warning colour when the GPU throttles or logged an
    XID."""
    from lanemon.folds.dashboard import gpu_text

    text = escape(gpu_text(gpu))
    if not gpu.last:
        return f"[dim]{text}[/]"
    s = gpu.summary()
    return f"[$warning]{text}[/]" if s["throttle"] or s["xid"] else text


def _brief_parts(st: LaneState, stalled: int, wait_s: float) -> list[tuple[int, str, str]]:
    """A one-line row's figures as ``(priority, markup, plain)``: the latest TTFT and decode rate
    first, then errors and stalls, in flight, ok, the flagged counts, the model last."""
    ttft, tps = fmt.seconds(st.last_ttft_s), fmt.tok_s(st.last_tps)
    est = " est." if st.tokens_estimated else ""
    parts = [(0, f"[dim]TTFT[/] [b]{ttft}[/]", f"TTFT {ttft}")]
    if st.last_tps is not None:
        parts.append((1, f"[b]{tps}[/]{est}", f"{tps}{est}"))
    parts.append((4, f"[$success]{st.requests_ok} ok[/]", f"{st.requests_ok} ok"))
    if st.requests_err:
        parts.append((2, f"[$error b]{st.requests_err} err[/]", f"{st.requests_err} err"))
    if stalled:
        parts.append((2, f"[$warning b]{stalled} stalled {wait_s:.0f} s[/]", f"{stalled} stalled {wait_s:.0f} s"))
    if st.in_flight:
        parts.append((3, f"[b]{st.in_flight}[/] in flight", f"{st.in_flight} in flight"))
    flagged = sum(getattr(st, name, 0) for name in ("client_bound", "requests_truncated", "requests_empty", "bursts"))
    if flagged:
        parts.append((5, f"[$warning]{flagged} flagged[/]", f"{flagged} flagged"))
    if st.model:
        parts.append((6, f"[dim]{escape(st.model)}[/]", st.model))
    return parts


def _whole(label: Label, forms: list[str], used: int = 0) -> str:
    """The first of ``forms`` (plain text, fullest first) that fits the label's width beside ``used`` cells,
    dimmed; nothing when none does (never a figure cut by the ellipsis).  Before the first layout: the first."""
    room = label.size.width - used if label.size.width else None
    fits = [f for f in forms if room is None or len(f) <= room]
    return f"[dim]{escape(fits[0])}[/]" if fits else ""


def _figure_row(key: str, prefix: str) -> Horizontal:
    """``TTFT  169 ms  med 172 ms  n=12 · 163–199 ms``: the latest, the median, the count and range."""
    return Horizontal(Label(key, classes="key"), Label("—", id=f"{prefix}-last", classes="val"),
                      Label("med", classes="med"), Label("—", id=f"{prefix}-median", classes="val"),
                      Label("", id=f"{prefix}-label", classes="spark-label"), classes="row")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


CUT_NOTE = " e: whole"
"""After the ``…`` of the first error line a card cuts: ``e`` opens the errors screen, every message whole."""


def _error_parts(t: int, cls: str, msg: str, url: str = "", was: tuple[int, int, int] | None = None
                 ) -> list[tuple[str, str]]:
    """``+7.2s http 503 Service Unavailable`` as ``(text, style)`` pieces; lanemon's own cancellations are
    muted.  The lane's own URL (on the card already) is left out of the message (``connection refused
    (/models)``), and a class the message starts with is not said twice (``connect connection refused``).
    ``was``: (outage start, back up, now) of a lane that came back: an error of that outage is said to be
    past, ``was down +2.1s connection refused (/models) · up again 40 s ago``, muted."""
    if was is not None and was[0] <= t < was[1]:
        age = max(0, (was[2] - was[1]) // 1_000_000_000)
        parts = _error_parts(t, cls, msg, url)
        return ([("was down ", "dim")] + [(text, "dim" if style else "") for text, style in parts]
                + [(f" · up again {age} s ago", "dim")])
    style = "$text-muted b" if cls == "cancelled" else "$error b"
    text = _one_line(inert(msg))
    base = url.rstrip("/")
    if base and len(base) > 8:
        text = " ".join(text.replace(base, "").split())
    when = (fmt.event_time(t), "dim")
    if text and text.lower().startswith(cls.lower()):
        return [when, (" ", ""), (text, style)]
    tail = [(f" {text}", "")] if text and text != cls else []
    return [when, (" ", ""), (_one_line(inert(cls)), style), *tail]


def _markup(parts: list[tuple[str, str]], start: int, end: int) -> str:
    """The characters ``start:end`` of the pieces' joined text, as markup in their styles."""
    out, at = [], 0
    for text, style in parts:
        lo, hi = max(start, at), min(end, at + len(text))
        if lo < hi:
            piece = escape(text[lo - at:hi - at])
            out.append(f"[{style}]{piece}[/]" if style else piece)
        at += len(text)
    return "".join(out)


def wrap_spans(text: str, width: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text`` word-wrapped to ``width`` cells (a word longer than a line is
    folded; the spaces a line breaks at are dropped)."""
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    width = max(1, width)
    while start < n:
        if spans:
            while start < n and text[start] == " ":
                start += 1
            if start >= n:
                break
        used, end, space = 0, start, -1
        while end < n and used + cell_len(text[end]) <= width:
            if text[end] == " ":
                space = end
            used += cell_len(text[end])
            end += 1
        if end < n and text[end] != " " and space > start:
            end = space
        end = max(end, start + 1)
        spans.append((start, end))
        start = end
    return spans


def _fitting(text: str, start: int, width: int) -> int:
    """The end of the longest run of ``text`` from ``start`` that fits ``width`` cells."""
    used, end = 0, start
    while end < len(text) and used + cell_len(text[end]) <= width:
        used += cell_len(text[end])
        end += 1
    return end


def error_lines(errors: list[tuple[int, str, str]], url: str, width: int, rows: int, *,
                wrap_first: bool = False, was: tuple[int, int, int] | None = None) -> list[str]:
    """The card's error lines (markup, newest first) in ``rows`` lines of ``width`` cells: the newest wrapped
    over as many lines as it needs where ``wrap_first`` (a narrow card: the reason rather than the older
    errors), the others one line each.  A message cut ends in ``…``, and the first cut one says where the whole
    is (:data:`CUT_NOTE`: the errors screen): never a message cut with nothing saying so."""
    out: list[str] = []
    noted = False
    for i, (t, cls, msg) in enumerate(errors):
        room = rows - len(out)
        if room <= 0:
            break
        parts = _error_parts(t, cls, msg, url, was)
        plain = "".join(text for text, _ in parts)
        if width <= 0:  # not laid out yet: one line each, the label's ellipsis cuts it
            out.append(_markup(parts, 0, len(plain)))
            continue
        spans = wrap_spans(plain, width) if wrap_first and i == 0 else [(0, len(plain))]
        cut = len(spans) > room or cell_len(plain[spans[-1][0]:]) > width
        spans = spans[:room]
        for start, end in spans[:-1]:
            out.append(_markup(parts, start, end))
        start, end = spans[-1]
        if not cut:
            out.append(_markup(parts, start, end))
            continue
        note = "" if noted or width < len(CUT_NOTE) + 12 else CUT_NOTE
        noted = noted or bool(note)
        end = _fitting(plain, start, width - 1 - len(note))
        while end > start + 1 and plain[end - 1] == " ":
            end -= 1
        out.append(_markup(parts, start, end) + "…" + (f"[dim]{note}[/]" if note else ""))
    return out
