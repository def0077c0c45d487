"""lanemon/heap.py: the allocator's free pages go back to the system (glibc), and a live UI does it on a timer."""

from __future__ import annotations

import random
import sys

import psutil
import pytest

from lanemon import heap


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_trim_gives_the_free_pages_in_the_middle_of_the_heap_back():
    if heap._lookup() is None:
        pytest.skip("not glibc")
    rng = random.Random(1)
    kept, freed = [], []
    # buffers too big for Python's small-object allocator, every 8th kept: the freed ones leave holes that
    # glibc does not give back by itself (only the top of the heap is released on free)
    for i in range(24_000):
        (kept if i % 8 == 0 else freed).append(bytearray(rng.randint(1_000, 3_000)))
    del freed
    proc = psutil.Process()
    before = proc.memory_info().rss
    assert heap.trim() is True
    after = proc.memory_info().rss
    # about 40 MB were freed in the middle; trimming returns most of it (without the trim RSS stays)
    assert before - after > 15 * 2**20, (before / 2**20, after / 2**20)
    assert len(kept) == 3_000  # the kept buffers are still there, untouched
    assert all(len(b) >= 1_000 for b in kept)


def test_trim_is_a_no_op_without_glibc(monkeypatch):
    monkeypatch.setattr(heap, "_trim", None)
    assert heap.trim() is False


class _Quiet:
    """A live source that measures nothing until stopped (the app runs it on its own thread)."""

    mode = "live"
    lanes: list = []
    recording_path = None
    paused = False
    speed = None
    finished = False

    def __init__(self, mode: str = "live") -> None:
        from lanemon.bus import EventBus

        self.mode = mode
        self.bus = EventBus()
        self._stop = None

    async def run(self) -> None:
        import asyncio

        self._stop = asyncio.Event()
        await self._stop.wait()
        self.finished = True

    def stop(self) -> None:
        if self._stop is not None:
            self._stop._loop.call_soon_threadsafe(self._stop.set)

    def toggle_pause(self) -> bool:
        return False

    def faster(self) -> None: ...

    def slower(self) -> None: ...


async def test_a_live_ui_trims_on_its_timer_and_a_replay_does_not(monkeypatch):
    import lanemon.ui.app as app_mod
    from lanemon.ui.app import make_app

    calls: list[int] = []
    monkeypatch.setattr(app_mod, "TRIM_EVERY_S", 0.05)
    monkeypatch.setattr(app_mod, "trim_heap", lambda: calls.append(1))
    source = _Quiet()
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            if len(calls) >= 2:
                break
            await pilot.pause(0.05)
        assert len(calls) >= 2  # a measuring (live) source: trimmed on the timer
        source.stop()
    calls.clear()
    source = _Quiet("replay")  # a replay measures nothing: no timer
    async with make_app(source).run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        source.stop()
    assert calls == []
