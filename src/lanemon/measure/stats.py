"""Statistics that hold up: the steady-state window, one noise band, tests on reps (pure, no IO).

Everything that decides "who is faster" or "did this change" goes through
this module, so the decode ladder, the report's verdict and ``lanemon
compare`` agree on the same gap (docs/METRICS.md, "Noise and significance"):

* :func:`steady_state` -- aggregate tok/s of one concurrency level over the
  window in which all C streams are in flight (ramp-up and drain left out),
  beside the first send -> last end figure.
* :func:`noise_band` -- THE noise band: a default per kind of figure
  (:data:`DEFAULT_BANDS`: 5 % throughput, 10 % latency and divergence),
  widened to the runs' own relative spread ``(max - min) / median`` where a
  side has two or more reps.  A gap inside it is a tie, never a lead or a
  crossover.
* :func:`permutation_test` -- exact two-sided permutation test on the
  difference of the means of two sets of reps (every split enumerated up to
  :data:`EXACT_LIMIT` splits, else a seeded Monte Carlo); :func:`mann_whitney_u`
  is the rank-based alternative.  :func:`rep_test` refuses to test with fewer
  than :data:`MIN_REPS` reps a side.
* :func:`benjamini_hochberg` / :func:`holm` -- correction across the rows of
  one comparison (compare uses Benjamini-Hochberg).
* :func:`lead` / :func:`lead_text` -- a winner statement that carries its
  uncertainty ("B leads by 5.0 % (reps 3.1-6.8 %), noise band 5 %").
"""

from __future__ import annotations

import itertools
import math
import random
from typing import NamedTuple
from collections.abc import Iterable, Sequence
from typing import Any

NS = 1_000_000_000

DEFAULT_BANDS: dict[str, float] = {"throughput": 0.05, "latency": 0.10, "divergence": 0.10}
"""Relative noise band by kind of figure when no side has reps (a floor when they do)."""

ALPHA = 0.05
"""Significance level (after correction across the rows of one comparison)."""

MIN_REPS = 3
"""Fewest reps a side for a significance test: with 2 a side no split can reach p < 0.05 anyway
(the exact permutation test's smallest two-sided p is 2 / C(4, 2) = 0.33)."""

EXACT_LIMIT = 50_000
"""Enumerate every split up to this many (C(n1 + n2, n1)); beyond, a seeded Monte Carlo."""

MONTE_CARLO = 20_000


# --------------------------------------------------------------------------- basics
def finite(values: Iterable[Any]) -> list[float]:
    """The finite numbers of ``values`` (None, bools, NaN and non-numbers dropped)."""
    out: list[float] = []
    for v in values:
        if isinstance(v, bool) or v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def median(values: Sequence[float]) -> float | None:
    xs = sorted(values)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def rel_spread(values: Iterable[Any]) -> float:
    """``(max - min) / median`` of the reps (0 with fewer than two, or a zero median)."""
    xs = finite(values)
    if len(xs) < 2:
        return 0.0
    med = median(xs)
    return (max(xs) - min(xs)) / abs(med) if med else 0.0


# --------------------------------------------------------------------------- the noise band
class NoiseBand(NamedTuple):
    """The relative noise band two figures are compared against (:func:`noise_band`)."""

    band: float
    """The band: the default widened to the reps' largest relative spread (rounded to 4 places)."""
    default: float
    """The kind's default (:data:`DEFAULT_BANDS`)."""
    from_reps: bool
    """True when the reps widened it past the default."""


def noise_band(kind: str, *samples: Iterable[Any]) -> NoiseBand:
    """The relative noise band for comparing figures of this ``kind``: the kind's default
    (:data:`DEFAULT_BANDS`; 5 % for an unknown kind) widened to the largest
    relative spread of the given rep lists.
    """
    default = DEFAULT_BANDS.get(kind, DEFAULT_BANDS["throughput"])
    spread = max((rel_spread(s) for s in samples), default=0.0)
    band = max(default, spread)
    return NoiseBand(band=round(band, 4), default=default, from_reps=spread > default)


def rel_gap(old: float | None, new: float | None) -> float | None:
    """``new / old - 1`` (None when either is missing or old is 0)."""
    if old is None or new is None or not old:
        return None
    return new / old - 1.0


def within_band(old: float | None, new: float | None, band: float) -> bool:
    """True when the relative gap is inside the band (a tie); False when beyond it or not computable."""
    gap = rel_gap(old, new)
    return gap is not None and abs(gap) <= band + 1e-9


