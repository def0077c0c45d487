"""Which lanes are lanemon's simulator (reports/simulated.py): the same answer for a whole recording as event
by event (the header chips read it live), and what the chips add."""

from __future__ import annotations

from lanemon import events as schema
from lanemon.events import Event
from lanemon.reports.simulated import SimulatedWatch, chip_note, simulated_lanes


def _probe(t: int, lane: str, simulated: bool | None) -> Event:
    data = {"ok": True} if simulated is None else {"ok": True, "simulated": simulated}
    return Event(t=t, kind=schema.PROBE, lane=lane, data=data)


def test_a_lane_whose_models_said_lanemon_sim_is_simulated_and_the_other_is_not():
    events = [_probe(1, "A", None), _probe(2, "B", True), _probe(3, "A", False)]
    assert simulated_lanes({"lanes": [{"name": "A"}, {"name": "B"}]}, events) == ["B"]
    watch = SimulatedWatch({"lanes": [{"name": "A"}, {"name": "B"}]})
    changed = [watch.apply(ev) for ev in events]
    assert changed == [False, True, False]  # only the event that marked B changed the answer
    assert watch.lanes() == ["B"]
    assert chip_note(watch.lanes(), ["A", "B"]) == " · SIM B"


def test_a_demo_header_or_a_bench_run_with_time_scale_makes_every_lane_simulated():
    assert simulated_lanes({"command": "demo --time-scale 0.1", "lanes": [{"name": "A"}, {"name": "B"}]}, []) == ["A", "B"]
    start = Event(t=5, kind=schema.MARK, lane=None,
                  data={"label": "bench", "phase": "start", "config": {"time_scale": 0.05}})
    watch = SimulatedWatch({"lanes": [{"name": "A"}]})
    assert watch.lanes() == [] and chip_note(watch.lanes(), ["A"]) == ""
    assert watch.apply(start) is True
    assert watch.apply(_probe(6, "B", None)) is True  # a lane first seen afterwards is one of the session's
    assert watch.lanes() == ["A", "B"]
    assert chip_note(watch.lanes(), ["A", "B"]) == " · SIM"
    # a bench without time_scale (real lanes) marks nothing
    real = Event(t=5, kind=schema.MARK, lane=None, data={"label": "bench", "phase": "start", "config": {}})
    assert simulated_lanes({"lanes": [{"name": "A"}]}, [real]) == []


def test_a_header_lane_marked_simulated_counts_and_junk_is_ignored():
    header = {"lanes": [{"name": "A", "simulated": True}, {"name": "B"}, "junk", {"simulated": True}]}
    assert simulated_lanes(header, [_probe(1, "B", "yes")]) == ["A"]  # only a real True marks a lane
