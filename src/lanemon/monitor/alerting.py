"""Alert rules at the edge: evaluate on a timer, publish ``alert`` events, print a line, run a command.

The rules and their evaluation are pure (measure/alerts.py); this module feeds them the monitor's figures
(folds/monitor.py) every :attr:`Alerter.interval` seconds, and for every transition

* publishes an ``alert`` event on the bus (so the recording, the share viewers and the TUI see it);
* calls ``on_transition`` (headless: one line on stderr; the TUI: a banner and the bell);
* runs the rule's ``command`` when it has one: an argv list (never a shell), the alert as JSON on stdin,
  stdout and stderr discarded, killed after :data:`COMMAND_TIMEOUT_S`; at most :data:`MAX_COMMANDS` at
  once (one more is skipped with a note).  Each command starts its own session (process group): when the
  command times out its whole group is killed, and when the alerter stops (lanemon exits) every group it
  started is killed, so a command that forks leaves nothing running behind lanemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Sequence

import orjson

from lanemon import events as schema
from lanemon.events import Clock, Event
from lanemon.results.requests import note_data
from lanemon.folds.monitor import MonitorState
from lanemon.measure.alerts import AlertEngine, Rule, Transition

COMMAND_TIMEOUT_S = 10.0
MAX_COMMANDS = 4
DEFAULT_INTERVAL_S = 1.0


class Alerter:
    def __init__(self, rules: Sequence[Rule], state: MonitorState, publish: Callable[[Event], None], clock: Clock, *,
                 interval: float = DEFAULT_INTERVAL_S,
                 on_transition: Callable[[Transition], None] | None = None) -> None:
        self.engine = AlertEngine(rules)
        self.state = state
        self.publish = publish
        self.clock = clock
        self.interval = interval
        self.on_transition = on_transition
        self.history: list[Transition] = []
        """Every transition so far, oldest first (the TUI's list of alerts)."""
        self._commands: set[asyncio.Task] = set()
        self._groups: set[int] = set()
        """Process groups of the commands started (each its own session: pgid == the command's pid)."""
        self._stop = asyncio.Event()

    def evaluate(self) -> list[Transition]:
        """One evaluation now: the transitions, already published and handed on."""
        now = self.clock.now()
        out = self.engine.evaluate(now, self.state.figures(now))
        for tr in out:
            self.history.append(tr)
            del self.history[:-500]
            self.publish(Event(now, schema.ALERT, tr.lane, None, tr.to_json()))
            if self.on_transition is not None:
                self.on_transition(tr)
            if tr.rule.command:
                self._spawn(tr)
        return out

    async def run(self) -> None:
        """Evaluate every ``interval`` seconds until :meth:`stop`; waits for running commands at the end."""
        try:
            while not self._stop.is_set():
                self.evaluate()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.interval)
        finally:
            if self._commands:
                await asyncio.wait(list(self._commands), timeout=COMMAND_TIMEOUT_S + 1)
            self.kill_groups()

    def kill_groups(self) -> None:
        """Kill every process group a command started (what a forking command left behind too)."""
        for pgid in list(self._groups):
            _killpg(pgid)
        self._groups.clear()

    def stop(self) -> None:
        self._stop.set()

    def _spawn(self, tr: Transition) -> None:
        if len(self._commands) >= MAX_COMMANDS:
            self._note(f"alert command skipped ({MAX_COMMANDS} still running): {tr.rule.label()}")
            return
        task = asyncio.get_running_loop().create_task(self._run_command(tr))
        self._commands.add(task)
        task.add_done_callback(self._commands.discard)

    def _note(self, message: str, level: str = "warning") -> None:
        self.publish(Event(self.clock.now(), schema.NOTE, None, None, note_data(message, level)))

    async def _run_command(self, tr: Transition) -> None:
        argv = list(tr.rule.command or ())
        payload = orjson.dumps(tr.to_json())
        try:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            self._note(f"alert command {argv[0]!r} could not start: {exc.strerror or exc}")
            return
        self._groups.add(proc.pid)
        try:
            await asyncio.wait_for(proc.communicate(payload), COMMAND_TIMEOUT_S)
        except asyncio.TimeoutError:
            _killpg(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            self._note(f"alert command {argv[0]!r} killed after {COMMAND_TIMEOUT_S:g} s")
            return
        if proc.returncode:
            self._note(f"alert command {argv[0]!r} exited with {proc.returncode}")


def _killpg(pgid: int) -> None:
    """SIGKILL process group ``pgid`` (a command's own session); nothing if it is gone."""
    if not hasattr(os, "killpg"):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pgid, signal.SIGKILL)
