"""Per-lane progress of a bench: a bar, cells done/total, and the cell running now."""

from __future__ import annotations

from textual.widgets import Static

from lanemon.ui.format import markup_escape as escape

BAR = 16


def bar(done: int, total: int, width: int = BAR) -> str:
    """``█████░░░░░`` (plain text, deterministic)."""
    if total <= 0:
        return "░" * width
    full = min(width, round(width * done / total))
    return "█" * full + "░" * (width - full)


class BenchProgress(Static):
    """One line per lane: ``A  ████████░░░░░░░░  6/12  C4 rep 1``."""

    DEFAULT_CSS = """
    BenchProgress {
        height: auto;
        border: round $primary 40%;
        border-title-color: $text-muted;
        padding: 0 1;
        background: $surface;
    }
    """

    def on_mount(self) -> None:
        self.border_title = "progress"

    def update_from(self, rows: list[tuple[str, int, int, str | None]]) -> None:
        """``rows``: (lane, done, total, cell running now or None)."""
        width = max((len(r[0]) for r in rows), default=1)
        lines = []
        for lane, done, total, current in rows:
            colour = "$success" if total and done >= total else "$primary"
            now = f"  [$accent]▶ {escape(current)}[/]" if current else ""
            lines.append(f"[b]{escape(lane.ljust(width))}[/] [{colour}]{bar(done, total)}[/] "
                         f"{done:>3}/{total:<3}{now}")
        self.update("\n".join(lines) or "[dim]no cells planned[/]")
