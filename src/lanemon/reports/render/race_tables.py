"""Races as Rich tables for the terminal (``lanemon race`` without the UI): one table per race.

The race workload (:mod:`lanemon.workloads.race`) measures and returns typed results
(:mod:`lanemon.results.race`); drawing them is done here, with the screens' number formats
(:mod:`lanemon.reports.format`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lanemon.measure.catalogue import label
from lanemon.reports.format import ordinal, seconds, tok_s

if TYPE_CHECKING:
    from lanemon.results.race import Race


def race_table(race: Race, title: str | None = None):
    """A Rich table of one race: TTFT, decode tok/s, output tokens, total time, rank."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("lane", style="bold")
    table.add_column("rank", justify="right")
    table.add_column(label("ttft"), justify="right")
    thinking = any(r.reasoning_tokens for r in race.lanes.values())
    if thinking:
        table.add_column(label("ttfo"), justify="right")
    for name in ("per_stream_tok_s", "output_tokens", "e2e"):  # the catalogue's labels
        table.add_column(label(name), justify="right")
    for name, r in race.lanes.items():
        rank = ordinal(r.finish_rank) if r.finish_rank else ("error" if r.error else "—")
        ttfo = [seconds(r.ttfo_s)] if thinking else []
        if r.error:
            table.add_row(name, f"[red]{rank}[/]", seconds(r.ttft_s), *ttfo, "—", "—", f"[red]{r.error.cls}[/]")
            continue
        tokens = "—" if r.output_tokens is None else f"{r.output_tokens} tok"
        if r.tokens_estimated:
            tokens += " est."
        if r.reasoning_tokens:
            tokens += f" + {r.reasoning_tokens} think" + (" est." if r.reasoning_estimated else "")
        table.add_row(name, rank, seconds(r.ttft_s), *ttfo, tok_s(r.decode_tok_s), tokens, seconds(r.total_s))
    return table
