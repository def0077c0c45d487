"""The offered schedule of a ``bench load`` run (pure): arrival offsets, request lengths and the run's seed.

Every lane of one run is offered the same schedule (issue 37, item 5): the arrivals of rep ``r`` come from
``seed + r`` and the lengths from the same seed, so lane B is sent what lane A was sent, at the same offsets.
Without ``--seed`` a seed is drawn once for the run (:func:`draw_seed`, in ``BenchOptions``) and recorded in
the bench's start mark (``config.seed``, ``config.seed_drawn``) and its ``--json``, so a run can be repeated.

* ``constant`` -- one request every ``1/rate`` s;
* ``poisson``  -- exponential gaps of mean ``1/rate`` s;
* ``trace``    -- the timestamps of a JSON-lines file, replayed relative to its first line.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
from msgspec import UNSET

from lanemon.config import MAX_SECONDS, MAX_TOKENS
from lanemon.results.common import BenchConfig, LoadConfig

ARRIVALS = ("constant", "poisson", "trace")

MAX_TRACE_LINES = 1_000_000
MAX_TRACE_BYTES = 64 * 1024 * 1024
MAX_TRACE_T = 1e12
"""Largest |t| a trace line may carry (epoch seconds fit); the whole trace spans at most MAX_SECONDS."""


class LoadSpecError(ValueError):
    """A load option is malformed; the message names it."""


# ---------------------------------------------------------------------------
# Length distributions
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LengthDist:
    """A distribution of token counts: ``fixed:N``, ``uniform:LO,HI``, ``normal:MEAN,SD`` or ``file:PATH``.

    ``file:PATH`` reads one whole number per line (e.g. the prompt lengths of real traffic) and draws
    from them uniformly.  Every draw is at least 1.
    """

    kind: str
    a: float = 0.0
    b: float = 0.0
    values: tuple[int, ...] = ()
    source: str = ""

    @classmethod
    def parse(cls, text: str, flag: str = "length") -> "LengthDist":
        kind, _, rest = text.partition(":")
        kind = kind.strip().lower()
        try:
            if kind == "fixed":
                n = int(rest)
                if not 1 <= n <= MAX_TOKENS:
                    raise ValueError
                return cls("fixed", n, n, source=text)
            if kind in ("uniform", "normal"):
                lo_s, _, hi_s = rest.partition(",")
                a, b = float(lo_s), float(hi_s)
                if not (math.isfinite(a) and math.isfinite(b) and a <= MAX_TOKENS and b <= MAX_TOKENS):
                    raise ValueError
                if kind == "uniform" and not 1 <= a <= b:
                    raise ValueError
                if kind == "normal" and (a < 1 or b < 0):
                    raise ValueError
                return cls(kind, a, b, source=text)
            if kind == "file":
                with Path(rest).open("rb") as fh:  # bounded: file:/dev/zero must not read forever
                    raw = fh.read(MAX_TRACE_BYTES + 1)
                if len(raw) > MAX_TRACE_BYTES:
                    raise LoadSpecError(f"{flag}: {rest!r} is larger than {MAX_TRACE_BYTES >> 20} MB")
                values = tuple(int(x) for x in raw.split() if x.strip())
                if not values or min(values) < 1 or max(values) > MAX_TOKENS:
                    raise ValueError
                return cls("file", values=values, source=text)
        except OSError as exc:
            raise LoadSpecError(f"{flag}: cannot read {rest!r}: {exc.strerror or exc}") from None
        except LoadSpecError:
            raise
        except ValueError:
            pass
        raise LoadSpecError(f"{flag} must be fixed:N, uniform:LO,HI (1 <= LO <= HI), normal:MEAN,SD or file:PATH "
                            f"with whole numbers from 1 to {MAX_TOKENS:,}, not {text!r}")

    def sample(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return rng.randint(int(self.a), int(self.b))
        if self.kind == "normal":
            return max(1, int(round(rng.gauss(self.a, self.b))))
        return rng.choice(self.values)

    def public(self) -> str:
        return self.source or f"{self.kind}:{self.a:g},{self.b:g}"


# ---------------------------------------------------------------------------
# Arrival schedules (pure)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    """One scheduled request: when (s after the start), and its lengths when the schedule says so."""

    offset_s: float
    input_tokens: int | None = None
    output_tokens: int | None = None


def read_trace(path: str | Path) -> list[Arrival]:
    """A timestamped trace: JSON lines with ``t`` (seconds; any origin), optional token counts.

    Bounded in size and lines; a bad line is one clear :class:`LoadSpecError` naming it.
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_TRACE_BYTES + 1)
    except OSError as exc:
        raise LoadSpecError(f"--trace: cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_TRACE_BYTES:
        raise LoadSpecError(f"--trace: {path} is larger than {MAX_TRACE_BYTES // (1024 * 1024)} MB")
    out: list[Arrival] = []
    for no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        if len(out) >= MAX_TRACE_LINES:
            raise LoadSpecError(f"--trace: {path} has more than {MAX_TRACE_LINES} lines")
        try:
            obj = orjson.loads(line)
            t = obj["t"]
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not abs(t) <= MAX_TRACE_T:
                raise TypeError
            ins, outs = obj.get("input_tokens"), obj.get("output_tokens")
            for v in (ins, outs):
                if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_TOKENS):
                    raise TypeError
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise LoadSpecError(f"--trace: {path} line {no}: expected {{\"t\": seconds, \"input_tokens\": n?, "
                                f"\"output_tokens\": n?}} (finite t, counts from 1 to {MAX_TOKENS:,})") from None
        out.append(Arrival(float(t), ins, outs))
    if not out:
        raise LoadSpecError(f"--trace: {path} has no arrivals")
    out.sort(key=lambda a: a.offset_s)
    t0 = out[0].offset_s
    if out[-1].offset_s - t0 > MAX_SECONDS:
        raise LoadSpecError(f"--trace: {path} spans {out[-1].offset_s - t0:,.0f} s, more than {MAX_SECONDS:,.0f} s "
                            "(30 days)")
    return [Arrival(a.offset_s - t0, a.input_tokens, a.output_tokens) for a in out]


