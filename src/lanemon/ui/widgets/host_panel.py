"""This machine's CPU, memory and network (``host`` events), a strip under the lanes toggled with ``h``."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Sparkline

from lanemon.folds.dashboard import HostState
from lanemon.ui.widgets.repaint import set_text


def size(n: float | None, *, binary: bool = True) -> str:
    """``6.1 GiB``, ``85 MiB``, ``512 B`` (binary units for memory)."""
    if n is None:
        return "—"
    base = 1024.0 if binary else 1000.0
    units = ("B", "KiB", "MiB", "GiB", "TiB") if binary else ("B", "kB", "MB", "GB", "TB")
    v = float(n)
    for unit in units:
        if abs(v) < base or unit == units[-1]:
            if unit == "B":
                return f"{v:.0f} B"
            return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
        v /= base
    return f"{v:.0f} {units[-1]}"  # pragma: no cover


def rate(bps: float | None) -> str:
    """Network throughput in decimal units: ``1.2 MB/s``."""
    return "—" if bps is None else size(bps, binary=False) + "/s"


class HostPanel(Vertical):
    """CPU %, memory, network throughput and lanemon's own footprint, each with a sparkline.

    Hidden by default; the app's ``h`` key calls :meth:`toggle`.  Filled from
    :class:`~lanemon.folds.dashboard.HostState`, so a replay shows the recorded samples.
    """

    DEFAULT_CSS = """
    HostPanel {
        height: 4;
        border: round $primary 40%;
        border-title-color: $text-muted;
        background: $surface;
        padding: 0 1;
        margin: 0 1;
        display: none;
    }
    HostPanel.-shown { display: block; }
    HostPanel Horizontal { height: 2; }
    HostPanel .cell { width: 1fr; height: 2; margin-right: 2; }
    HostPanel #host-proc-cell { width: 18; margin-right: 0; }
    HostPanel Label { text-wrap: nowrap; text-overflow: ellipsis; width: 1fr; color: $text-muted; }
    HostPanel Sparkline { height: 1; background: $boost; }
    HostPanel #host-cpu-spark > .sparkline--max-color { color: $warning; }
    HostPanel #host-cpu-spark > .sparkline--min-color { color: $success 70%; }
    HostPanel #host-mem-spark > .sparkline--max-color { color: $secondary; }
    HostPanel #host-mem-spark > .sparkline--min-color { color: $secondary 35%; }
    HostPanel #host-net-spark > .sparkline--max-color { color: $primary; }
    HostPanel #host-net-spark > .sparkline--min-color { color: $primary 35%; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(classes="cell"):
                yield Label("CPU —", id="host-cpu")
                yield Sparkline([], id="host-cpu-spark")
            with Vertical(classes="cell"):
                yield Label("mem —", id="host-mem")
                yield Sparkline([], id="host-mem-spark")
            with Vertical(classes="cell"):
                yield Label("network —", id="host-net")
                yield Sparkline([], id="host-net-spark")
            with Vertical(classes="cell", id="host-proc-cell"):
                yield Label("lanemon —", id="host-proc")

    def on_mount(self) -> None:
        self.border_title = "host"

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def toggle(self) -> bool:
        """Show or hide the panel; returns True when now shown."""
        self.toggle_class("-shown")
        return self.shown

    def update_from(self, st: HostState) -> None:
        if not self.shown:  # hidden: nothing to repaint (``h`` redraws it at once)
            return
        q = self.query_one
        d = st.last
        if not st.samples:
            self.border_title = "host  [dim]no samples in this session[/]"
            return
        title = f"host  [dim]{st.samples} samples[/]"
        if st.gpu.last:  # this machine's own GPUs (NVML, docs/GPU.md)
            from lanemon.ui.widgets.lane_panel import gpu_markup

            title += f"  GPU {gpu_markup(st.gpu)}"
        if title != self.border_title:
            self.border_title = title
        cpus = d.get("cpus")
        load = f" · load {d['load1']:.2f}" if d.get("load1") is not None else ""
        set_text(q("#host-cpu", Label), 
            f"CPU [$text][b]{d.get('cpu_pct', 0.0):.0f}%[/b][/]" + (f" [dim]· {cpus} cpus{load}[/]" if cpus else "")
        )
        q("#host-cpu-spark", Sparkline).data = list(st.cpu_pct)
        set_text(q("#host-mem", Label), 
            f"mem [$text][b]{size(d.get('mem_used'))}[/b][/] [dim]/ {size(d.get('mem_total'))}[/]"
            f" [b]{d.get('mem_pct', 0.0):.0f}%[/]"
        )
        q("#host-mem-spark", Sparkline).data = list(st.mem_pct)
        set_text(q("#host-net", Label), 
            f"net ↓ [$text][b]{rate(d.get('net_rx_Bps'))}[/b][/] ↑ [$text][b]{rate(d.get('net_tx_Bps'))}[/b][/]"
        )
        q("#host-net-spark", Sparkline).data = [rx + tx for rx, tx in zip(st.net_rx_Bps, st.net_tx_Bps)]
        proc = "lanemon —"
        if d.get("proc_rss") is not None:
            proc = (f"lanemon [$text][b]{d.get('proc_cpu_pct', 0.0):.0f}%[/b][/] CPU"
                    f"\n[$text][b]{size(d['proc_rss'])}[/b][/] RSS")
        set_text(q("#host-proc", Label), proc)
