"""A lane's server-side figures from its Prometheus ``/metrics`` (vLLM or SGLang), inside the lane panel.

Hidden until the lane's first successful scrape, and for good when the lane
has no ``/metrics``: a lane without them costs no screen space.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Sparkline

from lanemon.folds.dashboard import ServerMetricsState
from lanemon.measure.server import DIALECT_NAMES
from lanemon.results.counters import EngineCounters
from lanemon.ui import format as fmt
from lanemon.ui.format import fit
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.repaint import set_text

ENGINE_NAMES = DIALECT_NAMES
BAR_WIDTH = 16
NARROW = 38
"""Gauges narrower than this drop the KV bar (its figure stays)."""
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float | None, width: int = BAR_WIDTH) -> str:
    """A horizontal gauge of ``width`` cells in eighth blocks (``█████▌      ``)."""
    if fraction is None:
        return " " * width
    f = max(0.0, min(1.0, fraction))
    eighths = round(f * width * 8)
    full, part = divmod(eighths, 8)
    out = "█" * full + (_EIGHTHS[part] if part and full < width else "")
    return out.ljust(width)


def pct(fraction: float | None) -> str:
    if fraction is None:
        return "—"
    if 0 < fraction < 0.0005:
        return "<0.1%"
    return f"{fraction * 100:.1f}%" if fraction < 0.1 else f"{fraction * 100:.0f}%"


class ServerGauges(Vertical):
    """Running/waiting, KV-cache usage, generation and prompt throughput, prefix-cache hit rate."""

    DEFAULT_CSS = """
    ServerGauges {
        height: auto;
        display: none;
    }
    ServerGauges.-shown { display: block; }
    ServerGauges .srow { height: 1; }
    ServerGauges Label { text-wrap: nowrap; text-overflow: ellipsis; }
    ServerGauges #srv-title { width: 1fr; color: $text-muted; }
    ServerGauges .skey { width: auto; min-width: 16; margin-right: 1; color: $text-muted; }
    ServerGauges #srv-kv-bar { width: 12; color: $secondary; background: $primary 15%; }
    ServerGauges #srv-kv-bar.-high { color: $warning; }
    ServerGauges #srv-kv-val { margin-left: 1; width: 1fr; }
    ServerGauges #srv-prompt { width: 1fr; }
    ServerGauges #srv-session { width: 1fr; }  /* the engine's counters since the session began */
    ServerGauges .skey-kv { width: 3; color: $text-muted; }
    /* too narrow for the KV bar and its figure (8 lanes at 240x70): the figure alone, not a cut bar */
    ServerGauges.-narrow #srv-kv-bar { display: none; }
    ServerGauges.-narrow .skey { min-width: 0; }
    /* the history is on the dashboard's shared server charts; the data stays here, never drawn */
    ServerGauges Sparkline { display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._built = False

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    def compose(self) -> ComposeResult:
        return []  # built on the first data (a lane without /metrics carries no gauge widgets)

    def _build(self) -> None:
        self._built = True
        self.mount_all([
            Label("server", id="srv-title"),
            Horizontal(Label("running —", id="srv-run", classes="skey"), Sparkline([], id="srv-run-spark"),
                       Label("KV", classes="skey-kv"), Label(bar(None, 12), id="srv-kv-bar"),
                       Label("—", id="srv-kv-val"), classes="srow"),
            Horizontal(Label("gen —", id="srv-gen", classes="skey"), Sparkline([], id="srv-gen-spark"),
                       Label("prompt —", id="srv-prompt"), Sparkline([], id="srv-prompt-spark"),
                       classes="srow"),
            Label("", id="srv-session", classes="srow"),
        ])

    def update_from(self, st: ServerMetricsState) -> None:
        """Redraw from the lane's folded server metrics (shown once a scrape succeeded)."""
        shown = st.available is True or bool(st.last)
        self.set_class(shown, "-shown")
        if not shown:
            return
        if not self._built:
            self._build()
            self.call_after_refresh(self.update_from, st)
            return
        q = self.query_one
        d = st.last
        engine = ENGINE_NAMES.get(st.engine or "", st.engine or "?")
        hit = d.get("prefix_hit_rate")
        # the title's parts as (priority, markup, plain): as many as fit, none cut from its value
        width = self.size.width or 10_000
        if st.simulates:  # the engine the simulator simulates and, where it fits beside the TTFT, whose /metrics
            # names it speaks (`server  tensorfold-exl3 (sim, vLLM /metrics)`)
            plain = f"server  {st.simulates} (sim, {engine} /metrics)"
            tail = f", {escape(engine)} /metrics" if len(plain) + len("  TTFT 999 ms") <= width else ""
            name = escape(st.simulates)
            # `server  tensorfold-exl3 (sim)` where it fits, else shorter whole forms (a 30-column card read
            # `server  tensorfold-exl3 (si…`)
            forms = [(f"server  [$text][b]{name}[/b][/] (sim{tail})", f"server  {st.simulates} (sim{tail})"),
                     (f"server [$text][b]{name}[/b][/] (sim)", f"server {st.simulates} (sim)"),
                     (f"[$text][b]{name}[/b][/] (sim)", f"{st.simulates} (sim)")]
            parts = [(0, *next((f for f in forms if len(f[1]) <= width), forms[-1]))]
        else:
            parts = [(0, f"server  [$text][b]{escape(engine)}[/b][/] /metrics", f"server  {engine} /metrics")]
        if st.error:
            err = " ".join(st.error.split())
            parts.append((1, f"[$warning]{escape(err)}[/]", err))
        tm = st.timings  # the engine's own TTFT (its histograms, last interval with finished requests)
        if tm.ttft_s is not None:
            ttft = fmt.seconds(tm.ttft_s)
            parts.append((2, f"TTFT [$text][b]{ttft}[/b][/]", f"TTFT {ttft}"))
            if tm.queue_s is not None and tm.prefill_s is not None:
                split = f"(queue {fmt.seconds(tm.queue_s)}, prefill {fmt.seconds(tm.prefill_s)})"
                parts.append((4, f"[dim]{split}[/]", split))
        if hit is not None:
            parts.append((3, f"prefix hit [$text][b]{pct(hit)}[/b][/]", f"prefix hit {pct(hit)}"))
        if not st.error and d.get("latency_s") is not None:
            lat = fmt.seconds(d["latency_s"])
            parts.append((5, f"[dim]scrape {lat}[/]", f"scrape {lat}"))
        set_text(q("#srv-title", Label), fit(parts, width))

        running, waiting = d.get("running"), d.get("waiting")
        wait_style = "$warning b" if waiting else "b"
        set_text(q("#srv-run", Label), 
            f"run [$text][b]{_int(running)}[/b][/]  wait [{wait_style}]{_int(waiting)}[/]"
        )
        q("#srv-run-spark", Sparkline).data = list(st.running)

        kv = d.get("kv_usage")
        kv_bar = q("#srv-kv-bar", Label)
        set_text(kv_bar, bar(kv, 12))
        kv_bar.set_class(kv is not None and kv >= 0.9, "-high")
        cap = d.get("kv_capacity_tokens")
        run_w = len(f"run {_int(running)}  wait {_int(waiting)}") + 1
        kv_room = width - max(run_w, 0 if self.has_class("-narrow") else 17) - 3 - (0 if self.has_class("-narrow") else 13)
        of = f" of {int(cap):,} tok" if cap else ""
        set_text(q("#srv-kv-val", Label), (f"[b]{pct(kv)}[/]" if kv is not None else "[dim]—[/]")
                                       + (f"[dim]{of}[/]" if of and len(pct(kv)) + len(of) <= kv_room else ""))

        gen = fmt.tok_s(d.get("gen_tok_s"))
        if not d.get("gen_tok_s") and st.gen_busy is not None and st.last_t is not None:
            # idle between a monitor's probes: the last rate the engine generated at, and how long ago
            gen = f"{fmt.tok_s(st.gen_busy[1])} {(st.last_t - st.gen_busy[0]) // 1_000_000_000} s ago"
        prompt = fmt.tok_s(d.get("prompt_tok_s"))
        computed = d.get("prompt_compute_tok_s")  # prefill actually computed, prefix-cache hits apart
        gen_w = max(len(f"gen {gen}") + 1, 0 if self.has_class("-narrow") else 17)
        room = width - gen_w
        unit = " tok/s"
        if len(f"prompt {prompt}") > room and gen.endswith(unit) and prompt.endswith(unit):
            gen = gen[: -len(unit)]  # 'gen 31.7  prompt 22.8 tok/s': one unit for both, no figure cut
            room += len(unit)
        if len(f"prompt {prompt}") > room:  # still too long (idle: `gen 63.3 tok/s 2 s ago`): left out whole,
            prompt = ""  # not `prom…`
        set_text(q("#srv-gen", Label), f"gen [$text][b]{gen}[/b][/]")
        q("#srv-gen-spark", Sparkline).data = list(st.gen_tok_s)
        extra = f" computed {fmt.tok_s(computed)}" if computed is not None else ""
        set_text(q("#srv-prompt", Label), "" if not prompt else f"prompt [$text][b]{prompt}[/b][/]"
                                       + (f"[dim]{extra}[/]" if extra and len(f"prompt {prompt}{extra}") <= room else ""))
        q("#srv-prompt-spark", Sparkline).data = list(st.prompt_tok_s)
        set_text(q("#srv-session", Label), session_markup(st.session_counters(), width))


def session_markup(c: EngineCounters | None, width: int | None = None) -> str:
    """The engine's counters since the session began (measure/counters.counters_text, short): ``session 12 req ·
    prefix hit 41% · 0 preempt · spec 62%``; a restart in the warning colour; nothing before two scrapes."""
    from lanemon.measure.counters import counters_text

    if c is None:
        return "[dim]session —[/]"
    text = counters_text(msgspec.structs.replace(c, restarts=UNSET), short=True)  # the restart said below
    items = text.split(" · ")
    while width and len(items) > 1 and len("session ") + len(" · ".join(items)) > width:
        items.pop()  # the last counters go whole where the row is narrow (`prefix hit…` at 30 columns)
    text = " · ".join(items)
    out = f"[dim]session[/] {escape(text)}" if text else "[dim]session —[/]"
    n = c.restarts if isinstance(c.restarts, int) else 0
    if n:
        out += f"  [$warning b]engine restarted{f' {n}×' if n > 1 else ''}[/]"
    return out


def _int(value: object) -> str:
    return "—" if value is None else f"{int(value)}"  # type: ignore[arg-type]
