"""Plumbing shared by the commands: lanes from args, demo lanes, recorders, Ctrl-C.

Nothing here imports Textual.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lanemon.config import MAX_SECONDS, Config, ConfigError, LaneConfig, check_number, load_config, merge_lanes

if TYPE_CHECKING:
    from lanemon.recording.writer import Recorder

T = TypeVar("T")

DEMO_PROFILES = (("A", "tensorfold-exl3"), ("B", "sglang-native"))


# Exit codes every command shares: 0 done, 1 a lane failed or was down, 2 bad input (UsageError),
# 4 data lost: a recording or an -o output could not be completed (disk full, unwritable, cut; stderr
# says what was kept), 130 interrupted by Ctrl-C with what finished kept.  (3: `kl`, logprobs not exposed.)
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_DATA_LOST, EXIT_INTERRUPTED = 0, 1, 2, 4, 130


class DataLost(Exception):
    """Output could not be completed (disk full, unwritable): the CLI prints the message and exits 4."""


class _LostData:
    """What this command run lost (recordings that failed): ``cli.main`` turns a 0 or 1 into exit 4 when
    any is listed, so no command can report success over lost data whatever path it took."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def reset(self) -> None:
        self.messages.clear()

    def add(self, message: str) -> None:
        self.messages.append(message)

    def exit_code(self, code: int) -> int:
        return EXIT_DATA_LOST if self.messages and code in (EXIT_OK, EXIT_FAIL) else code


LOST = _LostData()


class UsageError(Exception):
    """Bad input: the CLI prints the message and exits 2."""


class CommandError(Exception):
    """The command could not run (e.g. a demo lane's simulator did not start): one line, exit 1."""


def err(message: str) -> None:
    print(f"lanemon: {message}", file=sys.stderr)


MAX_COUNT = 10_000_000
"""The largest count (requests, tokens, reps, workers...) a flag may name."""


def parse_number(text: str | None, flag: str, *, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, integer: bool = False, unit: str = "") -> Any:
    """A flag's text as a finite number in range (:func:`lanemon.config.check_number`, the rule config files
    follow); None stays None; UsageError naming *flag* otherwise (``1_000`` and ``2e3`` are accepted)."""
    if text is None:
        return None
    value = _number_text(str(text), integer)
    try:
        return check_number(value, flag, lo=lo, hi=hi, lo_open=lo_open, integer=integer, unit=unit,
                            shown=_quoted(str(text)))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _number_text(text: str, integer: bool) -> Any:
    cleaned = text.strip()
    try:
        return int(cleaned) if integer and cleaned.lstrip("+-").replace("_", "").isdigit() else float(cleaned)
    except ValueError:
        return text


def _quoted(text: str) -> str:
    from lanemon.untrusted import inert

    return repr(inert(text, 40))


def number_arg(*, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
               integer: bool = False, unit: str = "") -> Callable[[str], Any]:
    """An argparse ``type=`` for a finite number in range, e.g. ``number_arg(lo=0, lo_open=True, hi=1e6)``:
    ``nan``, ``inf``, ``1e999`` and out-of-range values are refused with the flag named (exit 2)."""

    def parse(text: str) -> Any:
        value = _number_text(text, integer)
        try:
            return check_number(value, "value", lo=lo, hi=hi, lo_open=lo_open, integer=integer, unit=unit,
                                shown=_quoted(text))
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value: ")) from None

    parse.__name__ = "whole number" if integer else "number"  # argparse names the type in its messages
    return parse


positive_float = number_arg(lo=0, lo_open=True, hi=MAX_SECONDS)
"""A positive, finite number (seconds, a time scale, a rate) up to 30 days' worth of seconds."""
positive_int = number_arg(lo=1, hi=MAX_COUNT, integer=True)
"""A whole number from 1 to 10 million."""
seconds_arg = number_arg(lo=0, lo_open=True, hi=MAX_SECONDS, unit="seconds")
"""A positive duration in seconds, at most 30 days."""


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
            number = float(part) * mult
            if not math.isfinite(number) or not number.is_integer():
                raise ValueError(part)
            value = int(number)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected whole numbers like 1,2,4 or 2000,8k; got {text!r}") from None
        if not 1 <= value <= MAX_COUNT:
            raise argparse.ArgumentTypeError(f"values must be from 1 to {MAX_COUNT:,}; got {value:,}")
        if value not in out:
            out.append(value)
    if not out:
        raise argparse.ArgumentTypeError("expected at least one number")
    return out


