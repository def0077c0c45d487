"""Append-only JSON-lines recorder: one file per session.

The first line is a header (schema name and version, lanemon version, lanes
without keys, host); every further line is one event.  Lines are written
whole and flushed at least every ``flush_interval`` seconds, so a crash or
SIGKILL leaves every complete line readable.  The file is created with
``O_EXCL``: two writers can never share one recording.  A write error (disk
full, file removed) stops recording, keeps the app running and reports the
problem once through ``on_error``.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from lanemon import __version__
from lanemon.config import data_dir
from lanemon.events import NOTE, SCHEMA_NAME, SCHEMA_VERSION_STR, Event
from lanemon.recording.schema import MAX_LINE_BYTES


def host_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        import psutil

        info["memory_bytes"] = psutil.virtual_memory().total
    except Exception:  # psutil is a dependency, but the header must never fail
        pass
    return info


def make_header(command: str, lanes: list[dict[str, Any]], extra: dict[str, Any] | None = None, *,
                clock: Any = None) -> dict[str, Any]:
    """The recording's first line.

    ``created`` is the UTC wall-clock time the header was made, to the millisecond (older recordings:
    whole seconds).  With ``clock`` (the session's :class:`~lanemon.events.Clock`, whose events' ``t`` count
    from its ``t0``), ``wall_t0_s`` is the wall-clock time (epoch seconds) of that clock's t = 0, so a
    replay's wall-clock axis is exact wherever the header was made relative to the clock's start.
    """
    wall_ns, perf_ns = time.time_ns(), time.perf_counter_ns()
    header = {
        "schema": SCHEMA_NAME,
        "version": SCHEMA_VERSION_STR,
        "lanemon": __version__,
        "created": created_stamp(wall_ns),
        "command": command,
        "lanes": [{"name": lane["name"], "url": lane.get("url"), "model": lane.get("model")} for lane in lanes],
        "host": host_info(),
    }
    t0 = wall_t0_s(clock, wall_ns, perf_ns)
    if t0 is not None:
        header["wall_t0_s"] = t0
    if extra:
        header.update(extra)
    return header


def created_stamp(wall_ns: int) -> str:
    """``2026-12-03T14:05:01.123+00:00``: an epoch time in ns as the header's ``created`` (UTC, ms)."""
    return _dt.datetime.fromtimestamp(wall_ns / 1e9, _dt.timezone.utc).isoformat(timespec="milliseconds")


def wall_t0_s(clock: Any, wall_ns: int, perf_ns: int) -> float | None:
    """Wall-clock time (epoch s, µs) of ``clock``'s t = 0, from one reading of both clocks (``wall_ns`` =
    ``time.time_ns()``, ``perf_ns`` = ``time.perf_counter_ns()`` taken together); None without a clock."""
    t0 = getattr(clock, "t0", None)
    if not isinstance(t0, int) or isinstance(t0, bool):
        return None
    return round((wall_ns - (perf_ns - t0)) / 1e9, 6)


def default_recording_path(command: str, directory: Path | None = None) -> Path:
    directory = directory or data_dir() / "recordings"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return directory / f"{stamp}-{command}.jsonl"


def _open_exclusive(path: Path):
    """Create ``path`` exclusively; add -2, -3, ... if it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    candidate = path
    for n in range(2, 1000):
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            return candidate, os.fdopen(fd, "ab", buffering=1 << 16)
        except FileExistsError:
            candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    raise FileExistsError(f"cannot find a free file name near {path}")


class Recorder:
    """Event subscriber that appends each event as one JSON line."""

    def __init__(
        self,
        path: Path,
        header: dict[str, Any],
        *,
        flush_interval: float = 0.1,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.path, self._fh = _open_exclusive(Path(path))
        self.flush_interval = flush_interval
        self.on_error = on_error
        self.failed: str | None = None
        self.events = 0
        self._last_flush = time.monotonic()
        self._write(orjson.dumps(header) + b"\n")
        self.flush()

    def __call__(self, ev: Event) -> None:
        if self._fh is None:
            return
        line = orjson.dumps(ev.to_json_obj())
        if len(line) >= MAX_LINE_BYTES:  # readers skip such a line: say what was left out instead
            line = orjson.dumps(Event(ev.t, NOTE, ev.lane, ev.req, {
                "level": "warning", "message": f"a {ev.kind[:40]} event of {len(line):,} bytes was not recorded "
                                               f"(over the {MAX_LINE_BYTES >> 20} MiB line bound)"}).to_json_obj())
        self._write(line + b"\n")
        self.events += 1
        now = time.monotonic()
        if now - self._last_flush >= self.flush_interval:
            self.flush()

    def _write(self, line: bytes) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(line)
        except (OSError, ValueError) as exc:
            self._fail(exc)

    def flush(self) -> None:
        if self._fh is None:
            return
        self._last_flush = time.monotonic()
        try:
            self._fh.flush()
        except (OSError, ValueError) as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        reason = getattr(exc, "strerror", None) or str(exc)
        self.failed = f"recording stopped: cannot write {self.path}: {reason}"
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                fh.close()
        except OSError:
            pass
        if self.on_error is not None:
            self.on_error(self.failed)

    def close(self) -> None:
        if self._fh is None:
            return
        self.flush()
        try:
            if self._fh is not None:
                self._fh.close()
        except OSError:
            pass
        self._fh = None

    def discard_if_empty(self) -> bool:
        """Close and delete the file if no event was recorded (a command refused before it ran)."""
        self.close()
        if self.events:
            return False
        try:
            self.path.unlink()
        except OSError:
            return False
        return True

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
