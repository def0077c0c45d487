"""Fault specs: the ``--fault KIND[:ARG[:ARG]][:after=S,for=S][@PROB|#EVERY]`` syntax parsed into :class:`FaultSpec`.

A last ``:key=value,...`` part schedules a fault: ``after=5s`` (it starts this many seconds after the
simulator started serving; wall-clock seconds, not scaled by ``--time-scale``) and ``for=10s`` (it lasts this
long, then stops for good; default: for ever).  The ``slow`` kind is always written that way:
``slow:after=5s,for=10s,factor=4[,ramp=2s]`` multiplies every admitted request's TTFT and token gaps by up
to ``factor``, ramping from 1 over ``ramp`` seconds at both ends of its window.

Pure (no web stack), so the CLI parsers can validate ``--fault``, ``--fault-a`` and ``--fault-b``
without importing the server.  The wire behaviour of every kind is :mod:`lanemon.sim.faults`
(docs/FAULTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FaultSpec", "parse_fault", "parse_faults", "KINDS", "MALFORMED_MODES", "HTTP_FORMATS"]

KINDS = ("refuse", "drop", "stall", "http", "malformed", "badutf8", "nousage", "nodone", "huge",
         "slowheaders", "models-change", "textless", "restart", "slow")
MAX_SCHEDULE_S = 30 * 86400.0
"""The longest ``after=`` / ``for=`` / ``ramp=`` a schedule may name (30 days)."""
MALFORMED_MODES = ("json", "line", "nested", "array")
HTTP_FORMATS = ("json", "text", "html")


@dataclass(frozen=True)
class FaultSpec:
    """One parsed ``--fault`` value.  ``args`` are already typed for ``kind``."""

    kind: str
    args: tuple = ()
    prob: float | None = None
    every: int | None = None
    text: str = ""
    after_s: float = 0.0
    """Seconds after the simulator started before the fault is active (``after=``)."""
    for_s: float | None = None
    """Seconds it stays active (``for=``); None: until the simulator stops."""

    def active(self, elapsed_s: float) -> bool:
        """Whether the fault applies ``elapsed_s`` seconds after the simulator started."""
        if elapsed_s < self.after_s:
            return False
        return self.for_s is None or elapsed_s < self.after_s + self.for_s

    def slow_factor(self, elapsed_s: float) -> float:
        """A ``slow`` fault's multiplier at ``elapsed_s`` (1.0 outside its window; linear ramps at both ends)."""
        if self.kind != "slow" or not self.active(elapsed_s):
            return 1.0
        factor, ramp = self.args
        if ramp <= 0:
            return factor
        into = elapsed_s - self.after_s
        left = (self.for_s - into) if self.for_s is not None else ramp
        return 1.0 + (factor - 1.0) * max(0.0, min(1.0, into / ramp, left / ramp))

    def __str__(self) -> str:
        return self.text


def _num(text: str, what: str, *, integer: bool = False, lo: float = 0.0, lo_open: bool = False,
         hi: float | None = None) -> Any:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{what} must be a {'whole ' if integer else ''}number, not {text!r}") from None
    if value != value or (lo_open and value <= lo) or (not lo_open and value < lo) or (hi is not None and value > hi):
        bound = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise ValueError(f"{what} must be {bound}" + (f" and <= {hi:g}" if hi is not None else "") + f", not {text}")
    return value