PIPE_WIDTH = 1000
"""Columns a headless table is laid out for when stdout is not a terminal: every column printed, none hidden."""


def output_console(width: int | None = None, *, terminal: bool | None = None):
    """The Rich console a headless command prints its tables on: ``width`` when given (``--width N``), else the
    terminal's width, else (a file or a pipe) :data:`PIPE_WIDTH` -- output that is not a terminal is whole."""
    from rich.console import Console

    if width:
        return Console(width=width)
    if terminal is None:
        terminal = Console().is_terminal
    return Console() if terminal else Console(width=PIPE_WIDTH)


def add_lane_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, metavar="PATH", help="lanes.toml to read (default: the XDG config dir)")
    p.add_argument("--lane", action="append", default=[], metavar="NAME=URL",
                   help="a lane, e.g. A=http://127.0.0.1:8001/v1 (repeatable; overrides the file)")
    p.add_argument("--telemetry", action="append", default=[], metavar="NAME=URL",
                   help="where lane NAME's GPUs report: a dcgm-exporter URL (A=http://host:9400/metrics) or "
                        "NAME=nvml for this machine's GPUs (repeatable; overrides lanes.toml; docs/GPU.md)")
    p.add_argument("--cost", action="append", default=[], metavar="NAME=USD_PER_HOUR",
                   help="what lane NAME's GPUs cost per hour, e.g. A=3.5: results gain USD per 1M output tokens "
                        "(repeatable; overrides lanes.toml cost_per_hour)")


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """Options every race/bench command takes."""
    add_lane_args(p)
    p.add_argument("--lanes", metavar="A,B", help="use only these lanes, in this order (default: all)")
    p.add_argument("--demo", action="store_true",
                   help="run against the two built-in simulated lanes (A: tensorfold-exl3, B: sglang-native)")
    p.add_argument("--time-scale", type=positive_float, default=1.0, metavar="X",
                   help="with --demo: multiply simulated durations by X (results are reported as measured)")
    add_fault_args(p)
    add_stall_arg(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--headless", action="store_true", help="no TUI: progress on stderr, result table on stdout")
    out.add_argument("--json", action="store_true", help="no TUI: the result as one JSON object on stdout")
    p.add_argument("--width", type=number_arg(lo=20, hi=PIPE_WIDTH, integer=True), default=None, metavar="N",
                   help="--headless: lay tables out for N columns (default: the terminal's width; every column when "
                        "stdout is a file or a pipe)")
    rec = p.add_mutually_exclusive_group()
    rec.add_argument("--record", type=Path, metavar="PATH", help="write the recording here (default: XDG data dir)")
    rec.add_argument("--no-record", action="store_true", help="do not record this run")


def add_measure_args(p: argparse.ArgumentParser) -> None:
    """``--thinking on|off`` and ``--slo`` (race and every bench)."""
    p.add_argument("--thinking", choices=("on", "off"), default=None,
                   help="switch a thinking model on or off on every request: sets chat_template_kwargs.thinking "
                        "(and reasoning_effort when on); implies --chat (default: the lane's own defaults)")
    p.add_argument("--slo", nargs="+", metavar="KEY=S",
                   help="service-level targets in seconds, e.g. --slo ttft=0.5 tpot=0.05 e2e=10: report goodput, "
                        "the share and rate of requests meeting every target")


def thinking_arg(args: argparse.Namespace) -> bool | None:
    value = getattr(args, "thinking", None)
    return None if value is None else value == "on"


def slo_arg(args: argparse.Namespace) -> dict[str, float] | None:
    """The parsed ``--slo`` (None when not given); UsageError for bad input."""
    from lanemon.measure.metrics import parse_slo

    items = getattr(args, "slo", None)
    if not items:
        return None
    try:
        slo = parse_slo(items)
    except ValueError as exc:
        raise UsageError(f"--slo: {exc}") from None
    if not slo:
        raise UsageError("--slo: expected targets like ttft=0.5 tpot=0.05 e2e=10")
    return slo


def lane_extras(args: argparse.Namespace, config: Config) -> Config:
    """``--telemetry`` and ``--cost`` applied to the lanes of *config* (ConfigError names a bad one)."""
    from lanemon.config import apply_lane_extras

    return apply_lane_extras(config, getattr(args, "telemetry", None), getattr(args, "cost", None))


def load_lanes(args: argparse.Namespace) -> tuple[Config, list[LaneConfig]]:
    """Lanes from the config file and --lane, filtered and ordered by --lanes."""
    config = merge_lanes(load_config(getattr(args, "config", None)), getattr(args, "lane", []) or [])
    config = lane_extras(args, config)
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


def fault_spec(text: str):
    """argparse type for ``--fault-a`` / ``--fault-b``: a parsed fault spec (docs/FAULTS.md)."""
    from lanemon.sim.options import fault_spec as parse

    return parse(text)


def add_fault_args(p: argparse.ArgumentParser) -> None:
    """``--fault-a SPEC`` / ``--fault-b SPEC`` (repeatable): faults injected by the demo lanes' simulators."""
    for lane in ("a", "b"):
        p.add_argument(f"--fault-{lane}", action="append", default=[], type=fault_spec, metavar="SPEC",
                       help=f"demo lane {lane.upper()}: inject a fault, e.g. drop:50, http:503@0.2, stall:30#4 "
                            "(repeatable; docs/FAULTS.md)")


def add_stall_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stall-timeout", type=seconds_arg, metavar="S",
                   help="a request that makes no progress for S seconds fails: no byte at all is a timeout, "
                        "only keep-alive comments or a drip is 'stalled' (default: each lane's lanes.toml "
                        "timeout, 600 s)")
    p.add_argument("--deadline", type=seconds_arg, metavar="S",
                   help="a whole request may take at most S seconds, however the server keeps it alive "
                        "(default: each lane's lanes.toml deadline, 1800 s)")


