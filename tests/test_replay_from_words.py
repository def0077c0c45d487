"""A replay of a bench or gauntlet recording says the recording it reads (`from sample_sessions/decode.jsonl`),
as dashboard replays do, not `rec → …` as if writing it (issue 40 item 6)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.widgets import Label

from lanemon.sessions.sources import ReplaySession
from lanemon.ui.app import make_app

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.mark.parametrize("name, label", [("decode", "#path"), ("gauntlet", "#g-path")])
async def test_a_bench_or_gauntlet_replay_says_from(name, label):
    source = ReplaySession(SAMPLES / f"{name}.jsonl", speed=float("inf"))
    source.recording_path = Path(f"sample_sessions/{name}.jsonl")
    app = make_app(source)
    async with app.run_test(size=(160, 45)) as pilot:
        deadline = time.monotonic() + 20
        text = ""
        while time.monotonic() < deadline:
            await pilot.pause(0.05)
            found = app.screen.query(label)
            text = str(found.first(Label).render()) if found else ""
            if text:
                break
        assert text == f"from sample_sessions/{name}.jsonl", text
