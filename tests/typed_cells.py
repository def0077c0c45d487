"""Full decode / prefill / needles cells for tests that build a result by hand.

Since issue 37 a cell's Struct (lanemon/results/{decode,prefill,needles}.py) requires every key its bench's
--json always carries, so a hand-made cell starts from one of these and overrides what the test is about:
``decode_cell(aggregate_tok_s=900.0, unreliable=True)``.  The keys are those of a real cell of
``lanemon bench decode|prefill|needles --demo --time-scale 0.02 --json`` (energy keys left out: attached after,
optional); each value is neutral (a figure ``None``, a count 0, a flag False, no reps), so a key the test does
not set says "not measured" and never decides a result (e.g. no ``steady_tok_s``: the level is judged on its span,
as a recording made before steady figures were measured).
"""

from __future__ import annotations

import copy
from typing import Any

DECODE_CELL: dict[str, Any] = {
    "ttft_p50_s": None, "requests": 0, "errors": 0, "truncated": 0, "empty": 0, "bursts": 0,
    "tokens_estimated": False, "ttfo_s": None, "reasoning_tokens": None, "reasoning_estimated": False,
    "reasoning_split_estimated": 0, "tokens_per_chunk": None, "itl_p50_s": None, "itl_per_token_p50_s": None,
    "chunk_counts_estimated": None, "reps": [], "min": None, "median": None, "max": None, "unstable": False,
    "error": None, "client_bound": 0, "starved_s": None, "starved_share": None, "unreliable": False,
    "steady_tok_s": None, "steady_reps": [], "steady_window_s": None, "steady_unstable": False,
    "aggregate_tok_s": None, "ttft_p50_reps": [], "ttft_p90_s": None, "ttft_p99_s": None, "ttft_n": 0,
    "ttft_max_s": None, "per_stream_tok_s_p50": None, "output_tokens": 0,
}
"""A decode level (``levels.C``): every required key, nothing measured."""

DECODE_CATEGORY_CELL: dict[str, Any] = {
    "ttft_p50_s": None, "requests": 0, "errors": 0, "truncated": 0, "empty": 0, "bursts": 0,
    "tokens_estimated": False, "ttfo_s": None, "reasoning_tokens": None, "reasoning_estimated": False,
    "reasoning_split_estimated": 0, "tokens_per_chunk": None, "itl_p50_s": None, "itl_per_token_p50_s": None,
    "chunk_counts_estimated": None, "reps": [], "min": None, "median": None, "max": None, "unstable": False,
    "error": None, "client_bound": 0, "starved_s": None, "starved_share": None, "unreliable": False,
    "per_stream_tok_s": None,
}
"""A decode category at C1 (``categories.CAT``): every required key, nothing measured."""

PREFILL_CELL: dict[str, Any] = {
    "prompt_tokens": None, "prefill_tok_s": None, "ttft_s": None, "cache_hit_tok_s": None, "repeat_tok_s": None,
    "repeat_cached_tokens": None, "cache_hit_source": None, "tokens_estimated": False, "requests": 0, "errors": 0,
    "truncated": 0, "empty": 0, "bursts": 0, "error": None,
}
"""A prefill length (``lengths.N``): every required key, nothing measured."""

NEEDLE_CELL: dict[str, Any] = {"found": None, "error": None, "found_count": 0, "runs_count": 0}
"""A needles length (``lengths.N``): every required key, nothing measured."""


def decode_cell(**over: Any) -> dict[str, Any]:
    """A full decode level with ``over`` replacing its keys."""
    return {**copy.deepcopy(DECODE_CELL), **over}


def category_cell(**over: Any) -> dict[str, Any]:
    """A full decode category cell with ``over`` replacing its keys."""
    return {**copy.deepcopy(DECODE_CATEGORY_CELL), **over}


def prefill_cell(**over: Any) -> dict[str, Any]:
    """A full prefill length with ``over`` replacing its keys."""
    return {**copy.deepcopy(PREFILL_CELL), **over}


def needle_cell(**over: Any) -> dict[str, Any]:
    """A full needles length with ``over`` replacing its keys."""
    return {**copy.deepcopy(NEEDLE_CELL), **over}


def _fill(d: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    for k, v in keys.items():
        d.setdefault(k, copy.deepcopy(v))
    return d


_RUN = {"interrupted": False, "cut": [], "config": {}}
_PREFILL_LANE = {"tokens_per_char": None, "tokens_counted_from": None, "calibration_prompt_tokens": None,
                 "max_context": None, "max_context_source": None, "error": None}


def full_result(result: dict[str, Any]) -> dict[str, Any]:
    """A hand-made decode / prefill / needles result (its JSON form) with every key its Struct requires that the
    test left out, at the neutral values above (in place; returned): the run's keys (not interrupted, nothing
    cut, no config), each lane's, each cell's.  A decode crossover given as ``between`` and the two leaders gets
    its ``compared`` lanes and its one change; a decode without one gets ``crossover: null`` (none)."""
    bench = result.get("bench")
    lanes = result.setdefault("lanes", {})
    _fill(result, _RUN)
    if bench == "decode":
        _fill(result, {"client_load": {"watched": False, "starved_windows": 0, "max_lag_ms": None}})
        x = result.setdefault("crossover", None)
        if isinstance(x, dict):
            _fill(x, {"compared": list(lanes)[:2], "levels": [],
                      "changes": [{k: x[k] for k in ("leader_before", "leader_after", "between")}]})
        for lane in lanes.values():
            _fill(lane, {"levels": {}, "categories": {}})
            for c in lane["levels"].values():
                _fill(c, DECODE_CELL)
            for c in lane["categories"].values():
                _fill(c, DECODE_CATEGORY_CELL)
    elif bench == "prefill":
        for lane in lanes.values():
            _fill(lane, {"lengths": {}, **_PREFILL_LANE})
            for c in lane["lengths"].values():
                _fill(c, PREFILL_CELL)
    elif bench == "needles":
        for lane in lanes.values():
            _fill(lane, {"lengths": {}})
            for c in lane["lengths"].values():
                _fill(c, NEEDLE_CELL)
    return result


def typed_decode(result: dict[str, Any]) -> Any:
    """A hand-made decode result (its JSON form, ``bench`` may be left out) as the typed
    :class:`~lanemon.results.decode.DecodeResult` the report's sections and tables read (the keys it leaves out
    neutral: :func:`full_result`)."""
    from lanemon.results.common import as_result
    from lanemon.results.decode import DecodeResult

    return as_result(full_result({"bench": "decode", **copy.deepcopy(result)}), DecodeResult)


def typed_levels(per: dict[Any, dict[str, Any]]) -> dict[Any, Any]:
    """Hand-made decode levels (``{level: keys}``, e.g. a cell's energy block) as typed
    :class:`~lanemon.results.decode.DecodeCell`\\ s, the keys left out neutral."""
    from lanemon.results.common import as_result
    from lanemon.results.decode import DecodeCell

    return {k: as_result(decode_cell(**v), DecodeCell) for k, v in per.items()}
