"""Deterministic race events (fixed timings) for the race UI tests and snapshots."""

from __future__ import annotations

from lanemon import events as schema
from lanemon.events import Event

MS = 1_000_000
LANES = [
    {"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "deepseek-v4.1-flash-exl3"},
    {"name": "B", "url": "http://127.0.0.1:8888/v1", "model": "deepseek-v4.1-flash"},
]
TEXT_A = ("The harbour wakes before the town does. Gulls circle the breakwater while the first boats "
          "round the light, engines low, decks stacked with crates of silver fish.")
TEXT_B = ("Dawn comes grey over the harbour. One by one the trawlers slide past the harbour light "
          "and tie up along the quay, their crews already calling prices to the buyers.")


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


def _lane(lane: str, req: str, race: int, start: int, ttft_ms: int, step_ms: int, text: str,
          usage: bool = True, error: dict | None = None) -> list[Event]:
    meta = {"endpoint": "completions", "purpose": "race", "model": "m", "max_tokens": 64,
            "bench": "race", "race": race, "prompt_id": "harbour"}
    evs = [Event(start, schema.REQUEST, lane, req, meta),
           Event(start + ttft_ms * MS - 3 * MS, schema.FIRST_BYTE, lane, req, {"status": 200})]
    t = start + ttft_ms * MS
    pieces = _words(text)
    if error is not None:
        pieces = pieces[:5]
    for piece in pieces:
        evs.append(Event(t, schema.TOKEN, lane, req, {"text": piece}))
        t += step_ms * MS
    if error is not None:
        evs.append(Event(t, schema.ERROR, lane, req, error))
        return evs
    if usage:
        evs.append(Event(t, schema.USAGE, lane, req, {"prompt_tokens": 21, "completion_tokens": len(pieces) + 4}))
    evs.append(Event(t, schema.DONE, lane, req, {"finish_reason": "stop", "chunks": len(pieces)}))
    return evs


PROMPT = "In two short paragraphs of prose, describe a harbour at dawn as the fishing boats come back."


def race_events(races: int = 2, error_in_last: bool = False) -> list[Event]:
    """``races`` races of A (TTFT 170 ms, faster) against B (TTFT 220 ms, no usage block)."""
    evs: list[Event] = []
    for i, lane in enumerate(LANES):
        evs.append(Event(i * MS, schema.LANE, lane["name"], None, {"url": lane["url"], "model": lane["model"]}))
        evs.append(Event(10 * MS + i * MS, schema.PROBE, lane["name"], None,
                         {"ok": True, "latency_s": 0.004, "models": ["m"], "model": lane["model"]}))
    for r in range(1, races + 1):
        start = 1_000 * MS * r
        evs.append(Event(start, schema.MARK, None, None,
                         {"label": f"race {r}", "bench": "race", "phase": "start", "race": r, "prompt": PROMPT,
                          "prompt_id": "harbour", "category": "prose", "endpoint": "completions",
                          "max_tokens": 64, "lanes": ["A", "B"]}))
        err = None
        if error_in_last and r == races:
            err = {"cls": "http", "status": 503, "message": "HTTP 503: engine overloaded"}
        evs += _lane("A", f"A-r{r}", r, start + 1 * MS, 170 + 5 * r, 7, TEXT_A)
        evs += _lane("B", f"B-r{r}", r, start + 1 * MS, 220, 8, TEXT_B, usage=False, error=err)
        end = max(e.t for e in evs) + 1 * MS
        evs.append(Event(end, schema.MARK, None, None,
                         {"label": f"race {r}", "bench": "race", "phase": "end", "race": r,
                          "winner": "A"}))
    evs.sort(key=lambda e: e.t)
    return evs
