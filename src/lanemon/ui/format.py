"""Number formatting for the UI: every figure carries its unit (pure, no Textual)."""

from __future__ import annotations

NS = 1_000_000_000


def seconds(value: float | None) -> str:
    """``172 ms`` below one second, ``1.23 s`` above; ``—`` when unknown."""
    if value is None:
        return "—"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1.0:
        return f"{value * 1000:.0f} ms"
    if value < 100.0:
        return f"{value:.2f} s"
    return f"{value:.0f} s"


def tok_s(value: float | None) -> str:
    """``148.2 tok/s`` (one decimal under 1000); ``—`` when unknown."""
    if value is None:
        return "—"
    if value < 1000:
        return f"{value:.1f} tok/s"
    return f"{value:,.0f} tok/s"


def event_time(t_ns: int) -> str:
    """Session-relative event time: ``+12.3s`` or ``+4m05s`` (never the wall clock)."""
    secs = t_ns / NS
    if secs < 60:
        return f"+{secs:.1f}s"
    minutes, rest = divmod(int(secs), 60)
    if minutes < 60:
        return f"+{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"+{hours}h{minutes:02d}m"


def speed(value: float | None) -> str:
    """Replay speed: ``×4``, ``×0.5``, ``max``; empty for live sessions."""
    if value is None:
        return ""
    if value == float("inf"):
        return "max"
    if value == int(value):
        return f"×{int(value)}"
    return f"×{value:g}"


def markup_escape(text: object) -> str:
    """Make arbitrary text (server messages, URLs) safe inside Textual markup, and inert (no
    escape sequences or control characters): :func:`lanemon.untrusted.markup_escape`."""
    from lanemon.untrusted import markup_escape as escape

    return escape(text)


def span(values, unit: str) -> str:
    """``163–199 ms`` style range for a sparkline's scale (empty when < 2 values)."""
    xs = list(values)
    if len(xs) < 2:
        return ""
    lo, hi = min(xs), max(xs)
    if unit == "s":
        a, b = seconds(lo), seconds(hi)
        if a.split()[-1] == b.split()[-1]:
            return f"{a.split()[0]}–{b}"
        return f"{a}–{b}"
    return f"{lo:.0f}–{hi:.0f} {unit}"