def schedule(arrival: str, *, rate: float | None = None, requests: int | None = None,
             duration: float | None = None, seed: int | None = None,
             trace: Sequence[Arrival] | None = None) -> list[Arrival]:
    """The arrival offsets of one run (pure; seeded).  Ends at ``requests`` or ``duration``, whichever first."""
    if requests is None and duration is None and arrival != "trace":
        raise LoadSpecError("a load run needs --requests N or --duration S")
    if arrival == "trace":
        if not trace:
            raise LoadSpecError("--arrival trace needs --trace FILE")
        out = [a for a in trace if duration is None or a.offset_s < duration]
        return out[:requests] if requests is not None else out
    if arrival not in ARRIVALS:
        raise LoadSpecError(f"--arrival must be one of {', '.join(ARRIVALS)}, not {arrival!r}")
    if rate is None or not rate > 0 or not math.isfinite(rate):
        raise LoadSpecError("--rate must be a positive number of requests per second")
    rng = random.Random(seed)
    out = []
    t = 0.0
    while requests is None or len(out) < requests:
        if arrival == "constant":
            t = len(out) / rate
        elif out:
            t += rng.expovariate(rate)
        else:
            t = rng.expovariate(rate)
        if duration is not None and t >= duration:
            break
        out.append(Arrival(t))
    return out


def phase_of(offset_s: float, span_s: float, warmup: float, cooldown: float) -> str:
    """``warmup`` / ``measure`` / ``cooldown`` for a request scheduled at ``offset_s`` of a ``span_s`` run."""
    if offset_s < warmup:
        return "warmup"
    if cooldown and offset_s >= span_s - cooldown:
        return "cooldown"
    return "measure"


def draw_seed() -> int:
    """A seed for one run, drawn once from the system's randomness (recorded, so the run can be repeated)."""
    return random.SystemRandom().randrange(1, 2**31)


def same_for_every_lane(config: BenchConfig) -> bool:
    """Whether the run's lanes were offered one schedule: a seed was set (given or drawn), or nothing in the
    schedule was random (constant or traced arrivals, lengths from the prompts or the trace)."""
    if config.seed is not None and config.seed is not UNSET:
        return True
    load = config.load or LoadConfig()
    return load.arrival in ("constant", "trace") and not load.input_len and not load.output_len
