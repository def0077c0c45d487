"""Number formatting for the UI: every figure carries its unit (pure, no Textual)."""

from __future__ import annotations

from lanemon.reports.format import ordinal, seconds, tok_s  # noqa: F401  (one copy, shared with reports and CLI)

NS = 1_000_000_000


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

def fit(parts: list[tuple[int, str, str]], width: int, sep: str = "  ") -> str:
    """Join ``(priority, markup, plain)`` parts in their own order, taking them most important first
    (lowest priority number) and skipping any whose plain text no longer fits ``width``; the first
    always stays (the label's ellipsis cuts it when even that is too long)."""
    keep = {0} if parts else set()
    used = len(parts[0][2]) if parts else 0
    for i in sorted(range(1, len(parts)), key=lambda i: (parts[i][0], i)):
        if used + len(sep) + len(parts[i][2]) <= width:
            keep.add(i)
            used += len(sep) + len(parts[i][2])
    return sep.join(parts[i][1] for i in sorted(keep))