def with_stall_timeout(lanes: list[LaneConfig], seconds: float | None,
                       deadline: float | None = None) -> list[LaneConfig]:
    """``--stall-timeout`` / ``--deadline``: the lanes with their stall ``timeout`` / whole-request
    ``deadline`` replaced (None keeps them)."""
    if seconds is not None:
        lanes = [dataclasses.replace(lane, timeout=float(seconds)) for lane in lanes]
    if deadline is not None:
        lanes = [dataclasses.replace(lane, deadline=float(deadline)) for lane in lanes]
    return lanes


def sim_args(faults: Any = None, **sim_kw: Any) -> tuple[str, ...]:
    """Simulator keyword options (as :class:`~lanemon.sim.server.SimThread` takes them) as
    ``python -m lanemon.sim`` arguments: ``agent="loop"`` -> ``--agent loop``, ``thinking=True`` ->
    ``--thinking``, ``spec_accept=(1, 4)`` -> ``--spec-accept 1-4``, each fault spec -> ``--fault SPEC``."""
    out: list[str] = []
    for key, value in sim_kw.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif key == "spec_accept":
            lo, hi = value
            out += [flag, f"{lo}-{hi}"]
        elif key == "qeval_misses" and not isinstance(value, str):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    for spec in faults or ():
        out += ["--fault", str(getattr(spec, "text", "") or spec)]
    return tuple(out)


