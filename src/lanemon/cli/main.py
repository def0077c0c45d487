"""Command line: ``lanemon [COMMAND] ...``.

Every command reports bad input as one line on stderr with exit code 2 and
never a traceback.  Textual is imported only by the commands that open the UI.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from lanemon import __version__
from lanemon.cli import MODULES as COMMAND_MODULES
from lanemon.cli.common import UsageError, add_fault_args, add_lane_args, add_stall_arg, demo_lanes
from lanemon.cli.common import with_stall_timeout
from lanemon.cli.common import err as _err
from lanemon.cli.common import positive_float as _positive
from lanemon.config import Config, ConfigError, LaneConfig, ProbeConfig, load_config, merge_lanes, validate_url

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

DESCRIPTION = """\
lanemon watches two or more OpenAI-compatible LLM endpoints ("lanes"), races
them side by side and records every session for replay.

First time here?  `lanemon demo` starts two simulated lanes on loopback
(TensorFold EXL3 vs SGLang native, fitted to the reference write-up) and opens
the live dashboard on them.
"""

EPILOG = """\
lanes come from lanes.toml in the config dir (or --config PATH) and from
--lane NAME=URL (repeatable; overrides the file).  Run `lanemon COMMAND --help`
for a command's options.
"""


def _speed(text: str) -> float:
    if text.lower() in ("max", "inf", "fastest"):
        return math.inf
    try:
        value = float(text.rstrip("xX×"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"speed must be a number like 4 or 'max', not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("speed must be positive")
    return value


def _add_ui_args(p: argparse.ArgumentParser, record: bool = True, share: bool = True) -> None:
    p.add_argument("--theme", metavar="NAME", help="colour theme (files in themes/ or the config dir)")
    if share:
        from lanemon.cli.share import add_share_args

        add_share_args(p)
    if record:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--record", type=Path, metavar="PATH", help="write the recording here (default: XDG data dir)")
        g.add_argument("--no-record", action="store_true", help="do not record this session")
        p.add_argument("--interval", type=_positive, metavar="S", help="seconds between probe requests per lane")
        add_stall_arg(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lanemon", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"lanemon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("live", help="live dashboard on the configured lanes (the default command)",
                       description="Open the live dashboard: health, TTFT and tok/s per lane from a light probe loop.")
    add_lane_args(p)
    _add_ui_args(p)

    p = sub.add_parser("demo", help="start two simulated lanes and open the dashboard on them",
                       description="Start lane A (tensorfold-exl3) and lane B (sglang-native) simulators on free "
                                   "loopback ports and open the live dashboard; quitting stops them.")
    _add_ui_args(p)
    p.add_argument("--time-scale", type=_positive, default=1.0, metavar="X",
                   help="simulated durations are multiplied by X (default 1.0 = real time)")
    add_fault_args(p)

    p = sub.add_parser("sim", help="run one simulated lane (an OpenAI-compatible HTTP server)",
                       description="Serve an OpenAI-compatible API with timings fitted to the write-up's lanes "
                                   "(docs/SIMULATOR.md). Ground truth at GET /sim/trace.")
    from lanemon.sim.options import add_arguments as add_sim_arguments

    add_sim_arguments(p)

    p = sub.add_parser("check", help="smoke-test one lane: models, completions, streaming, usage, tools, logprobs",
                       description="Run the post-boot smoke test against a URL or a configured lane name. "
                                   "Exit 0 only if every required check passes.")
    p.add_argument("target", metavar="URL_OR_LANE", help="e.g. http://127.0.0.1:8001/v1, or a lane name from the config")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--model", help="model id to use (default: first of /v1/models)")
    add_lane_args(p)

    p = sub.add_parser("replay", help="replay a recording in the dashboard",
                       description="Open the dashboard fed from a recording instead of sockets. Keys: space/p pause, "
                                   "+/- speed, left/right 10 s back/forward, home/end, [/] previous/next marker.")
    p.add_argument("file", type=Path, metavar="FILE", help="a .jsonl recording")
    p.add_argument("--speed", type=_speed, default=1.0, metavar="N", help="playback speed, e.g. 4, or 'max' (default 1)")
    _add_ui_args(p, record=False)

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


# ---------------------------------------------------------------- commands
def _load(args: argparse.Namespace) -> Config:
    return merge_lanes(load_config(args.config), args.lane)


def _probe_config(config: Config, interval: float | None, demo: bool = False) -> ProbeConfig:
    probe = config.probe
    if demo and interval is None:
        interval = 1.0
    if interval is not None:
        probe = ProbeConfig(interval, probe.max_tokens if not demo else 48, probe.prompt, probe.endpoint, probe.enabled)
    return probe


def _make_recorder(args: argparse.Namespace, command: str, lanes: list[dict], enabled: bool = True):
    from lanemon.recording.writer import Recorder, default_recording_path, make_header

    if getattr(args, "no_record", False) or not enabled:
        return None
    path = args.record or default_recording_path(command)
    try:
        return Recorder(path, make_header(command, lanes))
    except OSError as exc:
        raise UsageError(f"cannot create recording {path}: {exc.strerror or exc}") from None


def _run_app(source, theme: str | None, args: argparse.Namespace | None = None) -> int:
    if getattr(args, "share", None) is not None:  # --share / `lanemon share`: serve viewers meanwhile
        from lanemon.cli.share import run_app_shared

        return run_app_shared(source, theme, args)
    try:
        from lanemon.ui.app import ThemeError, make_app
    except ImportError as exc:  # pragma: no cover - a broken install
        raise UsageError(f"the terminal UI is not available: {exc}") from None
    try:
        app = make_app(source, theme=theme)
    except ThemeError as exc:
        raise UsageError(str(exc)) from None
    app.run()
    for warning in getattr(app, "theme_warnings", []):
        _err(f"warning: {warning}")
    return app.return_code or 0


SERVER_METRICS_INTERVAL = 2.0  # s between /metrics scrapes per lane (docs/SERVER_METRICS.md)
HOST_INTERVAL = 2.0  # s between host (psutil) samples


def cmd_live(args: argparse.Namespace, demo_lanes: list[LaneConfig] | None = None) -> int:
    from lanemon.sessions.sources import DEMO_PROMPTS, LiveSession

    if demo_lanes is None:
        config = _load(args)
        lanes = list(config.lanes)
        if not lanes:
            raise UsageError(
                "no lanes configured: pass --lane NAME=URL (e.g. --lane A=http://127.0.0.1:8001/v1), "
                "create lanes.toml (see README), or try `lanemon demo`"
            )
        mode, prompts = "live", None
    else:
        config, lanes, mode, prompts = Config(), demo_lanes, "demo", DEMO_PROMPTS
    lanes = with_stall_timeout(lanes, getattr(args, "stall_timeout", None))
    recorder = _make_recorder(args, mode, [lane.public() for lane in lanes], enabled=config.record)
    session = LiveSession(lanes, probe=_probe_config(config, args.interval, demo=demo_lanes is not None),
                          mode=mode, recorder=recorder, prompts=prompts,
                          metrics_interval=SERVER_METRICS_INTERVAL, host_interval=HOST_INTERVAL)
    try:
        code = _run_app(session, args.theme or config.theme, args)
    finally:
        session.close()
    if recorder is not None:
        print(f"lanemon: recording saved: {recorder.path} ({recorder.events} events)", file=sys.stderr)
        if recorder.failed:
            _err(recorder.failed)
    return code


def cmd_demo(args: argparse.Namespace) -> int:
    with demo_lanes(args.time_scale, faults_a=getattr(args, "fault_a", None),
                    faults_b=getattr(args, "fault_b", None)) as lanes:
        return cmd_live(args, demo_lanes=lanes)


def cmd_sim(args: argparse.Namespace) -> int:
    from lanemon.sim.options import run_args

    return run_args(args)


def _resolve_target(args: argparse.Namespace) -> LaneConfig:
    target = args.target
    if "://" in target:
        lane = LaneConfig("check", validate_url(target, "URL"), args.model)
        return lane
    config = _load(args)
    for lane in config.lanes:
        if lane.name == target:
            if args.model:
                lane = LaneConfig(lane.name, lane.url, args.model, lane.api_key_env, lane.headers, lane.defaults,
                                  lane.timeout)
            return lane
    names = ", ".join(lane.name for lane in config.lanes) or "none configured"
    raise UsageError(f"{target!r} is neither a URL nor a configured lane (lanes: {names})")


def cmd_check(args: argparse.Namespace) -> int:
    import orjson

    from lanemon.workloads.check import run_check

    lane = _resolve_target(args)
    report = asyncio.run(run_check(lane))
    if args.json:
        sys.stdout.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"lanemon check {lane.url}" + (f" · {report.model}" if report.model else ""))
        table.add_column("check")
        table.add_column("result")
        table.add_column("required")
        table.add_column("detail", overflow="fold")
        for c in report.checks:
            mark = "[green]PASS[/]" if c.passed else ("[red]FAIL[/]" if c.required else "[yellow]no[/]")
            table.add_row(c.name, mark, "yes" if c.required else "no", c.detail)
        console = Console()
        console.print(table)
        passed = sum(c.passed for c in report.checks)
        verdict = "[green]passed[/]" if report.passed else "[red]FAILED[/]"
        console.print(f"{passed}/{len(report.checks)} checks passed; required checks {verdict}")
    return EXIT_OK if report.passed else EXIT_FAIL


def cmd_replay(args: argparse.Namespace) -> int:
    from lanemon.recording.reader import RecordingError
    from lanemon.sessions.sources import ReplaySession

    try:
        session = ReplaySession(args.file, speed=args.speed)
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    code = _run_app(session, args.theme, args)
    for warning in session.warnings:
        _err(f"warning: {warning}")
    return code


COMMANDS = {"live": cmd_live, "demo": cmd_demo, "sim": cmd_sim, "check": cmd_check, "replay": cmd_replay}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["live", *argv]
    args = parser.parse_args(argv)
    handler = COMMANDS.get(args.command) or getattr(args, "func", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return handler(args)
    except (UsageError, ConfigError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
