"""`lanemon replay FILE`: the same screens, fed from a recording."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from lanemon.cli.common import UsageError
from lanemon.cli.common import err as _err
from lanemon.cli.launch import add_ui_args, run_app


def _speed(text: str) -> float:
    if text.lower() in ("max", "inf", "fastest"):
        return math.inf
    try:
        value = float(text.rstrip("xX×"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"speed must be a number like 4 or 'max', not {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= 1e6):
        raise argparse.ArgumentTypeError(f"speed must be a number in (0, 1000000] or 'max', not {text!r}")
    return value


def register(sub) -> None:
    p = sub.add_parser("replay", help="replay a recording in the dashboard",
                       description="Open the dashboard fed from a recording instead of sockets. Keys: space/p pause, "
                                   "+/- speed, left/right 10 s back/forward, home/end, [/] previous/next marker.")
    p.add_argument("file", type=Path, metavar="FILE", help="a .jsonl recording")
    p.add_argument("--speed", type=_speed, default=1.0, metavar="N", help="playback speed, e.g. 4, or 'max' (default 1)")
    add_ui_args(p, record=False)

    p.set_defaults(func=cmd_replay)


def _qeval_result_words(path: Path) -> str | None:
    """What to say when ``path`` is a qeval result file (``qeval run -o X.json``), not a recording (None if not)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)  # bounded: a sniff, not a parse of the whole file
    except OSError:
        return None
    if not head.lstrip().startswith(b"{") or not all(k in head for k in (b'"tasks"', b'"passed"', b'"total"')):
        return None
    rec = Path(path).with_suffix(".jsonl")
    return (f"{path}: a qeval result file (qeval run -o), not a recording: replay the run's recording "
            f"(its --record file, e.g. {rec.name}), or compare two results with `lanemon qeval compare A.json B.json`")


def cmd_replay(args: argparse.Namespace) -> int:
    from lanemon.recording.reader import RecordingError
    from lanemon.sessions.sources import ReplaySession

    try:
        session = ReplaySession(args.file, speed=args.speed)
    except RecordingError as exc:
        raise UsageError(_qeval_result_words(args.file) or str(exc)) from None
    code = run_app(session, args.theme, args)
    for warning in session.warnings:
        _err(f"warning: {warning}")
    return code


