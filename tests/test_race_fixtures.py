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


# -- typed races by hand (the verdict's words on figures chosen by the test) ----------------------------------
def race_lane(**figures):
    """A :class:`~lanemon.results.race.RaceLane`: ``figures`` set, every other field empty (no error)."""
    from lanemon.results.race import NO_ENERGY, RaceError, RaceLane

    blank = dict.fromkeys(("outcome", "ttft_s", "ttfo_s", "decode_tok_s", "output_tokens", "generated_tokens",
                           "reasoning_tokens", "reasoning_estimated", "tokens_estimated", "tokens_per_chunk",
                           "chunk_counts_estimated", "total_s", "finish_rank", "error"))
    error = figures.pop("error", None)
    if isinstance(error, dict):
        error = RaceError(cls=error["cls"], message=error.get("message", ""))
    return RaceLane(**{**NO_ENERGY, **blank, "flags": [], "text": "", "reasoning_text": "", **figures,
                       "error": error})


def typed_race(winner, lanes, margin=None, **kw):
    """A :class:`~lanemon.results.race.Race` of ``lanes`` (name -> figures for :func:`race_lane`); ``margin``: the
    keys of :class:`~lanemon.results.race.RaceMargin` given (the rest null); winners from the lanes."""
    from lanemon.results.race import Race, RaceMargin
    from lanemon.workloads.race import winners

    typed = {name: race_lane(**figures) for name, figures in lanes.items()}
    m = RaceMargin(**{**dict.fromkeys(RaceMargin.__struct_fields__), **(margin or {})})
    ranking = [n for n in (winner, m.runner_up) if n]
    return Race(**{"race": 1, "prompt": "p", "prompt_id": None, "category": None, "endpoint": None,
                   "max_tokens": None, "lanes": typed, "winner": winner, "margin": m,
                   "winners": winners(typed, ranking), "verdict": "", **kw})


def typed_result(races):
    """A :class:`~lanemon.results.race.RaceResult` of typed ``races`` (:func:`typed_race`), each lane's summary
    computed from them as ``race_results`` does (no goodput, no energy)."""
    from lanemon.results.race import RaceResult
    from lanemon.workloads.race import lane_summary

    names = list(dict.fromkeys(name for race in races for name in race.lanes))
    return RaceResult(bench="race", races=races, lanes={name: lane_summary(name, races, []) for name in names},
                      lanes_stat="last race" if len(races) == 1 else f"median of {len(races)} races")
