"""Numbers read from outside -- GPU telemetry, ``/metrics``, recordings -- checked against float range and
against what the hardware can physically report: one definition, read by the telemetry client (live) and by
every fold that reads a recorded ``gpu`` event (replay, reports), so live and replay drop the same values.

* :func:`number` -- a real number as a float, or None: bools, strings, NaN, infinities and integers past
  float's range (``10**400``: ``float()`` raises ``OverflowError`` on it) are not numbers here.
* :func:`within` -- :func:`number` and inside ``[lo, hi]``.
* :data:`GPU` -- per GPU key, the lowest and highest physically possible value (docs/GPU.md's table).
* :func:`gpu_reading` -- a ``gpu`` event's data with every impossible value dropped, and how many were.
* :func:`clean_numbers` -- a mapped ``/metrics`` scrape without its non-finite or inexact numbers, and how many.
* :data:`TOKENS_PER_CHAR` -- the possible range of a lane's tokens per character (prompt calibration).
* :func:`beyond_float` -- where a decoded JSON value holds an integer float cannot hold (the recording
  reader refuses such a line: docs/RECORDING.md).

Pure: no IO.  Out of range is dropped and counted, never displayed or summed (docs/SECURITY.md, "Telemetry and
numbers from outside").
"""

from __future__ import annotations

import math
from typing import Any

MAX_GPUS = 64
"""GPUs kept per reading (the first ones; a host has 8, a large one 16)."""

GPU: dict[str, tuple[float, float]] = {
    "util_pct": (0.0, 100.0),
    "power_w": (0.0, 5000.0),          # no GPU draws 5 kW (a GB200 board ~1.2 kW)
    "energy_mj": (0.0, 1e17),          # 5 kW for 600 years
    "sm_clock_mhz": (0.0, 10000.0),
    "mem_clock_mhz": (0.0, 50000.0),
    "temp_c": (-40.0, 150.0),
    "fb_used_mib": (0.0, 16e6),
    "fb_free_mib": (0.0, 16e6),
    "reasons": (0.0, float(1 << 32)),
    "xid": (0.0, 1e6),
}
"""Per GPU: our key -> (lowest, highest physically possible value); outside it a reading is not a value."""
INTEGER_KEYS = frozenset(("reasons", "xid"))
"""GPU keys that are whole numbers (a bitmask, an error code)."""
HOST: dict[str, tuple[float, float]] = {
    "power_w": (0.0, MAX_GPUS * GPU["power_w"][1]),
    "energy_mj": (0.0, MAX_GPUS * GPU["energy_mj"][1]),
    "latency_s": (0.0, 600.0),
    "parse_s": (0.0, 600.0),
}
"""A reading's host-level figures (sums over its GPUs; the request's flight and the parse)."""
TOKENS_PER_CHAR: tuple[float, float] = (1 / 32, 4.0)
"""A lane's prompt tokens per character of our prose prompts, as its ``usage`` shows it: no tokenizer averages
more than 32 characters of prose per token, and a byte-level one makes at most one token per UTF-8 byte (4 per
character).  A ratio outside is not a measurement (a hostile or broken ``usage``): the caller keeps its estimate."""


def number(x: Any) -> float | None:
    """*x* as a finite float, or None (a bool, a string, NaN, an infinity, an integer float cannot hold)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    try:
        x = float(x)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def within(x: Any, lo: float, hi: float) -> float | None:
    """*x* as a float when it is a number in ``[lo, hi]``, else None."""
    v = number(x)
    return v if v is not None and lo <= v <= hi else None


def gpu_one(g: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """One GPU's dict with every value of :data:`GPU` that is not physically possible left out, and how many
    were, with its own ``dropped`` count (labels and flags are kept as they are)."""
    out: dict[str, Any] = {}
    dropped = 0
    for k, v in g.items():
        if k == "dropped":  # what the telemetry client dropped from this GPU already
            dropped += int(within(v, 0, 1e9) or 0)
            continue
        bounds = GPU.get(k)
        if bounds is None:
            out[k] = v
            continue
        if v is None:
            continue
        ok = within(v, *bounds)
        if ok is None or (k in INTEGER_KEYS and not ok.is_integer()):
            dropped += 1
            continue
        out[k] = int(ok) if k in INTEGER_KEYS else v
    return out, dropped


def gpu_reading(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A ``gpu`` event's data as a reader may use it, and the number of values dropped from it here.

    A failed reading (``ok`` false) is returned as it is.  Of a good one: the host figures of :data:`HOST`
    outside their range, every GPU value outside :data:`GPU`, GPUs past :data:`MAX_GPUS` and entries that
    are not objects are dropped and counted; ``dropped`` (what the telemetry client already dropped from the
    exporter's text, recorded with the reading) is added to the count.  The result's ``dropped`` is the
    total.  Idempotent: a reading that passed once passes again unchanged (its count kept)."""
    if not data.get("ok"):
        return data, 0
    out = dict(data)
    dropped = 0
    prior = within(data.get("dropped"), 0, 1e9)
    for key, bounds in HOST.items():
        if key in out and out[key] is not None and within(out[key], *bounds) is None:
            del out[key]
            dropped += 1
    gpus = data.get("gpus")
    if gpus is not None:
        kept = []
        for g in gpus if isinstance(gpus, list) else ():
            if not isinstance(g, dict) or len(kept) >= MAX_GPUS:
                dropped += 1
                continue
            one, n = gpu_one(g)
            kept.append(one)
            dropped += n
        if not isinstance(gpus, list):
            dropped += 1
        out["gpus"] = kept
    count = out.get("gpu_count")
    if count is not None and within(count, 0, 1e9) is None:
        del out["gpu_count"]
        dropped += 1
    total = dropped + int(prior or 0)
    if total:
        out["dropped"] = total
    else:
        out.pop("dropped", None)
    return out, dropped


EXACT = float(1 << 53)
"""Past this a float no longer holds every integer, and a JSON writer may refuse the integer (orjson stops at
64 bits): no count, total or gauge a server reports is this large."""


def clean_numbers(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """*data* (a mapped ``/metrics`` scrape: numbers, strings, flags and dicts of them) without the numbers that
    are not finite or not under :data:`EXACT` in magnitude, and how many were left out (nested dicts, such as
    the per-rank counters, are cleaned the same way, one level down)."""
    out: dict[str, Any] = {}
    dropped = 0
    for k, v in data.items():
        if isinstance(v, dict):
            inner = {}
            for k2, v2 in v.items():
                if isinstance(v2, dict):
                    v2, n = clean_numbers(v2)
                    dropped += n
                elif _bad(v2):
                    dropped += 1
                    continue
                inner[k2] = v2
            out[k] = inner
        elif _bad(v):
            dropped += 1
        else:
            out[k] = v
    return out, dropped


def _bad(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    x = number(v)
    return x is None or abs(x) >= EXACT


def beyond_float(value: Any) -> str | None:
    """The path (``$.data.x[2]``-like, from *value*) of the first integer whose magnitude a float cannot hold
    (past ~1.8e308), or None.  JSON writes such a number as digits; a reader that does ``float()`` on it
    raises.  Iterative: no recursion on deep nesting."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, v = stack.pop()
        if type(v) is int:
            if v.bit_length() > 1023:  # only these can be past float's range
                try:
                    float(v)
                except OverflowError:
                    return path or "$"
        elif isinstance(v, dict):
            stack.extend((f"{path}.{str(k)[:40]}", x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((f"{path}[{i}]", x) for i, x in enumerate(v))
    return None
