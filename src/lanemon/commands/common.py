"""Plumbing shared by the commands: lanes from args, demo lanes, recorders, Ctrl-C.

Nothing here imports Textual.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from lanemon.config import Config, LaneConfig, load_config, merge_lanes

T = TypeVar("T")

DEMO_PROFILES = (("A", "tensorfold-exl3"), ("B", "sglang-native"))


class UsageError(Exception):
    """Bad input: the CLI prints the message and exits 2."""


def err(message: str) -> None:
    print(f"lanemon: {message}", file=sys.stderr)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def int_list(text: str) -> list[int]:
    """``1,2,3`` -> [1, 2, 3] (positive, no duplicates, order kept)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip().replace("_", "")
        if not part:
            continue
        mult = 1
        if part[-1] in "kK":
            part, mult = part[:-1], 1000
        try:
            value = int(float(part) * mult)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4 or 2000,8k; got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"values must be positive; got {value}")
        if value not in out:
            out.append(value)
    if not out:
        raise argparse.ArgumentTypeError("expected at least one number")
    return out


def add_lane_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, metavar="PATH", help="lanes.toml to read (default: the XDG config dir)")
    p.add_argument("--lane", action="append", default=[], metavar="NAME=URL",
                   help="a lane, e.g. A=http://127.0.0.1:8001/v1 (repeatable; overrides the file)")


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """Options every race/bench command takes."""
    add_lane_args(p)
    p.add_argument("--lanes", metavar="A,B", help="use only these lanes, in this order (default: all)")
    p.add_argument("--demo", action="store_true",
                   help="run against the two built-in simulated lanes (A: tensorfold-exl3, B: sglang-native)")
    p.add_argument("--time-scale", type=positive_float, default=1.0, metavar="X",
                   help="with --demo: multiply simulated durations by X (results are reported as measured)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--headless", action="store_true", help="no TUI: progress on stderr, result table on stdout")
    out.add_argument("--json", action="store_true", help="no TUI: the result as one JSON object on stdout")
    rec = p.add_mutually_exclusive_group()
    rec.add_argument("--record", type=Path, metavar="PATH", help="write the recording here (default: XDG data dir)")
    rec.add_argument("--no-record", action="store_true", help="do not record this run")


def load_lanes(args: argparse.Namespace) -> tuple[Config, list[LaneConfig]]:
    """Lanes from the config file and --lane, filtered and ordered by --lanes."""
    config = merge_lanes(load_config(getattr(args, "config", None)), getattr(args, "lane", []) or [])
    lanes = list(config.lanes)
    wanted = getattr(args, "lanes", None)
    if wanted:
        names = [n.strip() for n in wanted.split(",") if n.strip()]
        by_name = {lane.name: lane for lane in lanes}
        missing = [n for n in names if n not in by_name]
        if missing:
            known = ", ".join(by_name) or "none configured"
            raise UsageError(f"--lanes: unknown lane(s) {', '.join(missing)} (lanes: {known})")
        lanes = [by_name[n] for n in names]
    return config, lanes


@contextlib.contextmanager
def demo_lanes(time_scale: float = 1.0, **sim_kw: Any) -> Iterator[list[LaneConfig]]:
    """Start the two simulated lanes in-process; yield their LaneConfigs; stop them after."""
    from lanemon.sim.server import SimThread

    sims = []
    try:
        for _, profile in DEMO_PROFILES:
            sims.append(SimThread(profile, time_scale=time_scale, **sim_kw).start())
        yield [LaneConfig(name, sim.base_url, defaults={"temperature": 0})
               for (name, _), sim in zip(DEMO_PROFILES, sims)]
    finally:
        for sim in sims:
            sim.stop()


@contextlib.contextmanager
def workload_lanes(args: argparse.Namespace) -> Iterator[list[LaneConfig]]:
    """--demo lanes, or the configured ones (UsageError when there are none)."""
    if getattr(args, "demo", False):
        with demo_lanes(args.time_scale) as lanes:
            wanted = getattr(args, "lanes", None)
            if wanted:
                names = [n.strip() for n in wanted.split(",") if n.strip()]
                lanes = [lane for lane in lanes if lane.name in names] or lanes
            yield lanes
        return
    _, lanes = load_lanes(args)
    if not lanes:
        raise UsageError("no lanes: pass --lane NAME=URL (repeatable), create lanes.toml (see README), "
                         "or add --demo to use the simulated lanes")
    yield lanes


def open_recorder(args: argparse.Namespace, command: str, lanes: list[dict[str, Any]],
                  extra: dict[str, Any] | None = None):
    """The run's Recorder (None with --no-record); UsageError if the file cannot be created."""
    from lanemon.record.recorder import Recorder, default_recording_path, make_header

    if getattr(args, "no_record", False):
        return None
    path = getattr(args, "record", None) or default_recording_path(command)
    try:
        return Recorder(path, make_header(command, lanes, extra))
    except OSError as exc:
        raise UsageError(f"cannot create recording {path}: {exc.strerror or exc}") from None


def run_interruptible(fn: Callable[[], Awaitable[T]], cleanup: Callable[[], Awaitable[None]] | None = None
                      ) -> tuple[T | None, bool]:
    """Run ``fn()`` in a fresh event loop; the first Ctrl-C (SIGINT) cancels it cleanly.

    Returns ``(result, interrupted)``.  ``cleanup`` runs in the same loop either
    way (close clients, flush the recorder).  A second Ctrl-C while cleaning up
    is ignored so the recording is never left half-written.
    """

    async def main() -> tuple[T | None, bool]:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        state = {"interrupted": False}

        def on_sigint() -> None:
            if not state["interrupted"]:
                state["interrupted"] = True
                err("interrupted: stopping; finished work is kept")
                assert task is not None
                task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        result: T | None = None
        try:
            try:
                result = await fn()
            except asyncio.CancelledError:
                if not state["interrupted"]:
                    raise
                if task is not None:
                    task.uncancel()
            finally:
                if cleanup is not None:
                    await cleanup()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
        return result, state["interrupted"]

    return asyncio.run(main())
