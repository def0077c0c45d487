"""The result table under a finished race: rank, TTFT, per-stream tok/s, output tokens, E2E and how far behind the
winner (the catalogue's labels, the race's own figures), the verdict above it."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from lanemon.measure.catalogue import label
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.format import ordinal
from lanemon.results.race import Race
from lanemon.reports.sections.race import behind_cells
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
        """One figure per column under the catalogue's label (the headless race table's), each the race's own
        (RaceLane): the last two say how far behind the winner each other lane finished, end to end."""
        table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold", expand=False)
        errors = any(r.error for r in race.lanes.values())
        behind = any(r.behind_s is not None for r in race.lanes.values())  # else two columns of dashes
        figures = FIGURES if behind else FIGURES[:4]
        for col, justify in (("lane", "left"), ("rank", "right"),
                             *((label(n), "right") for n in figures), *((("error", "left"),) if errors else ())):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for name, r in race.lanes.items():
            if r.error:
                table.add_row(name, "error", fmt.seconds(r.ttft_s), *("—" for _ in figures[1:]),
                              f"{r.error.cls}: {r.error.message}"[:60], style="red")
                continue
            tokens = "—" if r.output_tokens is None else f"{r.output_tokens} tok"
            if r.tokens_estimated:
                tokens += " est."
            rank = ordinal(r.finish_rank) if r.finish_rank else "—"
            delta, ratio = behind_cells(race, name)  # a tie says tie, the winner's row says winner
            table.add_row(name, rank, fmt.seconds(r.ttft_s), fmt.tok_s(r.decode_tok_s), tokens,
                          fmt.seconds(r.total_s), *((delta, ratio) if behind else ()), *(("",) if errors else ()))
        return table


FIGURES = ("ttft", "per_stream_tok_s", "output_tokens", "e2e", "race_behind", "race_behind_ratio")
"""The table's figures (catalogue entries; RaceLane: ttft_s, decode_tok_s, output_tokens, total_s, behind_s,
behind_ratio)."""
