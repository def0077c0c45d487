"""Issue 37, one model per event kind: an ``alert`` and a ``lane_state`` event's data is made from its typed model
(results/monitor_events.py: ``AlertEvent``, ``LaneDown`` / ``LaneUp``) by its producer (measure/alerts.py
``Transition``, folds/monitor.py ``LaneChange``), and the recording checker of both kinds is made from the same
models (recording/schema.py ``checker``): the JSON object is the one recordings always held (keys, order, values)."""

from __future__ import annotations

import msgspec
import orjson
import pytest

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.monitor import Availability, LaneChange
from lanemon.measure.alerts import AlertEngine, parse_rule
from lanemon.recording.schema import BadRow, checker, data_schemas, decode_event
from lanemon.results.monitor_events import (AlertEvent, LaneDown, LaneUp, event_data, read_alert,
                                            read_lane_state)

S = 1_000_000_000


def names(cls) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(cls)]


def line(kind: str, data: dict) -> bytes:
    return orjson.dumps({"t": 1, "kind": kind, "lane": "A", "req": None, "data": data})


def transitions():
    engine = AlertEngine([parse_rule("ttft_p50 > 0.05 and decode_tok_s < 10 for 2s", severity="critical")])
    fired = engine.evaluate(0, {"A": {"ttft_p50": 0.2, "decode_tok_s": 1.23456789}}) + \
        engine.evaluate(3 * S, {"A": {"ttft_p50": 0.2, "decode_tok_s": 1.23456789}})
    resolved = engine.evaluate(5 * S + 123_456_789, {"A": {"ttft_p50": None, "decode_tok_s": 20}})
    assert [t.state for t in fired + resolved] == ["firing", "resolved"]
    return fired[0], resolved[0]


def test_an_alert_event_is_its_model_with_the_keys_recordings_hold():
    firing, resolved = transitions()
    data = firing.to_json()
    assert list(data) == ["state", "alert", "rule", "for_s", "severity", "lane", "values", "since_s", "t_s"]
    assert data == {"state": "firing", "alert": "ttft_p50 > 0.05 and decode_tok_s < 10 for 2s",
                    "rule": "ttft_p50 > 0.05 and decode_tok_s < 10", "for_s": 2.0, "severity": "critical", "lane": "A",
                    "values": {"ttft_p50": 0.2, "decode_tok_s": 1.234568}, "since_s": 0.0, "t_s": 3.0}
    assert resolved.to_json()["values"] == {"ttft_p50": None, "decode_tok_s": 20.0}
    assert resolved.to_json()["t_s"] == 5.123
    assert isinstance(firing.event(), AlertEvent) and event_data(firing.event()) == data
    back = read_alert(orjson.loads(orjson.dumps(data)))  # what a reader of the recording gets
    assert back == firing.event()


def _changes():
    av = Availability()
    down = av.apply(Event(2 * S, schema.PROBE, "D", None, {"ok": False, "message": "refused"}))  # no cls
    up = av.apply(Event(5 * S + 250_000_000, schema.PROBE, "D", None, {"ok": True, "model": "m"}))
    assert isinstance(down, LaneChange) and isinstance(up, LaneChange)
    return down, up


def test_a_lane_state_event_is_its_model_with_the_keys_recordings_hold():
    down, up = _changes()
    assert list(down.to_json().items()) == [("state", "down"), ("t_s", 2.0), ("cls", None), ("message", "refused")]
    assert list(up.to_json().items()) == [("state", "up"), ("t_s", 5.25), ("since_s", 2.0), ("down_s", 3.25)]
    assert isinstance(down.event(), LaneDown) and isinstance(up.event(), LaneUp)
    for change in (down, up):
        assert read_lane_state(orjson.loads(orjson.dumps(change.to_json()))) == change.event()
    assert read_lane_state({"state": "sideways", "t_s": 1.0}) is None
    assert read_lane_state({"state": "down", "t_s": 1.0}) is None  # a key missing: does not fit
    assert read_alert({"state": "firing", "alert": "x"}) is None


def test_the_recording_checker_of_both_kinds_is_made_from_the_models():
    assert names(data_schemas()[schema.ALERT]) == names(AlertEvent)
    assert names(data_schemas()[schema.LANE_STATE]) == ["state", *names(LaneDown),
                                                          *[n for n in names(LaneUp) if n not in names(LaneDown)]]
    assert data_schemas()[schema.LANE_STATE] is checker(LaneDown, LaneUp, name="LaneStateData")


@pytest.mark.parametrize("kind, data", [
    (schema.LANE_STATE, {"state": 1, "t_s": 1.0}),  # the tag is checked as a string
    (schema.LANE_STATE, {"state": "down", "t_s": 1.0, "cls": ["connect"]}),
    (schema.LANE_STATE, {"state": "up", "t_s": 1.0, "down_s": "long"}),
    (schema.ALERT, {"state": "firing", "values": {"ttft_p50": "high"}}),
    (schema.ALERT, {"state": "firing", "for_s": "2s"}),
])
def test_a_monitor_event_of_the_wrong_type_is_a_bad_line(kind, data):
    with pytest.raises(BadRow, match=f"{kind} event"):
        decode_event(line(kind, data))


def test_an_older_or_newer_monitor_event_is_read():
    """Every field optional (an older lanemon's), unknown keys kept (a newer one's)."""
    for kind, data in [(schema.LANE_STATE, {"state": "down", "reason": "new"}), (schema.ALERT, {"state": "firing"})]:
        assert decode_event(line(kind, data)).data == data
