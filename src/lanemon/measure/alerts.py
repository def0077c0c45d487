"""Alert rules: a small expression grammar, parsed here (never ``eval``), and their pure evaluation.

A rule is written ``METRIC OP NUMBER [and|or METRIC OP NUMBER ...] [for DURATION]``::

    ttft_p50 > 0.5 for 60s
    up < 1 for 10s
    error_share >= 5% or kv_usage > 90%
    slo_attainment < 0.95 and requests >= 5 for 2m

* ``METRIC`` is one of :data:`METRICS` (lanemon's own figures over the monitor's window, or the
  engine's ``/metrics``), always per lane;
* ``OP`` is ``>``, ``>=``, ``<``, ``<=``, ``==`` or ``!=``;
* ``NUMBER`` may carry a unit: ``ms`` / ``s`` (seconds), ``%`` (divided by 100);
* ``and`` binds tighter than ``or``; there are no parentheses and nothing else;
* ``for DURATION`` (``500ms``, ``2s``, ``5m``, ``1h``): the condition must hold that long before the alert
  fires (default 0: the first evaluation that sees it true).

A comparison with a figure the lane does not have right now (no completed request in the window, no
``/metrics``, no SLO) is false: an alert never fires on a missing number, and one firing resolves when
its figure goes away.  :class:`AlertEngine` keeps the state of every (rule, lane) pair and returns the
transitions (fire, resolve) of one evaluation; the caller turns them into events, lines and commands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lanemon.results.monitor_events import FIRING, RESOLVED, AlertEvent, event_data

#: metric -> (what it is, unit) -- the names a rule may use (docs/MONITOR.md, "Alert rules").
METRICS: dict[str, tuple[str, str]] = {
    "up": ("1 when the lane's latest health probe (GET /models) answered, else 0", ""),
    "down": ("1 when the lane's latest health probe failed, else 0", ""),
    "ttft_p50": ("median TTFT of the window's complete requests", "s"),
    "ttft_p90": ("p90 TTFT of the window's complete requests (under 10: their max)", "s"),
    "ttft_p99": ("p99 TTFT of the window's complete requests (under 100: their max)", "s"),
    "tpot_p50": ("median TPOT of the window's complete requests", "s"),
    "tpot_p90": ("p90 TPOT of the window's complete requests (under 10: their max)", "s"),
    "tpot_p99": ("p99 TPOT of the window's complete requests (under 100: their max)", "s"),
    "e2e_p50": ("median end-to-end latency of the window's complete requests", "s"),
    "e2e_p90": ("p90 end-to-end latency of the window's complete requests (under 10: their max)", "s"),
    "e2e_p99": ("p99 end-to-end latency of the window's complete requests (under 100: their max)", "s"),
    "decode_tok_s": ("median per-stream decode rate of the window's complete requests", "tok/s"),
    "requests": ("requests that ended in the window (every outcome)", ""),
    "error_share": ("share of the window's requests that did not complete (error, truncated, empty)", "ratio"),
    "slo_attainment": ("share of the window's requests meeting every SLO target (needs an SLO)", "ratio"),
    "goodput": ("requests meeting every SLO target per second of the window (needs an SLO)", "req/s"),
    "kv_usage": ("engine /metrics: KV-cache use, 0..1", "ratio"),
    "waiting": ("engine /metrics: requests queued", ""),
    "running": ("engine /metrics: requests running", ""),
    "preemptions": ("engine /metrics: preemptions in the window", ""),
    "server_ttft": ("engine /metrics: the engine's own mean TTFT over its latest interval", "s"),
    "oversaturated": ("1 when, from the window's first half to its second, the engine's queue grew, the median "
                      "TTFT rose 20 % and generation throughput stayed within 10 % (more load only waits)", ""),
}

OPS = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
SEVERITIES = ("info", "warning", "critical")
MAX_RULE_CHARS = 400
MAX_TERMS = 8
MAX_FOR_S = 30 * 86400.0

_TOKEN = re.compile(r"\s*(?:(?P<op>>=|<=|==|!=|>|<)|(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?P<unit>ms|s|m|h|%)?"
                    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*))")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "%": 0.01}


class RuleError(ValueError):
    """A rule that does not parse; the message says where, in one line."""


@dataclass(frozen=True, slots=True)
class Compare:
    metric: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.value:g}"


@dataclass(frozen=True, slots=True)
class Rule:
    """One alert rule: ``any`` of the ``all``-groups in :attr:`groups` must hold for :attr:`for_s` seconds."""

    text: str
    """The condition as written (without ``for``)."""
    groups: tuple[tuple[Compare, ...], ...]
    """OR of ANDs."""
    for_s: float = 0.0
    lanes: tuple[str, ...] | None = None
    """Lanes it watches (None: every lane)."""
    severity: str = "warning"
    name: str = ""
    """A short name (default: the condition)."""
    command: tuple[str, ...] | None = None
    """An argv run on fire and on resolve (the alert as JSON on stdin; never a shell)."""

    @property
    def metrics(self) -> list[str]:
        out: list[str] = []
        for g in self.groups:
            for c in g:
                if c.metric not in out:
                    out.append(c.metric)
        return out

    def holds(self, figures: Mapping[str, float | None]) -> bool:
        return any(all(_compare(c, figures.get(c.metric)) for c in g) for g in self.groups)

    def label(self) -> str:
        return self.name or (self.text + (f" for {_fmt_s(self.for_s)}" if self.for_s else ""))


def _compare(c: Compare, value: float | None) -> bool:
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return False
    return OPS[c.op](float(value), c.value)


def _fmt_s(s: float) -> str:
    return f"{s * 1000:g}ms" if s < 1 else f"{s:g}s"


def _number(m: re.Match[str], where: str) -> float:
    value = float(m.group("num")) * _UNITS[m.group("unit")]
    if not math.isfinite(value):
        raise RuleError(f"{where}: {m.group(0).strip()!r} is not a finite number")
    return value


def parse_duration(text: str, where: str = "duration") -> float:
    """``2s``, ``500ms``, ``5m``, ``1h`` or a bare number of seconds -> seconds (0 .. 30 days)."""
    m = _TOKEN.fullmatch(str(text).strip())
    if m is None or m.group("num") is None or m.group("unit") == "%":
        raise RuleError(f"{where}: {text!r} is not a duration like 2s, 500ms, 5m")
    value = _number(m, where)
    if not 0 <= value <= MAX_FOR_S:
        raise RuleError(f"{where}: {text!r} must be between 0 and 30 days")
    return value


def _tokens(text: str, where: str) -> list[re.Match[str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise RuleError(f"{where}: unexpected {text[pos:].strip()[:20]!r} at character {pos + 1}")
        out.append(m)
        pos = m.end()
    return out


def parse_rule(text: str, *, where: str = "alert", for_s: float | None = None, lanes: Sequence[str] | None = None,
               severity: str = "warning", name: str = "", command: Sequence[str] | None = None) -> Rule:
    """Parse ``METRIC OP NUMBER [and|or ...] [for DURATION]``; :class:`RuleError` with a one-line message.

    ``for_s`` (lanes.toml's ``for``) and a ``for`` inside the text are exclusive."""
    if not isinstance(text, str) or not text.strip():
        raise RuleError(f"{where}: empty rule (expected e.g. 'ttft_p50 > 0.5 for 60s')")
    if len(text) > MAX_RULE_CHARS:
        raise RuleError(f"{where}: rule longer than {MAX_RULE_CHARS} characters")
    if severity not in SEVERITIES:
        raise RuleError(f"{where}: severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
    toks = _tokens(text, where)
    groups: list[tuple[Compare, ...]] = []
    current: list[Compare] = []
    i, n_terms = 0, 0
    cond_end = len(text)
    while True:
        if i + 3 > len(toks):
            got = " ".join(t.group(0).strip() for t in toks[i:]) or "the end"
            raise RuleError(f"{where}: expected METRIC OP NUMBER (e.g. ttft_p50 > 0.5), got {got!r}")
        w, op, num = toks[i], toks[i + 1], toks[i + 2]
        metric = (w.group("word") or "").lower()
        if metric not in METRICS:
            shown = w.group(0).strip()
            raise RuleError(f"{where}: unknown metric {shown!r} (known: {', '.join(METRICS)})")
        if op.group("op") is None:
            raise RuleError(f"{where}: expected a comparison (> >= < <= == !=) after {metric}, "
                            f"got {op.group(0).strip()!r}")
        if num.group("num") is None:
            raise RuleError(f"{where}: expected a number after {metric} {op.group('op')}, got {num.group(0).strip()!r}")
        if num.group("unit") in ("m", "h"):
            raise RuleError(f"{where}: {num.group(0).strip()!r}: write thresholds in s, ms or %")
        current.append(Compare(metric, op.group("op"), _number(num, where)))
        n_terms += 1
        if n_terms > MAX_TERMS:
            raise RuleError(f"{where}: more than {MAX_TERMS} comparisons in one rule")
        i += 3
        if i == len(toks):
            break
        word = (toks[i].group("word") or "").lower()
        if word == "and":
            i += 1
        elif word == "or":
            groups.append(tuple(current))
            current = []
            i += 1
        elif word == "for":
            cond_end = toks[i].start()
            if i + 2 != len(toks):
                raise RuleError(f"{where}: 'for' takes one duration (e.g. for 60s) and ends the rule")
            if for_s is not None:
                raise RuleError(f"{where}: 'for' given both in the rule and as its own setting")
            for_s = parse_duration(toks[i + 1].group(0), where + ": for")
            break
        else:
            raise RuleError(f"{where}: expected 'and', 'or' or 'for', got {toks[i].group(0).strip()!r}")
    groups.append(tuple(current))
    if for_s is not None and not 0 <= for_s <= MAX_FOR_S:
        raise RuleError(f"{where}: for must be between 0 and 30 days")
    return Rule(text=" ".join(text[:cond_end].split()), groups=tuple(groups), for_s=float(for_s or 0.0),
                lanes=tuple(lanes) if lanes is not None else None, severity=severity, name=name,
                command=tuple(command) if command else None)


# ------------------------------------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class Transition:
    """An alert fired or resolved: what the caller records, prints and hands to a command."""

    state: str  # firing | resolved
    rule: Rule
    lane: str
    t_ns: int
    since_ns: int
    """When the condition started to hold (firing) / when it had fired (resolved)."""
    values: dict[str, float | None] = field(default_factory=dict)
    """The rule's figures at this evaluation."""

    def event(self) -> AlertEvent:
        """The ``alert`` event's data, typed (results/monitor_events.py; docs/MONITOR.md, "Alert events")."""
        return AlertEvent(state=self.state, alert=self.rule.label(), rule=self.rule.text, for_s=self.rule.for_s,
                          severity=self.rule.severity, lane=self.lane,
                          values={k: (None if v is None else round(float(v), 6)) for k, v in self.values.items()},
                          since_s=round(self.since_ns / 1e9, 3), t_s=round(self.t_ns / 1e9, 3))

    def to_json(self) -> dict[str, Any]:
        """The event data / the command's stdin: :meth:`event` as its JSON object."""
        return event_data(self.event())

    def line(self) -> str:
        """One line for stderr: ``ALERT firing [warning] A: ttft_p50 > 0.05 for 2s (ttft_p50=0.21)``."""
        vals = " ".join(f"{k}={'-' if v is None else f'{v:.4g}{unit_suffix(k)}'}" for k, v in self.values.items())
        word = "FIRING" if self.state == FIRING else "resolved"
        return f"alert {word} [{self.rule.severity}] lane {self.lane}: {self.rule.label()} ({vals})"


def unit_suffix(metric: str) -> str:
    """`` s``, `` tok/s``, `` req/s`` after a figure of ``metric`` in an alert line (a ratio or a count: none)."""
    unit = METRICS.get(metric, ("", ""))[1]
    return f" {unit}" if unit and unit != "ratio" else ""


@dataclass(slots=True)
class _State:
    since: int | None = None
    firing_since: int | None = None


class AlertEngine:
    """The state of every (rule, lane): pending since when, firing or not.  Pure: fed figures and a time."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self._state: dict[tuple[int, str], _State] = {}

    def firing(self) -> list[tuple[Rule, str, int]]:
        """(rule, lane, firing since ns) of every alert firing now."""
        return [(self.rules[i], lane, st.firing_since) for (i, lane), st in self._state.items()
                if st.firing_since is not None]

    def firing_count(self, lane: str) -> int:
        return sum(1 for (i, ln), st in self._state.items() if ln == lane and st.firing_since is not None)

    def evaluate(self, now_ns: int, figures: Mapping[str, Mapping[str, float | None]]) -> list[Transition]:
        """One evaluation at ``now_ns`` over ``{lane: {metric: value}}``; the transitions it caused."""
        out: list[Transition] = []
        for i, rule in enumerate(self.rules):
            for lane, figs in figures.items():
                if rule.lanes is not None and lane not in rule.lanes:
                    continue
                st = self._state.setdefault((i, lane), _State())
                values = {m: figs.get(m) for m in rule.metrics}
                if rule.holds(figs):
                    if st.since is None:
                        st.since = now_ns
                    if st.firing_since is None and now_ns - st.since >= int(rule.for_s * 1e9):
                        st.firing_since = now_ns
                        out.append(Transition(FIRING, rule, lane, now_ns, st.since, values))
                else:
                    st.since = None
                    if st.firing_since is not None:
                        out.append(Transition(RESOLVED, rule, lane, now_ns, st.firing_since, values))
                        st.firing_since = None
        return out
