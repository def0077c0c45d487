"""The result table under a finished race: TTFT, decode tok/s, output tokens, total, rank, verdict."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.format import ordinal
from lanemon.results.race import Race
from lanemon.workloads.race import verdict


class RaceResults(Vertical):
    """Shown once the race is over (``display`` is off while it runs)."""

    DEFAULT_CSS = """
    RaceResults {
        height: auto;
        margin: 0 1;
        padding: 0 1;
        border: round $accent 50%;
        border-title-color: $text-muted;
        background: $surface;
    }
    RaceResults #verdict { text-style: bold; color: $success; margin-bottom: 0; width: 1fr; height: auto;
                           max-height: 3; }
    RaceResults #verdict.-none { color: $error; }
    RaceResults #table { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="verdict")
        yield Static("", id="table")

    def on_mount(self) -> None:
        self.border_title = "result"

    def update_from(self, race: Race | None) -> None:
        """``race`` is one race of the race result (None hides the panel)."""
        self.display = race is not None
        if race is None:
            return
        line = verdict(race)
        verdict_label = self.query_one("#verdict", Label)
        verdict_label.update(escape(line))
        verdict_label.set_class(race.winner is None, "-none")
        self.query_one("#table", Static).update(self._table(race))

    @staticmethod
    def _table(race: Race) -> Table:
        table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold", expand=False)
        for col, justify in (("lane", "left"), ("rank", "right"), ("TTFT", "right"), ("decode", "right"),
                             ("output", "right"), ("total", "right"), ("", "left")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        winner = race.lanes.get(race.winner or "")
        for name, r in race.lanes.items():
            if r.error:
                table.add_row(name, "error", fmt.seconds(r.ttft_s), "—", "—", "—",
                              f"{r.error.cls}: {r.error.message}"[:60], style="red")
                continue
            tokens = "—" if r.output_tokens is None else f"{r.output_tokens} tok"
            if r.tokens_estimated:
                tokens += " est."
            note = ""
            if winner is not None and r is not winner and winner.total_s and r.total_s is not None:
                note = f"+{fmt.seconds(r.total_s - winner.total_s)}  ×{r.total_s / winner.total_s:.2f}"
            rank = ordinal(r.finish_rank) if r.finish_rank else "—"
            table.add_row(name, rank, fmt.seconds(r.ttft_s), fmt.tok_s(r.decode_tok_s), tokens,
                          fmt.seconds(r.total_s), note)
        return table
