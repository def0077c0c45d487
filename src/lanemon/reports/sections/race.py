"""Races section: the same prompt to every lane at once, per-lane TTFT / tok/s / total, winner and margin."""

from __future__ import annotations

from lanemon.reports.format import clip, err_text, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.results.race import RaceMargin, RaceResult
from lanemon.workloads.race import TIE_S


def race_section(race: RaceResult, order: list[str]) -> Section:
    races = race.races
    lanes = [n for n in order if any(n in r.lanes for r in races)]
    for r in races:
        for n in r.lanes:
            if n not in lanes:
                lanes.append(n)
    headers = ["Race", "Prompt"] + [f"{n} TTFT / tok/s / total / tokens" for n in lanes] + ["Winner", "Verdict"]
    rows = []
    for r in races:
        row = [str(r.race), clip(r.prompt, 40)]
        for n in lanes:
            c = r.lanes.get(n)
            if c is None:
                row.append("—")
            elif c.error:
                row.append(f"error: {err_text(c.error, 30)}")
            else:
                burst = " (burst)" if "burst" in c.flags else ""
                row.append(f"{secs(c.ttft_s)} / {tok(c.decode_tok_s)}{burst}"
                           f"{' ~' if c.tokens_estimated else ''} / {secs(c.total_s)}"
                           f" / {c.generated_tokens if c.generated_tokens is not None else '—'}")
        row.append(r.winner or "—")
        row.append(r.verdict or margin_text(r.margin))
        rows.append(row)
    wins = {n: summary.wins for n, summary in race.lanes.items() if summary.wins}
    caption = ("Same prompt sent to every lane at once; the winner is the first to complete (a truncated or "
               "empty reply never wins). The verdict names the end-to-end, per-token and first-token winners apart.")
    if wins:
        caption += " Wins: " + ", ".join(f"{n} {wins.get(n, 0)}" for n in lanes) + f" of {len(races)}."
    return Section("race", "Races", caption, headers, rows)


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