# --------------------------------------------------------------------------- tests on reps
def _splits(n: int, k: int, exact: bool, rng: random.Random) -> Iterable[tuple[int, ...]]:
    if exact:
        return itertools.combinations(range(n), k)
    return (tuple(rng.sample(range(n), k)) for _ in range(MONTE_CARLO))


def permutation_test(x: Sequence[float], y: Sequence[float], *, seed: int = 0) -> float | None:
    """Two-sided permutation test of "x and y come from the same distribution" on |mean(x) - mean(y)|.

    Exact (every way to split the pooled values into groups of len(x) and len(y)) when there are at
    most :data:`EXACT_LIMIT` splits, else a seeded Monte Carlo of :data:`MONTE_CARLO` splits (with the
    +1 correction).  None when a side is empty.
    """
    xs, ys = finite(x), finite(y)
    if not xs or not ys:
        return None
    pooled = xs + ys
    n, k = len(pooled), len(xs)
    total = sum(pooled)
    observed = abs(sum(xs) / k - sum(ys) / (n - k))
    scale = max(abs(v) for v in pooled) or 1.0
    tol = 1e-9 * scale  # ties in floating point count as "as extreme"
    exact = math.comb(n, k) <= EXACT_LIMIT
    rng = random.Random(seed)
    hits = count = 0
    for idx in _splits(n, k, exact, rng):
        s = sum(pooled[i] for i in idx)
        diff = abs(s / k - (total - s) / (n - k))
        hits += diff >= observed - tol
        count += 1
    if exact:
        return hits / count
    return (hits + 1) / (count + 1)


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """(U of x, exact two-sided p) of the Mann-Whitney U test (ties get mid-ranks; the p is the
    permutation distribution of the rank sum, so it stays exact with ties).  None when a side is empty."""
    xs, ys = finite(x), finite(y)
    if not xs or not ys:
        return None
    pooled = sorted((v, i) for i, v in enumerate(xs + ys))
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for m in range(i, j + 1):
            ranks[pooled[m][1]] = (i + j) / 2 + 1
        i = j + 1
    k = len(xs)
    u = sum(ranks[:k]) - k * (k + 1) / 2
    p = permutation_test(ranks[:k], ranks[k:])
    return u, float(p if p is not None else 1.0)


class RepTest(NamedTuple):
    """A permutation test of two sets of reps (:func:`rep_test`)."""

    test: str
    """Always ``"permutation"``."""
    p: float | None
    """Its p-value; None when not testable."""
    n_old: int
    """Finite values on the old side."""
    n_new: int
    """Finite values on the new side."""
    testable: bool
    """False with fewer than ``min_reps`` finite values on either side."""


def rep_test(old: Sequence[Any], new: Sequence[Any], *, min_reps: int = MIN_REPS) -> RepTest:
    """The permutation test of two sets of reps: not testable (p None) with fewer than ``min_reps`` finite
    values on either side.
    """
    xs, ys = finite(old), finite(new)
    ok = len(xs) >= min_reps and len(ys) >= min_reps
    return RepTest(test="permutation", p=permutation_test(xs, ys) if ok else None, n_old=len(xs), n_new=len(ys),
                   testable=ok)


def benjamini_hochberg(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (None stays None and is not counted in the family)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    if not m:
        return out
    order = sorted(idx, key=lambda i: pvalues[i])  # type: ignore[arg-type,return-value]
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, float(pvalues[i]) * m / rank)  # type: ignore[arg-type]
        out[i] = min(1.0, running)
    return out


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values (None stays None and is not counted in the family)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    order = sorted(idx, key=lambda i: pvalues[i])  # type: ignore[arg-type,return-value]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, float(pvalues[i]) * (m - rank)))  # type: ignore[arg-type]
        out[i] = running
    return out


def gap_range(old: Sequence[Any], new: Sequence[Any]) -> tuple[float, float] | None:
    """The range of ``new / old - 1`` over every pair of reps (min/max), None without two reps on a side."""
    xs, ys = finite(old), finite(new)
    if not xs or not ys or (len(xs) < 2 and len(ys) < 2) or min(xs) <= 0:
        return None
    return min(ys) / max(xs) - 1.0, max(ys) / min(xs) - 1.0


