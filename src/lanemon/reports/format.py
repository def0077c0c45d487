"""Number formatting shared by the reports, the compare view, the CLI and the UI (pure).

Every figure carries its unit or says it is unknown (``—``).  Two conventions live here:

* the report's: :func:`tok` (tok/s), :func:`secs` (``45 ms`` under 0.1 s, then seconds),
  :func:`length_label` (``2,000``, ``131K``), :func:`ratio_text` (``1.4–2.1×``), :func:`sparkline`;
* the screens' and tables': :func:`seconds` (``172 ms`` under one second, ``1.23 s`` above),
  :func:`tok_s` (``148.2 tok/s``), :func:`ordinal` (``1st``) -- used by :mod:`lanemon.ui.format`
  and the race tables.

Plus the small text helpers the renderers share: :func:`clip`, :func:`err_text`, :func:`esc`,
:func:`numeric_column`.
"""

from __future__ import annotations

import html
import math
from typing import Any

SPARK = "▁▂▃▄▅▆▇█"
NUMBER_WORDS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight",
                9: "Nine", 10: "Ten", 11: "Eleven", 12: "Twelve"}


def num(x: Any) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def tok(v: Any) -> str:
    """``263`` / ``88.4`` / ``12,542`` (tok/s, unit said by the column)."""
    x = num(v)
    if x is None:
        return "—"
    if x >= 10:
        return f"{x:,.0f}"
    return f"{x:.1f}"


# A duration in seconds is written in the first unit whose bound it is below: (bound, scale, format), then
# the last format for anything larger.  One ladder per convention (see the module docstring).
Ladder = tuple[tuple[tuple[float, float, str], ...], str]
SECS_LADDER: Ladder = (((0.1, 1000, "{:.0f} ms"), (10, 1, "{:.2f} s"), (100, 1, "{:.1f} s")), "{:,.0f} s")
SECONDS_LADDER: Ladder = (((0.001, 1e6, "{:.0f} µs"), (1.0, 1000, "{:.0f} ms"), (100.0, 1, "{:.2f} s")),
                          "{:.0f} s")


def duration(x: float | None, ladder: Ladder) -> str:
    """*x* seconds written by *ladder*; ``—`` when unknown."""
    if x is None:
        return "—"
    steps, last = ladder
    for bound, scale, fmt in steps:
        if x < bound:
            return fmt.format(x * scale)
    return last.format(x)


def secs(v: Any) -> str:
    """The report's seconds: ``45 ms`` under 0.1 s, ``1.23 s``, ``12.3 s``, ``1,234 s``."""
    return duration(num(v), SECS_LADDER)


def pct(value: Any, q: int, n: Any, top: Any = None, fmt=secs) -> str:
    """A ``q``-th percentile cell that says what it rests on: the value when ``n`` samples carry it
    (:data:`~lanemon.measure.metrics.TAIL_MIN_SAMPLES`), else the largest sample ``max 0.38 s (n=8)`` (or,
    without it, the value with its n); ``n`` unknown (older results): the value as it was."""
    from lanemon.measure.metrics import tail_ok

    count = int(n) if isinstance(n, int) and not isinstance(n, bool) else None
    if count is None or tail_ok(q, count) or num(value) is None:
        return fmt(value)
    if num(top) is not None:
        return f"max {fmt(top)} (n={count})"
    return f"{fmt(value)} (n={count})"


def share(v: Any) -> str:
    """A ratio 0-1 as a whole percentage (``45%``); ``—`` when unknown."""
    x = num(v)
    return "—" if x is None else f"{x:.0%}"


def ratio_text(lo: float, hi: float | None = None) -> str:
    a = f"{lo:.1f}"
    if hi is None or f"{hi:.1f}" == a:
        return f"{a}×"
    return f"{a}–{hi:.1f}×"


def length_label(n: Any) -> str:
    """Token counts as the write-up says them: ``2,000``, ``131K`` (≥ 10K), ``1.2M``."""
    x = num(n)
    if x is None:
        return str(n)
    if x >= 1_000_000:
        return f"{x / 1e6:.1f}M"
    if x >= 10_000:
        return f"{x / 1000:.0f}K"
    return f"{x:,.0f}"


def int_key(k: Any) -> float:
    try:
        return float(k)
    except (TypeError, ValueError):
        return math.inf


def sorted_keys(d: dict[str, Any]) -> list[str]:
    return sorted(d, key=lambda k: (int_key(k), str(k)))


def sparkline(values: list[float | None], top: float | None = None) -> str:
    xs = [v for v in values if v is not None]
    if not xs:
        return ""
    hi = top if top else max(xs)
    out = []
    for v in values:
        if v is None or hi <= 0:
            out.append(" ")
        else:
            out.append(SPARK[min(len(SPARK) - 1, max(0, round(v / hi * (len(SPARK) - 1))))])
    return "".join(out)


def number_word(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def kilo(v: float) -> str:
    return f"{v / 1000:.1f}K" if v >= 1000 else f"{v:.0f}"


def clip(text: Any, n: int = 60) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def err_text(e: Any, n: int = 40) -> str:
    """An error as one short line: ``http: 503 Service Unavailable`` (a ``{"cls", "message"}`` object, or a typed
    error with those attributes, e.g. :class:`lanemon.results.race.RaceError`)."""
    if isinstance(e, dict) or hasattr(e, "cls"):
        cls, msg = (e.get("cls"), e.get("message")) if isinstance(e, dict) else (e.cls, getattr(e, "message", None))
        text = f"{cls}: {msg}" if cls and msg else str(cls or msg or "error")
    else:
        text = str(e)
    return clip(text, n)


def int_text(v: Any) -> str:
    x = num(v)
    if x is None:
        return "—"
    return f"{x:.0f}" if x == int(x) else f"{x:.1f}"


def kl_num(v: Any) -> str:
    x = num(v)
    if x is None:
        return "—"
    if x == 0:
        return "0"
    return f"{x:.4f}" if x >= 0.001 else f"{x:.2e}"


def numeric_column(rows: list[list[str]], j: int) -> bool:
    """A column reads as numbers when every cell starts like one (right-aligned then)."""
    cells = [r[j] for r in rows if j < len(r) and r[j] not in ("—", "")]
    return bool(cells) and all(c[:1].isdigit() or c[:1] in "~−-" or c.startswith(("tie", "error")) for c in cells)


def esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def seconds(value: float | None) -> str:
    """``172 ms`` below one second, ``1.23 s`` above; ``—`` when unknown (the screens' convention)."""
    return duration(value, SECONDS_LADDER)


def tok_s(value: float | None) -> str:
    """``148.2 tok/s`` (one decimal under 1000); ``—`` when unknown."""
    if value is None:
        return "—"
    if value < 1000:
        return f"{value:.1f} tok/s"
    return f"{value:,.0f} tok/s"


def ordinal(n: int) -> str:
    """1 -> ``1st``, 2 -> ``2nd``, 3 -> ``3rd``, 4 -> ``4th``, 11 -> ``11th``."""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
