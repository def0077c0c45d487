"""One request fold: the app assembles every request once (the dashboard's fold) and the series fold files
the records it hands back, with the same result as assembling them again."""

from __future__ import annotations

from pathlib import Path

from lanemon import events as schema
from lanemon.folds.dashboard import SessionState
from lanemon.folds.series import SeriesState
from lanemon.measure import records
from lanemon.recording.reader import Recording

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def _events(name: str):
    return list(Recording(SAMPLES / name).events())


def test_series_from_the_dashboards_records_equals_its_own_assembly() -> None:
    for name in ("demo.jsonl", "decode.jsonl"):
        events = _events(name)
        alone = SeriesState()
        for ev in events:
            alone.apply(ev)
        state, shared = SessionState(), SeriesState()
        for ev in events:
            rec = state.apply(ev)
            if not shared.apply_event(ev) and rec is not None:
                shared.add(rec, state.last_metrics)
        assert alone.lanes.keys() == shared.lanes.keys()
        n = 0
        for lane in alone.lanes:
            assert list(alone.samples(lane)) == list(shared.samples(lane)), (name, lane)
            assert list(alone.lanes[lane].server) == list(shared.lanes[lane].server)
            n += len(list(alone.samples(lane)))
        assert n > 10 and alone.load.bound == shared.load.bound and alone.last_t == shared.last_t


def test_the_app_assembles_each_token_once(monkeypatch) -> None:
    from lanemon.ui.app import make_app
    from lanemon.ui.support import NoSource

    calls = 0
    original = records.Assembler.apply

    def counting(self, ev):
        nonlocal calls
        if ev.kind == schema.TOKEN:
            calls += 1
        return original(self, ev)

    monkeypatch.setattr(records.Assembler, "apply", counting)
    events = _events("demo.jsonl")
    app = make_app(NoSource(), refresh_hz=10)
    tokens = 0
    for ev in events:
        app._fold(ev)
        tokens += ev.kind == schema.TOKEN
    assert tokens > 100 and calls == tokens  # not once per fold (the series fold used to assemble them again)
    assert sum(len(s.samples) for s in app.series.lanes.values()) > 0
