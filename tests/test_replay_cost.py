"""What a bench replay costs per redraw: the bench fold folds each ``client_load`` window once (the workload's
function is handed the fold, it never re-reads every window so far), hands back the same result object while
nothing in the result changed, and the bench screen draws its table and charts once per change of the result,
never once per redraw.  Counted on sample_sessions/decode.jsonl with a redraw after every event that bumps the
fold's version (the worst case: a max-speed replay redraws at most that often)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanemon import events as schema
from lanemon.folds.bench import BenchResults
from lanemon.measure.load import ClientLoad
from lanemon.recording.reader import read_events
from lanemon.workloads.bench.decode import decode_results

DECODE = Path(__file__).resolve().parent.parent / "sample_sessions" / "decode.jsonl"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture(scope="module")
def decode_events():
    header, events, _ = read_events(DECODE)
    return header, events


def _cell_ends(events) -> int:
    return sum(1 for ev in events if ev.kind == schema.MARK and ev.data.get("label") == "cell"
               and ev.data.get("phase") == "end")


def test_the_fold_reads_each_window_once_and_hands_back_one_object_per_change(decode_events, monkeypatch):
    _, events = decode_events
    applied = 0
    apply = ClientLoad.apply

    def counting(self, ev):
        nonlocal applied
        applied += 1
        return apply(self, ev)

    monkeypatch.setattr(ClientLoad, "apply", counting)
    fold = BenchResults("decode")
    handed: list = []  # every distinct object results() returned, in order
    asked = 0
    for ev in events:
        before = fold.version
        fold.apply(ev)
        if fold.version != before:  # a redraw would ask now
            asked += 1
            got = fold.results(in_progress=True)
            if not handed or got is not handed[-1]:
                handed.append(got)
    windows = sum(1 for ev in events if ev.kind == schema.CLIENT_LOAD)
    ends = _cell_ends(events)
    assert windows > 100 and ends > 10  # the recording has what this test is about
    # each window folded once, by the fold (the old fold re-read every window at each of the ~1,100 asks)
    assert applied == windows
    # a new object is a new result: never the same figures again (a screen redraws on a new object)
    assert all(a != b for a, b in zip(handed, handed[1:]))
    assert len(handed) < asked
    # each ended cell's group recomputed once, and once more for each starved window reported after it ended
    # (decode.jsonl has some: lanemon was starved while it was recorded)
    assert fold.computed <= ends + _reopened(events)
    # and the figures are the workload's own over the whole recording
    monkeypatch.setattr(ClientLoad, "apply", apply)
    assert fold.results(in_progress=False) == decode_results(events)
    # a result handed out earlier is not changed by the cells merged after it
    early = next(r for r in handed if r.lanes)
    assert early == decode_results(events[:_index_of_first_end(events) + 1], in_progress=True)


def _reopened(events) -> int:
    """How many (starved window, cell ended at or after its start) pairs the events hold: the most times a
    starved window reported after a cell's end can send that cell's group to be recomputed."""
    ended: list[int] = []
    n = 0
    for ev in events:
        if ev.kind == schema.MARK and ev.data.get("label") == "cell" and ev.data.get("phase") == "end":
            ended.append(ev.t)
        elif ev.kind == schema.CLIENT_LOAD and ev.data.get("bound"):
            t0 = ev.data.get("t0") if isinstance(ev.data.get("t0"), int) else ev.t
            n += sum(1 for t in ended if t >= t0)
    return n


def _index_of_first_end(events) -> int:
    return next(i for i, ev in enumerate(events) if ev.kind == schema.MARK and ev.data.get("label") == "cell"
                and ev.data.get("phase") == "end")


async def test_the_bench_screen_draws_its_results_once_per_change(decode_events, monkeypatch):
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app
    from lanemon.ui.screens.bench import BenchScreen

    drawn: list = []
    refresh = BenchScreen.refresh_results

    def counting(self, results):
        drawn.append(results)
        return refresh(self, results)

    monkeypatch.setattr(BenchScreen, "refresh_results", counting)
    source = ReplaySession(DECODE, speed=float("inf"))
    source.paused = True  # until this test listens (after the app's fold: it subscribes on mount)
    app = make_app(source)
    cells, redraws, asked = 3, 0, 0

    def after(ev) -> None:  # subscribed after the app's fold: a redraw after every event that bumps its version
        nonlocal redraws, asked, cells
        if ev.kind not in (schema.MARK, schema.CLIENT_LOAD) or cells == 0:
            return
        asked += 1
        redraws += app.redraw(force=True)
        if ev.kind == schema.MARK and ev.data.get("label") == "cell" and ev.data.get("phase") == "end":
            cells -= 1
            if cells == 0:
                source.paused = True  # three cells are enough (a redraw per event of all 28 takes long)

    async with app.run_test(size=(120, 36)) as pilot:
        source.bus.subscribe(after)
        assert not app.bench_results.version  # nothing of the bench folded yet
        source.paused = False
        for _ in range(400):
            await pilot.pause(0.05)
            if cells == 0 or source.finished:
                break
        await pilot.pause()
        assert isinstance(app.screen, BenchScreen) and cells == 0
        assert redraws == asked > 100  # a redraw after every mark and client_load window of three cells
        shown = [r for r in drawn if r is not None]
        assert len(shown[-1].lanes["A"].levels) == 3  # every cell fed shows (A C1..C3)
        # every draw of the table and charts shows a new result, or the same object again (a re-fit to a
        # new width after a resize): never the same figures drawn again because a redraw came
        assert all(b is a or b != a for a, b in zip(shown, shown[1:]))
        distinct = [r for i, r in enumerate(shown) if i == 0 or r is not shown[i - 1]]
        assert len(distinct) < asked / 10
