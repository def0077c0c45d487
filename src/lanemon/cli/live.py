"""`lanemon live` and `lanemon demo`: the dashboard on real or simulated lanes; the UI launch they share.

The UI launch (``add_ui_args``, ``run_app``) lives in :mod:`lanemon.cli.launch`.

"""

from __future__ import annotations

import argparse

from lanemon.cli.common import UsageError, add_fault_args, add_lane_args, demo_lanes, recording_saved
from lanemon.cli import launch
from lanemon.cli.common import positive_float as _positive
from lanemon.cli.common import with_stall_timeout
from lanemon.config import Config, LaneConfig, ProbeConfig, load_config

def register(sub) -> None:
    p = sub.add_parser("live", help="live dashboard on the configured lanes (the default command)",
                       description="Open the live dashboard: health, TTFT and tok/s per lane from a light probe loop.")
    add_lane_args(p)
    launch.add_ui_args(p)
    add_monitor_args(p)

    p = sub.add_parser("demo", help="start two simulated lanes and open the dashboard on them",
                       description="Start lane A (tensorfold-exl3) and lane B (sglang-native) simulators on free "
                                   "loopback ports and open the live dashboard; quitting stops them.")
    launch.add_ui_args(p)
    p.add_argument("--time-scale", type=_positive, default=1.0, metavar="X",
                   help="simulated durations are multiplied by X (default 1.0 = real time)")
    add_fault_args(p)
    add_monitor_args(p)

    sub.choices["live"].set_defaults(func=cmd_live)
    sub.choices["demo"].set_defaults(func=cmd_demo)

