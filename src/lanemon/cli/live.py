"""`lanemon live` and `lanemon demo`: the dashboard on real or simulated lanes; the UI launch they share.

The UI launch (``add_ui_args``, ``run_app``) lives in :mod:`lanemon.cli.launch`.

"""

from __future__ import annotations

import argparse

from lanemon.cli.common import UsageError, add_fault_args, add_lane_args, demo_lanes, recording_saved
from lanemon.cli import launch
from lanemon.cli.common import positive_float as _positive
from lanemon.cli.common import with_stall_timeout
from lanemon.config import Config, LaneConfig, ProbeConfig, load_config, merge_lanes

def register(sub) -> None:
    p = sub.add_parser("live", help="live dashboard on the configured lanes (the default command)",
                       description="Open the live dashboard: health, TTFT and tok/s per lane from a light probe loop.")
    add_lane_args(p)
    launch.add_ui_args(p)

    p = sub.add_parser("demo", help="start two simulated lanes and open the dashboard on them",
                       description="Start lane A (tensorfold-exl3) and lane B (sglang-native) simulators on free "
                                   "loopback ports and open the live dashboard; quitting stops them.")
    launch.add_ui_args(p)
    p.add_argument("--time-scale", type=_positive, default=1.0, metavar="X",
                   help="simulated durations are multiplied by X (default 1.0 = real time)")
    add_fault_args(p)

    sub.choices["live"].set_defaults(func=cmd_live)
    sub.choices["demo"].set_defaults(func=cmd_demo)

def _load(args: argparse.Namespace) -> Config:
    return merge_lanes(load_config(args.config), args.lane)

def _probe_config(config: Config, interval: float | None, demo: bool = False) -> ProbeConfig:
    probe = config.probe
    if demo and interval is None:
        interval = 1.0
    if interval is not None:
        probe = ProbeConfig(interval, probe.max_tokens if not demo else 48, probe.prompt, probe.endpoint, probe.enabled)
    return probe

def _make_recorder(args: argparse.Namespace, command: str, lanes: list[dict], enabled: bool = True, *,
                   clock=None):
    from lanemon.recording.writer import Recorder, default_recording_path, make_header

    if getattr(args, "no_record", False) or not enabled:
        return None
    path = args.record or default_recording_path(command)
    try:
        return Recorder(path, make_header(command, lanes, clock=clock))
    except OSError as exc:
        raise UsageError(f"cannot create recording {path}: {exc.strerror or exc}") from None

SERVER_METRICS_INTERVAL = 2.0  # s between /metrics scrapes per lane (docs/SERVER_METRICS.md)
HOST_INTERVAL = 2.0  # s between host (psutil) samples

def cmd_live(args: argparse.Namespace, demo_lanes: list[LaneConfig] | None = None) -> int:
    from lanemon.events import Clock
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
    lanes = with_stall_timeout(lanes, getattr(args, "stall_timeout", None), getattr(args, "deadline", None))
    clock = Clock()  # the session's: the recording header says when its t = 0 was on the wall clock
    recorder = _make_recorder(args, mode, [lane.public() for lane in lanes], enabled=config.record, clock=clock)
    session = LiveSession(lanes, probe=_probe_config(config, args.interval, demo=demo_lanes is not None),
                          mode=mode, recorder=recorder, prompts=prompts, clock=clock,
                          metrics_interval=SERVER_METRICS_INTERVAL, host_interval=HOST_INTERVAL)
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

def cmd_demo(args: argparse.Namespace) -> int:
    with demo_lanes(args.time_scale, faults_a=getattr(args, "fault_a", None),
                    faults_b=getattr(args, "fault_b", None)) as lanes:
        return cmd_live(args, demo_lanes=lanes)

