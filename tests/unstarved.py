"""Judge a recorded schedule's sends only where the recording says lanemon was not starved (tests' helper).

On a machine whose CPUs other processes hog, lanemon's loop (or a worker's) wakes late: a send due then goes out
late, and the ones behind it in a burst.  Its recording says when (the ``client_load`` windows, measure/load.py:
every process that timed sends watches its own loop).  :func:`judge_sends` keeps the sends whose whole span, from
when it was due to when it went out, lies in time the recording says was watched and not starved, and checks each
of those: sent on time (within :data:`LATE_S` of its schedule, the schedule's origin taken from the most punctual
send).  A scheduler off by 5 % in rate is 0.1 s off two seconds into a run, wherever the starved windows fall; a
send out of order is late against its own schedule.  It is pure.  :attr:`Sends.enough` says whether enough
could be judged, :meth:`Sends.verdict` what was late; :func:`assert_on_schedule` asserts the verdict, or skips
saying why (``-rs``) when the machine starved lanemon too long to judge -- never a silent pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import pytest

from lanemon.measure.load import LAG_BOUND_MS, ClientLoad

NS = 1_000_000_000
LATE_S = 0.1
"""A send due in unstarved time goes out within this of its schedule: the loop woke less than 20 ms late
(:data:`LAG_BOUND_MS`) throughout, so the rest is the send's own work; 0.1 s is a rate 5 % off two seconds in."""
MARGIN_NS = int(LAG_BOUND_MS * 1e6)
"""Around a starved window: a sub-threshold lag at its edge is not a judged send's."""
MIN_JUDGED_SHARE = 0.2
MIN_JUDGED = 5
"""Enough to judge: this share of the sends and at least this many ..."""
MIN_SPAN_SHARE = 0.5
"""... due over this share of the schedule's span (a rate error shows as a drift: it needs the span to grow)."""


class Sends(NamedTuple):
    n: int
    """Sends in the run."""
    judged: list[Any]
    """The records whose due-to-sent span lies in watched, unstarved time."""
    late: list[tuple[int, float]]
    """(schedule index, seconds late) of the judged sends later than ``late_s``."""
    span_s: float
    """The schedule's span (first to last due)."""
    judged_span_s: float
    """The judged sends' span (first to last due)."""
    starved_s: float
    """How long the starved windows (merged, of every process) cover of the run's span."""

    @property
    def enough(self) -> bool:
        return (self.n > 0 and len(self.judged) >= max(MIN_JUDGED, MIN_JUDGED_SHARE * self.n)
                and self.judged_span_s >= MIN_SPAN_SHARE * self.span_s)

    def why_not_judged(self) -> str:
        return (f"lanemon was starved for {self.starved_s:.1f} s of the run's {self.span_s:.1f} s (its recording's "
                f"client_load windows): {len(self.judged)} of {self.n} sends were due and sent in unstarved time, "
                f"over {self.judged_span_s:.1f} s; the schedule is judged on at least {MIN_JUDGED_SHARE:.0%} of "
                f"them (and {MIN_JUDGED}) over {MIN_SPAN_SHARE:.0%} of the span")

    def verdict(self) -> str:
        """'' when the judged sends kept the schedule, else what went wrong (the judged ones late)."""
        if not self.late:
            return ""
        worst = sorted(self.late, key=lambda x: -x[1])[:5]
        return (f"{len(self.late)} of {len(self.judged)} sends made in unstarved time were late by more than "
                f"{LATE_S} s: " + ", ".join(f"#{i} {s:.3f} s" for i, s in worst))


def judge_sends(records: Iterable[Any], load: ClientLoad, late_s: float = LATE_S) -> Sends:
    """``records``: the run's requests (``sent_ns``, ``meta['i']``, ``meta['scheduled_s']``; a multi-turn run's
    first turns); ``load``: its recording's :func:`~lanemon.measure.load.client_load` fold."""
    recs = [r for r in records if r.sent_ns is not None and r.meta.get("turn", 1) == 1]
    if not recs:
        return Sends(0, [], [], 0.0, 0.0, 0.0)
    due_s = {id(r): float(r.meta["scheduled_s"]) for r in recs}
    origin = min(r.sent_ns - int(due_s[id(r)] * NS) for r in recs)  # the most punctual send is on time
    judged, late = [], []
    for r in recs:
        due = origin + int(due_s[id(r)] * NS)
        if not load.covers(r.sent_ns) or load.overlaps(due - MARGIN_NS, r.sent_ns + MARGIN_NS):
            continue
        judged.append(r)
        if (r.sent_ns - due) / NS > late_s:
            late.append((r.meta["i"], (r.sent_ns - due) / NS))
    first, last = min(due_s.values()), max(due_s.values())
    starved_ns = sum(max(0, min(e, origin + int(last * NS)) - max(s, origin + int(first * NS)))
                     for s, e in load.bound)
    judged_due = [due_s[id(r)] for r in judged]
    return Sends(len(recs), judged, late, last - first, (max(judged_due) - min(judged_due)) if judged else 0.0,
                 starved_ns / NS)


def assert_on_schedule(events, lane: dict, records, skip: bool = True) -> str:
    """The sends kept the schedule: each one due and sent in time the recording says lanemon was not starved
    went out on time (tests/unstarved.py), and -- when it was starved for under 2 % of the measured window
    (docs/JSON.md: a cell is unreliable from 2 %) -- the run's own achieved send rate is the schedule's within
    5 %.  Skips, saying why, when the machine starved it too long to judge (``skip=False``: returns why, '' when
    it judged, for a caller that skips once for all its reasons)."""
    from lanemon.measure.load import client_load

    load = client_load(events)
    start, end = lane["measured_window_ns"]
    starved = load.starved_s(start, end) / ((end - start) / 1e9)
    sends = judge_sends(records, load)
    if sends.enough:
        assert sends.verdict() == "", (sends.verdict(), sends.why_not_judged())
    if starved < 0.02:
        assert sends.enough, sends.why_not_judged()  # not starved: every send is judged
        assert lane["sent_rate_rps"] == pytest.approx(lane["scheduled_rate_rps"], rel=0.05), (lane, starved)
    elif not sends.enough:
        if skip:
            pytest.skip(sends.why_not_judged())
        return sends.why_not_judged()
    return ""
