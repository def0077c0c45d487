"""Start-up stays cheap (issue 40 item 16): `lanemon --help` and `lanemon COMMAND --help` build every command's
parser without importing what only running a command needs (httpx, Textual, workloads, reports, asyncio ...).

A module-set assertion, not a wall-clock one: the time itself is measured in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import textwrap

import pytest

from lanemon.cli.main import build_parser

HEAVY = (
    "httpx", "httpcore", "anyio", "textual", "rich.progress", "rich.console", "asyncio", "multiprocessing",
    "msgspec", "orjson", "statistics", "lanemon.client", "lanemon.workloads", "lanemon.reports", "lanemon.ui",
    "lanemon.sessions", "lanemon.workers", "lanemon.recording", "lanemon.monitor", "lanemon.measure.summary",
    "lanemon.measure.records", "lanemon.folds", "lanemon.sim.server",
)
"""Modules (and their submodules) that building the parser must not import."""
LIGHT = {"lanemon.folds", "lanemon.folds.gauntlet_defaults", "lanemon.workers"}
"""...except these: the packages' empty ``__init__`` and the constants the help names (gauntlet defaults, the
default number of workers)."""

COMMANDS = ("live", "demo", "sim", "check", "replay", "history", "race", "bench", "gauntlet", "report", "compare",
            "qeval", "agree", "kl", "export", "schema", "share", "attach", "web")
SUBCOMMANDS = {"bench": ("decode", "prefill", "needles", "load", "sweep"), "qeval": ("run", "compare", "rescore")}


def modules_after(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has imported once `lanemon ARGV` has printed its help."""
    code = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from lanemon.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main({argv!r})
        print(json.dumps(sorted(sys.modules)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules - LIGHT if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [["--help"], ["demo", "--help"], ["bench", "load", "--help"]])
def test_help_imports_nothing_heavy(argv):
    assert heavy(modules_after(argv)) == []


def _help(argv: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 0
    return buf.getvalue()


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_top_level_help_lists_every_command_with_its_line():
    parser = build_parser()
    assert tuple(_choices(parser)) == COMMANDS
    text = _help(["--help"])
    for command in COMMANDS:
        assert f"\n    {command} " in text
    assert "race one prompt on every lane, side by side" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_help_still_works(command):
    text = _help([command, "--help"])
    assert text.startswith(f"usage: lanemon {command} ")
    subs = _choices(_choices(build_parser())[command])
    assert tuple(subs) == SUBCOMMANDS.get(command, ())
    for sub in subs:
        assert _help([command, sub, "--help"]).startswith(f"usage: lanemon {command} {sub} ")


def test_the_dashboard_imports_no_report_renderer():
    """`lanemon demo`'s first frame waits for the UI's imports: the dashboard reads reports/simulated.py and
    reports/format.py, and importing them must not bring the renderers (jinja2) and the analysis along."""
    code = textwrap.dedent(
        """
        import json, sys
        import lanemon.ui.app, lanemon.sessions.sources
        print(json.dumps(sorted(sys.modules)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    modules = set(json.loads(out.stdout.splitlines()[-1]))
    assert "lanemon.reports.simulated" in modules  # the module the dashboard does read
    assert sorted(m for m in modules if m in ("jinja2", "lanemon.reports.render", "lanemon.reports.analyse")) == []


REPORT_HEAVY = ("httpx", "httpcore", "h11", "jinja2", "lanemon.client", "lanemon.reports.render.html")
"""What reading a recording into a text report never needs: an HTTP client (it sends nothing), the HTML renderer
and its templates.  A report is a short CLI process the suite and scripts run by the hundred."""


@pytest.mark.parametrize("fmt", ["json", "md", "csv"])
def test_a_text_report_imports_no_http_client_and_no_html_renderer(fmt, tmp_path):
    from pathlib import Path

    sample = Path(__file__).resolve().parents[1] / "sample_sessions" / "races.jsonl"
    out = tmp_path / f"report.{fmt}"
    modules = modules_after(["report", str(sample), "--format", fmt, "-o", str(out)])
    assert out.stat().st_size > 0  # the report was written: the module set is a whole run's
    assert sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in REPORT_HEAVY)) == []