def add_monitor_args(p: argparse.ArgumentParser) -> None:
    """``--headless``, ``--serve-metrics``, ``--alert``, ``--slo``, ``--window``, ``--duration`` (docs/MONITOR.md)."""
    g = p.add_argument_group("monitor (docs/MONITOR.md)")
    g.add_argument("--headless", action="store_true",
                   help="no TUI: probe the lanes, record, evaluate alerts and serve metrics until Ctrl-C")
    g.add_argument("--serve-metrics", metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (default: lanes.toml [exporter] "
                        "listen; bind where you mean to be scraped from, e.g. 127.0.0.1:9464)")
    g.add_argument("--alert", action="append", default=[], metavar="RULE",
                   help="an alert rule, e.g. 'ttft_p50 > 0.5 for 60s' (repeatable; with lanes.toml [[alerts]])")
    g.add_argument("--slo", nargs="+", metavar="KEY=S",
                   help="SLO targets in seconds: ttft=S tpot=S e2e=S (default: lanes.toml [slo])")
    g.add_argument("--window", type=_positive, default=60.0, metavar="S",
                   help="seconds of requests the alert figures, attainment and goodput are computed over (default 60)")
    g.add_argument("--duration", type=_positive, metavar="S", help="with --headless: stop after S seconds")


def monitor_rules(args: argparse.Namespace, config: Config) -> list:
    """The alert rules of lanes.toml ([[alerts]]) and ``--alert``, parsed; a bad one is a UsageError naming it."""
    from lanemon.config import MAX_ALERTS
    from lanemon.measure.alerts import RuleError, parse_rule

    given = len(config.alerts) + len(getattr(args, "alert", None) or [])
    if given > MAX_ALERTS:
        raise UsageError(f"--alert: {given} alert rules (with lanes.toml [[alerts]]); at most {MAX_ALERTS}")
    rules = []
    try:
        for a in config.alerts:
            rules.append(parse_rule(a.when, where=f"{a.where}.when", for_s=a.for_s, lanes=a.lanes,
                                    severity=a.severity, name=a.name, command=a.command))
        for i, text in enumerate(getattr(args, "alert", None) or []):
            rules.append(parse_rule(text, where=f"--alert {text!r}"))
    except RuleError as exc:
        raise UsageError(str(exc)) from None
    return rules


def monitor_slo(args: argparse.Namespace, config: Config) -> dict[str, float]:
    """``--slo`` read as every command reads it (cli/common.slo_arg), else lanes.toml's [slo]."""
    from lanemon.cli.common import slo_arg

    slo = slo_arg(args)
    return dict(config.slo) if slo is None else slo


def _listen(args: argparse.Namespace, config: Config) -> tuple[str, int] | None:
    from lanemon.config import parse_listen

    listen = parse_listen(args.serve_metrics, "--serve-metrics") if getattr(args, "serve_metrics", None) \
        else config.exporter_listen
    if listen is not None:
        from lanemon.cli.common import err
        from lanemon.monitor.exporter import exposure_warning

        warning = exposure_warning(*listen, flag="--serve-metrics" if getattr(args, "serve_metrics", None)
                                   else "exporter.listen")
        if warning:
            err(warning)
    return listen


def _load(args: argparse.Namespace) -> Config:
    """The lanes of lanes.toml and --lane with --telemetry / --cost: the one path every command builds its
    lanes on (cli/common.load_lanes; a bad value or an unknown lane is one line, exit 2)."""
    from lanemon.cli.common import load_lanes

    return load_lanes(args)[0]

def _probe_config(config: Config, interval: float | None, demo: bool = False) -> ProbeConfig:
    probe = config.probe
    if demo and interval is None:
        interval = 1.0
    if interval is not None:
        probe = ProbeConfig(interval, probe.max_tokens if not demo else 48, probe.prompt, probe.endpoint, probe.enabled)
    return probe

def _make_recorder(args: argparse.Namespace, command: str, lanes: list[dict], enabled: bool = True, *,
                   clock=None, extra: dict | None = None):
    from lanemon.recording.writer import Recorder, default_recording_path, make_header

    if getattr(args, "no_record", False) or not enabled:
        return None
    path = args.record or default_recording_path(command)
    try:
        return Recorder(path, make_header(command, lanes, extra, clock=clock))
    except OSError as exc:
        raise UsageError(f"cannot create recording {path}: {exc.strerror or exc}") from None

SERVER_METRICS_INTERVAL = 2.0  # s between /metrics scrapes per lane (docs/SERVER_METRICS.md)
HOST_INTERVAL = 2.0  # s between host (psutil) samples

def cmd_live(args: argparse.Namespace, demo_lanes: list[LaneConfig] | None = None) -> int:
    from lanemon.events import Clock
    from lanemon.sessions.sources import DEMO_PROMPTS, LiveSession, MonitorOptions

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
        config, lanes, mode, prompts = (load_config(args.config) if getattr(args, "config", None) else Config(),
                                        demo_lanes, "demo", DEMO_PROMPTS)
    rules, slo, listen = monitor_rules(args, config), monitor_slo(args, config), _listen(args, config)
    if getattr(args, "duration", None) and not getattr(args, "headless", False):
        raise UsageError("--duration needs --headless (the dashboard runs until you quit it)")
    lanes = with_stall_timeout(lanes, getattr(args, "stall_timeout", None), getattr(args, "deadline", None))
    clock = Clock()  # the session's: the recording header says when its t = 0 was on the wall clock
    recorder = _make_recorder(args, mode, [lane.public() for lane in lanes], enabled=config.record, clock=clock,
                              extra={"slo": slo} if slo else None)
    session = LiveSession(lanes, probe=_probe_config(config, args.interval, demo=demo_lanes is not None),
                          mode=mode, recorder=recorder, prompts=prompts, clock=clock,
                          metrics_interval=SERVER_METRICS_INTERVAL, host_interval=HOST_INTERVAL)
    if getattr(args, "headless", False):
        code = _run_headless(args, session, rules, slo, listen)
        session.close()
        recording_saved(recorder)
        return code
    session.monitor_options = MonitorOptions(rules, slo, listen, getattr(args, "window", 60.0))
    try:
        code = launch.run_app(session, args.theme or config.theme, args)
    except UsageError:  # refused before it ran (a --share host not allowed, a port in use, a bad theme)
        session.close()
        if recorder is not None:
            recorder.discard_if_empty()  # no empty recording left behind
        raise
    finally:
        session.close()
    recording_saved(recorder)
    return code

def _run_headless(args: argparse.Namespace, session, rules: list, slo: dict[str, float],
                  listen: tuple[str, int] | None) -> int:
    from lanemon.cli.common import err, run_interruptible
    from lanemon.monitor.headless import ListenError, Monitor, run_headless, stderr_line

    monitor = Monitor(session, rules, window_s=args.window, slo=slo, listen=listen, on_transition=stderr_line,
                      on_lane_change=stderr_line)
    names = ", ".join(lane.name for lane in session.lane_configs)
    err(f"watching {names} headless ({len(rules)} alert rule{'s' * (len(rules) != 1)}; Ctrl-C stops)")
    failure: dict[str, str] = {}

    async def main() -> None:
        try:
            await run_headless(session, monitor, duration_s=args.duration, announce=err)
        except ListenError as exc:
            failure["listen"] = str(exc)

    run_interruptible(main)
    if "listen" in failure:
        if session.recorder is not None:
            session.recorder.close()
            session.recorder.discard_if_empty()
        raise UsageError(failure["listen"])
    down = monitor.down_summary(session.clock.now())
    for line in down:
        err(line)
    if down and args.duration:
        return 1  # a --duration run is a check: a lane down during it fails it (README's exit codes)
    return 0  # Ctrl-C is how a monitor is meant to stop


def cmd_demo(args: argparse.Namespace) -> int:
    with demo_lanes(args.time_scale, faults_a=getattr(args, "fault_a", None),
                    faults_b=getattr(args, "fault_b", None)) as lanes:
        return cmd_live(args, demo_lanes=lanes)