@contextlib.contextmanager
def demo_lanes(time_scale: float = 1.0, *, faults_a: Any = None, faults_b: Any = None,
               stall_timeout: float | None = None, deadline: float | None = None, processes: bool = True,
               **sim_kw: Any) -> Iterator[list[LaneConfig]]:
    """Start the two simulated lanes; yield their LaneConfigs; stop them after.

    Each simulator runs in its own child process (:class:`lanemon.sim.process.SimProcess`, started side
    by side), so it never shares lanemon's CPU time slice or interpreter lock with the client that measures
    it; the children die with lanemon (also when it is killed) and pick free loopback ports.  A simulator
    that does not start is a :class:`CommandError` quoting its log.  *processes=False* runs them as
    threads in this process instead (``bench load --demo-in-process``).
    *faults_a* / *faults_b*: fault specs injected by lane A's / B's simulator (sim/faults.py);
    *stall_timeout*: the lanes' read/stall timeout (LaneConfig.timeout); *sim_kw*: more simulator options
    (``agent="loop"``, ...; see :func:`sim_args`).
    """
    sims: list[Any] = []
    try:
        if processes:
            from lanemon.sim.process import SimProcess

            try:
                for (_, profile), faults in zip(DEMO_PROFILES, (faults_a, faults_b)):
                    sims.append(SimProcess(profile, time_scale=time_scale,
                                           extra=sim_args(faults, gpu_telemetry_port=0, **sim_kw), wait=False))
                urls = [sim.wait_ready().url for sim in sims]
            except (OSError, RuntimeError) as exc:
                raise CommandError(f"cannot start the demo lanes: {exc}") from None
        else:
            from lanemon.sim.server import SimThread

            for (name, profile), faults in zip(DEMO_PROFILES, (faults_a, faults_b)):
                kw = dict(sim_kw, faults=list(faults)) if faults else sim_kw
                sims.append(SimThread(profile, time_scale=time_scale, gpu_telemetry_port=0, **kw).start())
            urls = [sim.base_url for sim in sims]
        # each simulated lane's GPU reports in dcgm-exporter's format (sim/gpu.py, docs/GPU.md)
        telemetry = [sim.telemetry_url if getattr(sim, "gpu_port", 0) is not None else None for sim in sims]
        lanes = [LaneConfig(name, url, defaults={"temperature": 0}, telemetry=tel)
                 for (name, _), url, tel in zip(DEMO_PROFILES, urls, telemetry)]
        yield with_stall_timeout(lanes, stall_timeout, deadline)
    finally:
        for sim in sims:
            sim.stop()


@contextlib.contextmanager
def workload_lanes(args: argparse.Namespace) -> Iterator[list[LaneConfig]]:
    """--demo lanes, or the configured ones (UsageError when there are none)."""
    stall = getattr(args, "stall_timeout", None)
    if getattr(args, "demo", False):
        with demo_lanes(args.time_scale, faults_a=getattr(args, "fault_a", None),
                        faults_b=getattr(args, "fault_b", None), stall_timeout=stall,
                        deadline=getattr(args, "deadline", None),
                        processes=getattr(args, "sim_processes", True)) as lanes:
            wanted = getattr(args, "lanes", None)
            if wanted:
                names = [n.strip() for n in wanted.split(",") if n.strip()]
                lanes = [lane for lane in lanes if lane.name in names] or lanes
            yield list(lane_extras(args, Config(tuple(lanes))).lanes)
        return
    if getattr(args, "fault_a", None) or getattr(args, "fault_b", None):
        raise UsageError("--fault-a/--fault-b need --demo (they configure the simulated lanes)")
    _, lanes = load_lanes(args)
    if not lanes:
        raise UsageError("no lanes: pass --lane NAME=URL (repeatable), create lanes.toml (see README), "
                         "or add --demo to use the simulated lanes")
    yield with_stall_timeout(lanes, stall, getattr(args, "deadline", None))


