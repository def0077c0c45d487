"""Issue 39, done-when: every string that reaches a terminal passes one gate (``inert``).

A recording (tests/hostile_edges3.py) carries escape sequences -- OSC title sets, CSI, 8-bit CSI/OSC, C1
controls, BEL, bidi overrides -- in every string field of every event kind of recording/schema.py, in the
envelope and in the header.  It is read through every CLI output path (report in every format, compare,
export, history) and replayed in the dashboard; ``race --headless`` runs against a hostile lane.  No
forbidden character may reach stdout, stderr or the rendered screen.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_edges3 import ESC, escape_events, escape_recording, leaks
from hostile_server import HostileLane, HostileServer

from lanemon.recording.reader import Recording
from lanemon.recording.schema import DATA_SCHEMAS

SRC = str(Path(__file__).resolve().parent.parent / "src")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def lanemon(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="300", PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_every_event_kind_and_string_field_read_is_inert(tmp_path):
    """The gate itself: every event and the header read back hold no forbidden character anywhere."""
    rec = Recording(escape_recording(tmp_path / "e.jsonl"))
    events = list(rec.events())
    assert {ev.kind for ev in events} >= set(DATA_SCHEMAS) and rec.skipped == 0
    assert leaks(repr(rec.header).encode().decode("unicode_escape", "ignore")) == []
    assert leaks(str(rec.header)) == [] and "PWNED" not in str(rec.header).replace("0;PWNED", "")
    for ev in events:
        assert leaks(f"{ev.kind}{ev.lane}{ev.req}{ev.data}") == [], ev
    tokens = [ev for ev in events if ev.kind == "token"]
    assert tokens[0].data["text"].startswith("w0 ")  # model text kept (minus the escapes)


@pytest.mark.parametrize("args", [
    ("report", "-f", "md"), ("report", "-f", "html"), ("report", "-f", "json"), ("report", "-f", "csv"),
    ("export",), ("export", "--format", "csv"), ("export", "--requests"),
    ("compare", "--format", "table"), ("compare", "--format", "md"), ("compare", "--format", "json"),
], ids=lambda a: "-".join(a))
def test_cli_output_paths_write_no_escape(tmp_path, args):
    a = escape_recording(tmp_path / "a.jsonl")
    files = [str(a), str(escape_recording(tmp_path / "b.jsonl"))] if args[0] == "compare" else [str(a)]
    out = lanemon(*args, *files)
    assert "Traceback" not in out.stderr, out.stderr
    assert leaks(out.stdout) == [] and leaks(out.stderr) == [], (leaks(out.stdout), leaks(out.stderr))


def test_history_rebuild_and_listing_write_no_escape(tmp_path):
    """Row 4: a header date (and lane, command, model) with escapes, through --rebuild, the table and --json."""
    recs = tmp_path / "recs"
    recs.mkdir()
    escape_recording(recs / "a.jsonl")
    cat = tmp_path / "cat.sqlite3"
    built = lanemon("history", "--rebuild", "--recordings", str(recs), "--catalogue", str(cat))
    listed = lanemon("history", "--catalogue", str(cat))
    as_json = lanemon("history", "--catalogue", str(cat), "--json")
    for out in (built, listed, as_json):
        assert out.returncode == 0, out.stderr
        assert leaks(out.stdout + out.stderr) == [], (leaks(out.stdout), out.stderr)
    assert "2026-12-01 10:00:00" in listed.stdout


def test_history_lists_an_old_catalogue_row_with_escapes_inert(tmp_path):
    """A catalogue written before the gate (or by hand) still holds raw strings: the table makes them inert."""
    from lanemon.cli.history import render
    from lanemon.measure.summary import LaneSummary

    fields = {f: None for f in LaneSummary.__struct_fields__}
    fields.update(session="s" + ESC, lane="A" + ESC, workload="race" + ESC, level="" + ESC,
                  started="2026-12-01" + ESC, model="m" + ESC, simulated=False, requests=1)
    text = render([LaneSummary(**{k: v for k, v in fields.items() if v is not None})], "ttft_p50")
    assert leaks(text) == [], leaks(text)


@pytest.mark.parametrize("args", [
    ("race", "--headless", "--max-tokens", "8", "--deadline", "20", "--prompt", "hi", "--no-record"),
    ("check", "--deadline", "20"),
    ("bench", "decode", "--headless", "--levels", "1", "--reps", "1", "--max-tokens", "8", "--no-categories",
     "--deadline", "20", "--no-record"),
    ("live", "--headless", "--duration", "2", "--interval", "0.3", "--no-record"),
], ids=["race", "check", "bench-decode", "live-headless"])
def test_commands_against_a_hostile_lane_write_no_escape(tmp_path, args):
    """The lane's model id, error bodies and stream text carry escapes: no command prints one (the one gate)."""
    with HostileServer(HostileLane("sk-gate-0123456789abcdef", unauthorized_every=0, stream_error_every=2)) as srv:
        lane = [srv.url] if args[0] == "check" else ["--lane", f"H={srv.url}"]
        out = lanemon(*args[:1], *lane, *args[1:], timeout=120) if args[0] == "check" else \
            lanemon(*args, *lane, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    assert leaks(out.stdout + out.stderr) == [], (leaks(out.stdout), leaks(out.stderr))


async def test_replay_screen_renders_no_escape(tmp_path):
    """Row 1 and the done-when's TUI half: the replay dashboard (notes, alerts, errors, lanes) renders inert."""
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    source = ReplaySession(escape_recording(tmp_path / "e.jsonl"), speed=math.inf)
    app = make_app(source)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.redraw(force=True)
        await pilot.pause()
        shots = [app.export_screenshot()]
        titles = [str(app.title), str(app.sub_title)]
        notes = [str(n.message) + str(n.title) for n in app._notifications]
        for key in ("e", "escape"):
            await pilot.press(key)
            await pilot.pause()
            shots.append(app.export_screenshot())
            titles.append(str(app.screen.title if hasattr(app.screen, "title") else ""))
    assert source.finished and app.state.events == len(escape_events())
    for text in shots + titles + notes:
        assert leaks(text) == [], leaks(text)