# --------------------------------------------------------------------------- winners
def lead(a: float | None, b: float | None, band: float, higher_is_better: bool = True) -> str | None:
    """``"a"`` / ``"b"`` when one is better by more than the band, ``"tie"`` inside it, None if missing."""
    gap = rel_gap(a, b)
    if gap is None:
        return None
    if abs(gap) <= band + 1e-9:  # 105 / 100 - 1 is 0.05000000000000004
        return "tie"
    return "b" if (gap > 0) == higher_is_better else "a"


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def lead_text(name_a: str, a: float | None, a_reps: Sequence[Any], name_b: str, b: float | None,
              b_reps: Sequence[Any], kind: str = "throughput", higher_is_better: bool = True) -> str:
    """A winner statement with its uncertainty, e.g.
    ``"B ahead of A by 5.0 % (B/A over the reps +3.1 % to +6.8 %; noise band 5.0 %, default)"`` or
    ``"A and B within noise (B +2.0 %; noise band 5.0 %, default; no reps)"``."""
    band = noise_band(kind, a_reps, b_reps)
    gap = rel_gap(a, b)
    if gap is None:
        return f"{name_a} vs {name_b}: no figure on both"
    who = lead(a, b, band.band, higher_is_better)
    rng = gap_range(a_reps, b_reps)
    src = "from the reps" if band.from_reps else ("default" if rng else "default; no reps")
    unc = f"noise band {pct(band.band)}, {src}"
    if rng:
        unc = f"{name_b}/{name_a} over the reps {rng[0] * 100:+.1f} % to {rng[1] * 100:+.1f} %; " + unc
    if who == "tie":
        return f"{name_a} and {name_b} within noise ({name_b} {gap * 100:+.1f} %; {unc})"
    winner, loser = (name_b, name_a) if who == "b" else (name_a, name_b)
    size = abs(gap) if who == "b" else abs(1 / (1 + gap) - 1) if gap > -1 else abs(gap)
    word = "ahead of" if higher_is_better else "faster than"
    return f"{winner} {word} {loser} by {pct(size)} ({unc})"


# --------------------------------------------------------------------------- steady state
def steady_window(spans: Iterable[tuple[int, int]], level: int) -> tuple[int, int] | None:
    """(start, end) of the window in which ``level`` streams are in flight: from the moment the
    ``level``-th stream is sent to the last moment ``level`` are still running (the drain starts).

    ``spans`` are (sent_ns, end_ns) of the level's requests.  A worker's next request is sent
    microseconds after its previous one ended; at equal times ends count before sends.  None when
    ``level`` streams were never in flight together.
    """
    points: list[tuple[int, int]] = []
    for s, e in spans:
        if s is None or e is None or e < s:
            continue
        points.append((s, 1))
        points.append((e, -1))
    if level < 1 or not points:
        return None
    points.sort(key=lambda p: (p[0], p[1]))
    inflight = 0
    start = end = None
    for t, d in points:
        before = inflight
        inflight += d
        if start is None and inflight >= level:
            start = t
        if before >= level > inflight:
            end = t
    if start is None or end is None or end <= start:
        return None
    return start, end


def chunk_weights(token_ns: Sequence[int], counts: Sequence[Any], generated: float) -> list[float]:
    """Tokens each chunk carried: the server's per-chunk counts when it gave one (> 0) for every chunk, else
    ``generated`` spread evenly over the chunks."""
    if counts and len(counts) == len(token_ns) and all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                                        for n in counts):
        return [float(n) for n in counts]
    per = generated / len(token_ns) if token_ns else 0.0
    return [per] * len(token_ns)


def steady_state(requests: Iterable[dict[str, Any]], level: int) -> dict[str, Any] | None:
    """Aggregate tok/s of one level in its steady-state window.

    ``requests``: dicts with ``sent_ns``, ``end_ns``, ``token_ns`` (arrival of every token-carrying
    chunk), ``chunk_tokens`` (tokens per chunk where the server said, else None) and ``generated``
    (all generated tokens).  Tokens are counted where their chunk arrived inside the window.
    Returns ``{"tok_s", "window_s", "tokens", "start_ns", "end_ns"}`` or None when ``level``
    streams were never all in flight.
    """
    reqs = list(requests)
    win = steady_window(((r.get("sent_ns"), r.get("end_ns")) for r in reqs), level)
    if win is None:
        return None
    start, end = win
    tokens = 0.0
    for r in reqs:
        tns = list(r.get("token_ns") or [])
        if not tns:
            continue
        weights = chunk_weights(tns, list(r.get("chunk_tokens") or []), float(r.get("generated") or 0))
        tokens += sum(w for t, w in zip(tns, weights) if start <= t <= end)
    window_s = (end - start) / NS
    return {"tok_s": tokens / window_s, "window_s": window_s, "tokens": tokens, "start_ns": start, "end_ns": end}


__all__ = ["ALPHA", "DEFAULT_BANDS", "MIN_REPS", "benjamini_hochberg", "chunk_weights", "finite", "gap_range", "holm", "lead",
           "lead_text", "mann_whitney_u", "median", "noise_band", "permutation_test", "rel_gap", "rel_spread",
           "rep_test", "steady_state", "steady_window", "within_band"]
