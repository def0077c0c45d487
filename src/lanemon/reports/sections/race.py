"""Races section: the same prompt to every lane at once: each race's winner and margin, then each lane's TTFT,
per-stream tok/s, output tokens and E2E in each race (one figure per column, the catalogue's labels)."""

from __future__ import annotations

from lanemon.measure.catalogue import NOT_MEASURED, label
from lanemon.reports.format import clip, err_text, ordinal, secs, tok
from lanemon.reports.format import seconds as seconds_text
from lanemon.reports.sections.section import Section
from lanemon.results.race import TIE_S, Race, RaceMargin, RaceResult


FIGURES = ("ttft", "per_stream_tok_s", "output_tokens", "e2e")
"""A lane's figures in one race (RaceLane: ttft_s, decode_tok_s, output_tokens, total_s), by catalogue entry."""


def race_section(race: RaceResult, order: list[str]) -> Section:
    """One row per race (its prompt, winner and verdict), then each lane in each race: one figure per column
    under the catalogue's label, from the race's RaceLane."""
    races = race.races
    lanes = [n for n in order if any(n in r.lanes for r in races)]
    for r in races:
        for n in r.lanes:
            if n not in lanes:
                lanes.append(n)
    thinking = any(c.reasoning_tokens for r in races for c in r.lanes.values())
    figures = FIGURES[:3] + (("reasoning_tokens",) if thinking else ()) + FIGURES[3:]
    headers = ["race", "prompt", "winner", "verdict"]
    rows = [[str(r.race), clip(r.prompt, 40), r.winner or NOT_MEASURED, r.verdict or margin_text(r.margin)]
            for r in races]
    lane_rows = []
    for r in races:
        for n in lanes:
            c = r.lanes.get(n)
            if c is None:
                continue
            if c.error:
                lane_rows.append([str(r.race), n, *(NOT_MEASURED for _ in figures),
                                  f"error: {err_text(c.error, 30)}"])
                continue
            cells = {"ttft": secs(c.ttft_s),
                     "per_stream_tok_s": tok(c.decode_tok_s),
                     "output_tokens": _tokens(c.output_tokens, c.tokens_estimated),
                     "reasoning_tokens": _tokens(c.reasoning_tokens, c.reasoning_estimated),
                     "e2e": secs(c.total_s)}
            lane_rows.append([str(r.race), n, *(cells[f] for f in figures),
                              ordinal(c.finish_rank) if c.finish_rank else NOT_MEASURED])
    caption = ("Same prompt sent to every lane at once; the winner is the first to complete (a truncated or "
               "empty reply never wins). The verdict names the end-to-end, per-token and first-token winners apart.")
    wins = {n: summary.wins for n, summary in race.lanes.items() if summary.wins}
    if wins:
        caption += " Wins: " + ", ".join(f"{n} {wins.get(n, 0)}" for n in lanes) + f" of {len(races)}."
    more = [("Each lane in each race", ["race", "lane", *(label(f) for f in figures), "rank"], lane_rows)]
    notes = ["~ after a token count: estimated from chunk counts (the server sent no usage)."] if any(
        c.tokens_estimated or c.reasoning_estimated for r in races for c in r.lanes.values()) else []
    notes += [f"race {r.race} {n}: a burst (its chunks were read in one go: no per-stream tok/s)"
              for r in races for n, c in r.lanes.items() if "burst" in c.flags]
    return Section("race", "Races", caption, headers, rows, notes=notes, more=more)


def _tokens(n: int | None, estimated: bool | None) -> str:
    return NOT_MEASURED if n is None else f"{n} tok" + (" ~" if estimated else "")


def margin_text(m: RaceMargin | None) -> str:
    """The margin column of a race without a verdict sentence, from its margin (``total_s_delta`` = runner-up's
    E2E − winner's, ``total_s_ratio``), with the sign said honestly as the race's own verdict says it
    (:func:`lanemon.workloads.race.verdict`):

    * ``0.20 s (1.12×)`` -- the winner took less time end to end;
    * ``tie (under 1 ms)`` -- a gap that rounds to 0 ms (which end was read first is chance), never
      ``0 ms`` or ``-0 ms``;
    * ``first on the clock, 12 ms slower end to end (sent sooner)`` -- the winner's request was sent
      sooner and took longer, never ``-12 ms``.
    """
    delta = m.total_s_delta if m is not None else None
    if delta is None:
        return "—"
    if abs(delta) < TIE_S:
        return "tie (under 1 ms)"
    if delta < 0:
        return f"first on the clock, {_duration(-delta)} slower end to end (sent sooner)"
    return _duration(delta) + (f" ({m.total_s_ratio:.2f}×)" if m is not None and m.total_s_ratio else "")


def _duration(seconds: float) -> str:
    """``0.51 s`` / ``12 ms`` (a positive gap)."""
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1000:.0f} ms"


TIE_WORD, WINNER_WORD = "tie", "winner"
"""What :func:`behind_cells` shows for a lane within ``TIE_S`` of the winner, and on the winner's own row."""


def behind_cells(race: Race, name: str) -> tuple[str, str]:
    """Lane ``name``'s two cells under the catalogue's ``race_behind`` and ``race_behind_ratio`` labels, the one
    wording every table of them uses (the race screen's result table): ``+0.15 s`` / ``×1.08`` behind the winner,
    ``-12 ms`` where the winner was sent sooner and took longer, ``tie`` / ``×1.00`` within ``TIE_S`` of it (the
    race verdict's threshold; never ``+0 µs``: which end was read first is chance, the verdict says ``finished
    together``), ``winner`` / ``—`` on the winner's own row, ``—`` where there is no figure (no winner, no E2E, an
    error).  --json keeps the numbers (``behind_s`` 0.0 for a tie, null for the winner)."""
    lane = race.lanes[name]
    if name == race.winner and lane.error is None:
        return WINNER_WORD, NOT_MEASURED
    s, x = lane.behind_s, lane.behind_ratio
    if s is None:
        delta = NOT_MEASURED
    else:
        delta = TIE_WORD if abs(s) < TIE_S else ("+" if s >= 0 else "-") + seconds_text(abs(s))
    return delta, NOT_MEASURED if x is None else f"×{x:.2f}"