def parse_fault(text: str) -> FaultSpec:
    """``KIND[:ARG[:ARG]][@PROB|#EVERY]`` -> :class:`FaultSpec`; ValueError with a one-line message."""
    spec = str(text).strip()
    if not spec:
        raise ValueError("empty fault spec")
    body, prob, every = spec, None, None
    if "@" in spec:
        body, _, sel = spec.rpartition("@")
        prob = _num(sel, f"fault {spec!r}: probability after @", lo=0.0, lo_open=True, hi=1.0)
    elif "#" in spec:
        body, _, sel = spec.rpartition("#")
        every = _num(sel, f"fault {spec!r}: N after #", integer=True, lo=1)
    kind, *raw = body.split(":")
    kind = kind.strip().lower()
    where = f"fault {spec!r}"
    if kind not in KINDS:
        raise ValueError(f"{where}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    options: dict[str, str] = {}
    if raw and "=" in raw[-1]:
        options = _options(raw.pop(), where)
    after = _seconds(options.pop("after", "0"), f"{where}: after=", lo_open=False)
    duration = _seconds(options["for"], f"{where}: for=") if "for" in options else None
    options.pop("for", None)
    if kind == "slow":
        if raw or prob is not None or every is not None:
            raise ValueError(f"{where}: expected slow:after=S,for=S,factor=F[,ramp=S] (no other argument, "
                             "no @PROB or #EVERY: it slows every request in its window)")
        if "factor" not in options:
            raise ValueError(f"{where}: slow needs factor=F (how many times slower, > 1)")
        factor = _num(options.pop("factor"), f"{where}: factor=", lo=1.0, lo_open=True, hi=1000.0)
        ramp = _seconds(options.pop("ramp", "0"), f"{where}: ramp=", lo_open=False)
        if options:
            raise ValueError(f"{where}: unknown option {sorted(options)[0]!r} (slow takes after, for, factor, ramp)")
        if duration is not None and 2 * ramp > duration:
            raise ValueError(f"{where}: ramp= must be at most half of for= (it ramps up and down inside the window)")
        return FaultSpec(kind, (factor, ramp), None, None, spec, after, duration)
    if options:
        raise ValueError(f"{where}: unknown option {sorted(options)[0]!r} (a schedule takes after= and for=)")
    if kind == "models-change" and (after or duration is not None):
        raise ValueError(f"{where}: models-change counts requests; it takes no after= or for=")

    def nargs(lo: int, hi: int, usage: str) -> None:
        if not lo <= len(raw) <= hi:
            raise ValueError(f"{where}: expected {usage}")

    args: tuple
    if kind in ("refuse", "badutf8", "nousage", "nodone"):
        nargs(0, 0, f"{kind} without an argument")
        args = ()
    elif kind == "drop":
        nargs(1, 1, "drop:N (token chunks sent before the connection is dropped)")
        args = (_num(raw[0], f"{where}: N", integer=True, lo=0),)
    elif kind == "stall":
        nargs(1, 2, "stall:SECONDS[:AFTER_TOKENS]")
        after_tokens = _num(raw[1], f"{where}: AFTER_TOKENS", integer=True, lo=0) if len(raw) > 1 else 1
        args = (_num(raw[0], f"{where}: SECONDS", lo=0.0, lo_open=True, hi=3600.0), after_tokens)
    elif kind == "http":
        nargs(1, 3, "http:STATUS[:json|text|html][:RETRY_AFTER_S]")
        status = _num(raw[0], f"{where}: STATUS", integer=True, lo=400, hi=599)
        fmt, retry = "json", (1 if status == 429 else None)
        for extra in raw[1:]:
            if extra.lower() in HTTP_FORMATS:
                fmt = extra.lower()
            else:
                retry = _num(extra, f"{where}: RETRY_AFTER_S (or json|text|html)", integer=True, lo=0)
        args = (status, fmt, retry)
    elif kind == "malformed":
        nargs(0, 1, f"malformed[:{'|'.join(MALFORMED_MODES)}]")
        mode = raw[0].lower() if raw else "json"
        if mode not in MALFORMED_MODES:
            raise ValueError(f"{where}: mode must be one of {', '.join(MALFORMED_MODES)}")
        args = (mode,)
    elif kind == "huge":
        nargs(1, 1, "huge:MB (size of the one SSE line, MiB)")
        args = (_num(raw[0], f"{where}: MB", lo=0.0, lo_open=True, hi=4096.0),)
    elif kind == "slowheaders":
        nargs(1, 1, "slowheaders:SECONDS (the headers take this long, byte by byte)")
        args = (_num(raw[0], f"{where}: SECONDS", lo=0.0, lo_open=True, hi=3600.0),)
    elif kind == "textless":
        nargs(1, 1, "textless:K (every K-th token chunk goes out without its text, which rides on the next)")
        args = (_num(raw[0], f"{where}: K", integer=True, lo=2),)
    elif kind == "restart":
        nargs(0, 0, "restart without an argument (the engine's /metrics counters fall to zero at the request)")
        args = ()
    else:  # models-change
        nargs(1, 1, "models-change:N (GET /v1/models answers a different list after N requests)")
        if prob is not None or every is not None:
            raise ValueError(f"{where}: models-change happens once; it takes no @PROB or #EVERY")
        args = (_num(raw[0], f"{where}: N", integer=True, lo=0),)
    return FaultSpec(kind, args, prob, every, spec, after, duration)


def _options(text: str, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or not key or not value.strip():
            raise ValueError(f"{where}: expected key=value pairs separated by commas, not {part!r}")
        if key in out:
            raise ValueError(f"{where}: {key}= given twice")
        out[key] = value.strip()
    return out


def _seconds(text: str, what: str, *, lo_open: bool = True) -> float:
    """``5``, ``5s``, ``500ms``, ``2m`` -> seconds (finite, within :data:`MAX_SCHEDULE_S`)."""
    t = text.strip().lower()
    mult = 1.0
    for suffix, m in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if t.endswith(suffix):
            t, mult = t[: -len(suffix)], m
            break
    value = _num(t, what + " (seconds)", lo=0.0, lo_open=lo_open, hi=MAX_SCHEDULE_S / mult)
    return value * mult


def parse_faults(specs: Any) -> list[FaultSpec]:
    return [s if isinstance(s, FaultSpec) else parse_fault(s) for s in (specs or ())]