def open_recorder(args: argparse.Namespace, command: str, lanes: list[dict[str, Any]],
                  extra: dict[str, Any] | None = None, *, clock: Any = None, hold_header: bool = False):
    """The run's Recorder (None with --no-record); UsageError if the file cannot be created.

    ``clock``: the session's Clock, so the header carries the wall-clock time of its t = 0 (``wall_t0_s``).
    ``hold_header``: the header waits for :meth:`~lanemon.recording.writer.Recorder.release_header` (the run
    adds what it learns first, e.g. its workers' hosts)."""
    from lanemon.recording.writer import Recorder, default_recording_path, make_header

    if getattr(args, "no_record", False):
        return None
    path = getattr(args, "record", None) or default_recording_path(command)
    try:
        return Recorder(path, make_header(command, lanes, extra, clock=clock), hold_header=hold_header)
    except OSError as exc:
        raise UsageError(f"cannot create recording {path}: {exc.strerror or exc}") from None


def run_interruptible(fn: Callable[[], Awaitable[T]], cleanup: Callable[[], Awaitable[None]] | None = None
                      ) -> tuple[T | None, bool]:
    """Run ``fn()`` in a fresh event loop; the first Ctrl-C (SIGINT) cancels it cleanly.

    Returns ``(result, interrupted)``.  ``cleanup`` runs in the same loop either
    way (close clients, flush the recorder).  A second Ctrl-C while cleaning up
    is ignored so the recording is never left half-written.
    """
    import asyncio


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


def recording_saved(recorder) -> bool:
    """Close ``recorder`` (if any) and say where it went; after a write failure, the failure first and
    what the file kept (no "saved" line), and the run's exit code becomes 4 (:data:`LOST`).  True when the
    recording is complete (or there is none)."""
    if recorder is None:
        return True
    recorder.close()
    if recorder.failed:
        err(recorder.failed)
        err(recorder.outcome())
        LOST.add(recorder.failed)
        return False
    err(recorder.outcome())
    add_to_history(recorder.path)
    return True


def add_to_history(path) -> None:
    """Add a saved recording's per-lane summaries to the history catalogue (docs/MONITOR.md, "History");
    a failure is a warning, never the command's failure (``lanemon history --rebuild`` catches up)."""
    import sqlite3

    from lanemon.monitor.history import CatalogueError, add_recording
    from lanemon.recording.reader import RecordingError

    from lanemon.monitor.history import AUTO_ADD_MAX_BYTES

    try:
        size = path.stat().st_size
        if size > AUTO_ADD_MAX_BYTES:  # reading it back would hold the command up (~70 ms per MB)
            err(f"not added to the history catalogue now ({size >> 20} MiB): `lanemon history --rebuild` reads it")
            return
        add_recording(path)
    except (CatalogueError, RecordingError, OSError, sqlite3.Error) as exc:
        err(f"warning: not added to the history catalogue: {exc}")


class HeadlessRun:
    """Outcome of :func:`run_headless`: the harness (its ``events``), Ctrl-C, a lane that was down."""

    def __init__(self, harness, interrupted: bool, down: str | None) -> None:
        self.harness = harness
        self.interrupted = interrupted
        self.down = down


@dataclasses.dataclass
class _Opened:
    """What :func:`run_headless`'s run opened: its recorder (None: not recording, or not yet), or why a lane was
    down (nothing was run)."""

    recorder: Recorder | None = None
    down: str | None = None


def run_headless(args: argparse.Namespace, command: str, lanes: list[LaneConfig],
                 body: Callable[[Any], Awaitable[None]], *, extra: dict[str, Any] | None = None,
                 harness_kw: dict[str, Any] | None = None, connect_kw: dict[str, Any] | None = None,
                 setup: Callable[[Any], None] | None = None) -> HeadlessRun:
    """The shape every headless workload command shares.

    Probe every lane (a lane that is down ends the run before any file is
    written: ``HeadlessRun.down``), open the recording and write what the
    harness already published, run ``body(harness)`` under Ctrl-C handling, close
    the clients, and report where the recording went.
    """
    from lanemon.workloads.harness import Harness, LaneDown

    harness = Harness(lanes, **(harness_kw or {}))
    if setup is not None:
        setup(harness)
    state = _Opened()

    async def main() -> None:
        try:
            await harness.connect(**(connect_kw or {}))
        except LaneDown as exc:
            state.down = str(exc)
            return
        recorder = open_recorder(args, command, harness.public_lanes(), extra=extra, clock=harness.clock)
        if recorder is not None:
            state.recorder = recorder
            for ev in harness.events:
                recorder(ev)
            harness.bus.subscribe(recorder)
        await body(harness)

    try:
        _, interrupted = run_interruptible(main, harness.aclose)
    finally:
        recording_saved(state.recorder)
    return HeadlessRun(harness, interrupted, state.down)


