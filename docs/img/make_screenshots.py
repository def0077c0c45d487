#!/usr/bin/env python3
"""Regenerate the README screenshots from real sessions against the simulated lanes.

    python docs/img/make_screenshots.py            # dashboard.svg, race.svg, bench.svg
    python docs/img/make_screenshots.py race       # just one

The dashboard replays ``sample_sessions/demo.jsonl`` and bench
``sample_sessions/decode.jsonl``; race starts both simulators at real speed (time scale 1.0, so the numbers on screen are
the fitted ones: TTFT ~0.17 s vs ~0.22 s, prose decode ~88 vs ~74 tok/s).  Each drives
the real app in a Textual pilot and saves ``app.save_screenshot()`` in the
default theme.  HOME points at a scratch directory so the recording
path on the status bar reads ``~/.local/share/lanemon/…`` and nothing is
written to the real one.  Takes about two minutes in all.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent
SIZE = (160, 45)


async def wait_for(pilot, condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await pilot.pause(0.1)


def save(app, name: str) -> None:
    app.save_screenshot(filename=name, path=str(OUT))
    print(f"wrote {OUT / name}", file=sys.stderr)


async def dashboard() -> None:
    """The dashboard replaying the sample demo session (recorded against the simulated lanes at real
    time on a quiet machine): a live run on a loaded machine shows every request client-bound."""
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    os.chdir(OUT.parent.parent)  # the status bar shows the path as given: relative, not this machine's
    session = ReplaySession(Path("sample_sessions") / "demo.jsonl", speed=float("inf"))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: session.finished)
        app.redraw(force=True)
        await pilot.pause(0.3)
        save(app, "dashboard.svg")
        await pilot.press("q")


async def race() -> None:
    from lanemon.cli.common import demo_lanes
    from lanemon.config import ProbeConfig
    from lanemon.sessions.sources import LiveSession
    from lanemon.ui.app import make_app
    from lanemon.workloads.race import RacePlan, RacePrompt

    plan = RacePlan(prompts=[RacePrompt("Tell a very short story about a lighthouse keeper.", id="story",
                                        category="prose")], endpoint="chat", max_tokens=160)
    with demo_lanes(1.0) as lanes:
        session = LiveSession(lanes, probe=ProbeConfig(interval=1.0, enabled=False), mode="demo")
        app = make_app(session, race=plan)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.race_state.latest is not None and app.race_state.latest.complete)
            app.redraw(force=True)
            await pilot.pause(0.3)
            save(app, "race.svg")
            await pilot.press("ctrl+q")


async def bench() -> None:
    """The bench screen replaying the sample decode ladder (recorded against the simulated lanes at real time
    on a quiet machine, C1-C6 and the per-category phase): a live run on a loaded machine shows every cell
    as run while lanemon was starved (? marks, no line)."""
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    os.chdir(OUT.parent.parent)  # the status bar shows the path as given: relative, not this machine's
    session = ReplaySession(Path("sample_sessions") / "decode.jsonl", speed=float("inf"))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: session.finished, timeout=600)
        app.redraw(force=True)
        await pilot.pause(0.5)
        app.redraw(force=True)
        await pilot.pause(0.3)
        save(app, "bench.svg")
        await pilot.press("q")


SHOTS = {"dashboard": dashboard, "race": race, "bench": bench}


def main(argv: list[str]) -> int:
    names = argv or list(SHOTS)
    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home
        os.environ["XDG_DATA_HOME"] = str(Path(home) / ".local" / "share")
        os.environ["XDG_CONFIG_HOME"] = str(Path(home) / ".config")  # default theme, no user themes
        for name in names:
            asyncio.run(SHOTS[name]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
