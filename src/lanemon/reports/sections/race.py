"""Races section: the same prompt to every lane at once, per-lane TTFT / tok/s / total, winner and margin."""

from __future__ import annotations

from typing import Any

from lanemon.reports.data import race_wins
from lanemon.reports.format import clip, err_text, num, secs, tok
from lanemon.reports.sections.section import Section
from lanemon.workloads.race import TIE_S


def race_section(race: dict[str, Any], order: list[str]) -> Section:
    races = race.get("races") or []
    lanes = [n for n in order if any(n in (r.get("lanes") or {}) for r in races)]
    for r in races:
        for n in r.get("lanes") or {}:
            if n not in lanes:
                lanes.append(n)
    headers = ["Race", "Prompt"] + [f"{n} TTFT / tok/s / total / tokens" for n in lanes] + ["Winner", "Verdict"]
    rows = []
    for r in races:
        row = [str(r.get("race", "")), clip(r.get("prompt") or "", 40)]
        for n in lanes:
            c = (r.get("lanes") or {}).get(n)
            if not c:
                row.append("—")
            elif c.get("error"):
                row.append(f"error: {err_text(c['error'], 30)}")
            else:
                burst = " (burst)" if "burst" in (c.get("flags") or ()) else ""
                row.append(f"{secs(c.get('ttft_s'))} / {tok(c.get('decode_tok_s'))}{burst}"
                           f"{' ~' if c.get('tokens_estimated') else ''} / {secs(c.get('total_s'))}"
                           f" / {c.get('generated_tokens') if c.get('generated_tokens') is not None else '—'}")
        row.append(r.get("winner") or "—")
        row.append(r.get("verdict") or margin_text(r.get("margin")))
        rows.append(row)
    wins = race_wins(race)
    caption = ("Same prompt sent to every lane at once; the winner is the first to complete (a truncated or "
               "empty reply never wins). The verdict names the end-to-end, per-token and first-token winners apart.")
    if wins:
        caption += " Wins: " + ", ".join(f"{n} {wins.get(n, 0)}" for n in lanes) + f" of {len(races)}."
    return Section("race", "Races", caption, headers, rows)


def margin_text(m: Any) -> str:
    """The margin column of a race without a verdict sentence (older recordings), from its margin
    (``total_s_delta`` = runner-up's E2E − winner's, ``total_s_ratio``), with the sign said honestly as the
    race's own verdict says it (:func:`lanemon.workloads.race.verdict`):

    * ``0.20 s (1.12×)`` -- the winner took less time end to end;
    * ``tie (under 1 ms)`` -- a gap that rounds to 0 ms (which end was read first is chance), never
      ``0 ms`` or ``-0 ms``;
    * ``first on the clock, 12 ms slower end to end (sent sooner)`` -- the winner's request was sent
      sooner and took longer, never ``-12 ms``.
    """
    if not isinstance(m, dict) or not m:
        return "—"
    delta, ratio = num(m.get("total_s_delta")), num(m.get("total_s_ratio"))
    if delta is None:
        return "—"
    if abs(delta) < TIE_S:
        return "tie (under 1 ms)"
    if delta < 0:
        return f"first on the clock, {_duration(-delta)} slower end to end (sent sooner)"
    return _duration(delta) + (f" ({ratio:.2f}×)" if ratio else "")


def _duration(seconds: float) -> str:
    """``0.51 s`` / ``12 ms`` (a positive gap)."""
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1000:.0f} ms"