def add_output_args(p: argparse.ArgumentParser, formats: tuple[str, ...], default: str, output_help: str) -> None:
    """``--format/-f`` (one of *formats*; without it, ``-o``'s suffix, else *default*) and ``-o/--output PATH``."""
    p.add_argument("--format", "-f", choices=formats, help=f"output format (default: from -o's suffix, else {default})")
    p.add_argument("-o", "--output", type=Path, metavar="PATH", help=output_help)


def write_output(path: Path, data: str | bytes | Iterable[str | bytes], *, make_dirs: bool = True) -> None:
    """Write a command's output to ``-o PATH`` (UTF-8 text or bytes, or an iterable of chunks, written as they
    come), creating missing folders unless *make_dirs* is False.

    All or nothing: the output goes to a temporary file beside *path*, renamed over it only when complete, so a
    full disk never leaves half a report where the last good one was.  A folder that cannot be created or
    written is a one-line UsageError (exit 2, nothing started); a write that fails part-way (disk full) is
    :class:`DataLost` (exit 4) saying that *path* was left as it was."""
    import os
    import stat
    import tempfile

    target = Path(os.path.realpath(path)) if path.is_symlink() else path  # a link keeps pointing where it did
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        # a device, a FIFO, /dev/stdout: written in place (a rename over /dev/null would replace the device
        # with a regular file, for every program on the machine)
        _write_in_place(path, target, data)
        return
    try:
        if make_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        # the report replaced keeps its permissions; a new one follows the umask as any tool's output does
        # (mkstemp makes 0600: a report meant to be shared could not be read)
        os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_chunks(fh, data)
            try:
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:
                raise _WriteFailed(exc) from None
        os.replace(tmp, target)
    except (_WriteFailed, OSError) as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        cause = exc.args[0] if isinstance(exc, _WriteFailed) else exc
        raise DataLost(f"cannot write {path}: {cause.strerror or cause}; nothing was written "
                       f"({'the previous file is unchanged' if path.exists() else 'no file was created'})") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc/self/status), else set back."""
    import os

    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class _WriteFailed(Exception):
    """An OSError from writing the output (not from producing it)."""


def _write_chunks(fh: Any, data: str | bytes | Iterable[str | bytes]) -> None:
    for chunk in [data] if isinstance(data, (str, bytes)) else data:
        try:
            fh.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
        except OSError as exc:
            raise _WriteFailed(exc) from None


def _write_in_place(path: Path, target: Path, data: str | bytes | Iterable[str | bytes]) -> None:
    """:func:`write_output` to something that is not a regular file (a device, a FIFO): opened and written."""
    try:
        fh = open(target, "wb")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with fh:
            _write_chunks(fh, data)
            try:
                fh.flush()
            except OSError as exc:
                raise _WriteFailed(exc) from None
    except _WriteFailed as exc:
        cause = exc.args[0]
        raise DataLost(f"cannot write {path}: {cause.strerror or cause}; the output is incomplete") from None


def output_format(fmt: str | None, output: Path | None, suffixes: dict[str, str], default: str) -> str:
    """``--format``, else the format ``-o``'s suffix names (``suffixes``), else ``default``."""
    if fmt:
        return fmt
    if output is not None:
        suffix = output.suffix.lower()
        if suffix in suffixes:
            return suffixes[suffix]
        if suffix:
            choices = "|".join(dict.fromkeys(suffixes.values()))
            raise UsageError(f"-o {output}: cannot tell the format from {suffix!r}; add --format {choices}")
    return default
