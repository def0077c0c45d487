"""Append-only JSON-lines recorder: one file per session.

The first line is a header (schema name and version, lanemon version, lanes
without keys, host); every further line is one event.  Lines are written
whole and flushed at least every ``flush_interval`` seconds, so a crash or
SIGKILL leaves every complete line readable.  The file is created with
``O_EXCL``: two writers can never share one recording.  A write error (disk
full, file removed) stops recording, keeps the app running and reports the
problem once through ``on_error``; the file is then cut back to the last
flush that succeeded, so it holds whole lines only (``kept_events`` of them;
``lost_events`` were not recorded), and :meth:`Recorder.outcome` says so in
one line.  The CLI turns a failed recording into exit code 4 (``EXIT_DATA_LOST``).

A recorder may hold its header (``hold_header=True``): the file is created at
once (a path that cannot be written is refused before anything runs), but the
header, and the events published meanwhile, are written only at
:meth:`Recorder.release_header`, which may add to the header what the run
learned first (``bench load`` across Ray: the workers, their hosts and clock
offsets, known once the cluster is joined).  Closing or flushing a held
recorder releases it as it is.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from lanemon import __version__
from lanemon.config import data_dir
from lanemon.events import NOTE, SCHEMA_NAME, SCHEMA_VERSION_STR, Event
from lanemon.recording.schema import MAX_LINE_BYTES, HostInfo


MAX_HELD_BYTES = 16 << 20
"""A held header is released as it is once the events held behind it pass this many bytes."""


def host_info() -> HostInfo:
    """The header's ``host``: this machine's platform, Python, CPUs and memory (what is known)."""
    info = HostInfo(platform=platform.platform(), python=platform.python_version(), cpus=os.cpu_count())
    try:
        import psutil

        info.memory_bytes = psutil.virtual_memory().total
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
        "host": msgspec.to_builtins(host_info()),
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
            # 0666 less the umask, as any tool's output (a recording is shared like a report)
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
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
        hold_header: bool = False,
    ) -> None:
        self.path, self._fh = _open_exclusive(Path(path))
        self.flush_interval = flush_interval
        self.on_error = on_error
        self.failed: str | None = None
        self.events = 0
        """Events handed to the file (buffered or on disk); after a failure, those up to it."""
        self.kept_events = 0
        """Events known to be on disk (written and flushed): what the file holds after a failure."""
        self.lost_events = 0
        """Events that were not recorded because writing had failed (counted after the failure)."""
        self._written = 0  # bytes handed to the file object
        self._kept_bytes = 0  # bytes known flushed: the file is cut back to this after a failure
        self._last_flush = time.monotonic()
        self.header = dict(header)
        self._held: list[bytes] | None = None  # events published while the header is held, in order
        self._held_bytes = 0
        if hold_header:
            self._held = []
        else:
            self._write(orjson.dumps(self.header) + b"\n")
            self.flush()

    @property
    def header_held(self) -> bool:
        return self._held is not None

    def release_header(self, extra: dict[str, Any] | None = None) -> None:
        """Write the held header, with ``extra``'s keys added, then the events held meanwhile; a no-op when the
        header is already written (``extra`` is then not recorded: say so by checking :attr:`header_held`)."""
        if self._held is None:
            return
        held, self._held, self._held_bytes = self._held, None, 0
        if extra:
            self.header.update(extra)
        self._write(orjson.dumps(self.header) + b"\n")
        for line in held:
            self._write(line)
            if self._fh is None:
                self.lost_events += 1
            else:
                self.events += 1
        self.flush()

    def __call__(self, ev: Event) -> None:
        if self._fh is None:
            if self.failed:
                self.lost_events += 1
            return
        line = orjson.dumps(ev.to_json_obj())
        if len(line) >= MAX_LINE_BYTES:  # readers skip such a line: say what was left out instead
            line = orjson.dumps(Event(ev.t, NOTE, ev.lane, ev.req, {
                "level": "warning", "message": f"a {ev.kind[:40]} event of {len(line):,} bytes was not recorded "
                                               f"(over the {MAX_LINE_BYTES >> 20} MiB line bound)"}).to_json_obj())
        if self._held is not None:
            self._held.append(line + b"\n")
            self._held_bytes += len(line) + 1
            if self._held_bytes > MAX_HELD_BYTES:  # memory stays bounded: the header goes out as it is
                self.release_header()
            return
        self._write(line + b"\n")
        if self._fh is None:  # this very write failed
            self.lost_events += 1
            return
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
        else:
            self._written += len(line)

    def flush(self) -> None:
        if self._held is not None:
            self.release_header()
            return
        if self._fh is None:
            return
        self._last_flush = time.monotonic()
        try:
            self._fh.flush()
        except (OSError, ValueError) as exc:
            self._fail(exc)
        else:
            self._kept_bytes, self.kept_events = self._written, self.events

    def _fail(self, exc: BaseException) -> None:
        reason = getattr(exc, "strerror", None) or str(exc)
        self.failed = f"recording stopped: cannot write {self.path}: {reason}"
        self.lost_events += self.events - self.kept_events  # buffered, perhaps half-written: cut below
        self.events = self.kept_events
        fh, self._fh = self._fh, None
        try:
            if fh is not None:
                fh.close()  # may try to flush the buffer again and fail: the cut below undoes any half line
        except (OSError, ValueError):
            pass
        self._keep_whole_lines()
        if self.on_error is not None:
            self.on_error(self.failed)

    def _keep_whole_lines(self) -> None:
        """After a failure: keep every whole line that reached the file past the last good flush, cut the
        half-written one (a truncate needs no free space), and count what is kept."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._kept_bytes)
                tail = fh.read(self._written - self._kept_bytes + 1)  # at most the unflushed bytes
            end = tail.rfind(b"\n") + 1
            lines = tail[:end].count(b"\n")
            if self._kept_bytes == 0 and lines:
                lines -= 1  # the header's line
            kept = min(lines, self.events + self.lost_events - self.kept_events)
            self._kept_bytes += end
            self.kept_events += kept
            self.lost_events -= kept
            self.events = self.kept_events
            os.truncate(self.path, self._kept_bytes)
        except OSError:
            pass

    def outcome(self) -> str:
        """One line for the end of a run: where the recording went, or, after a failure, what it kept."""
        if not self.failed:
            return f"recording saved: {self.path} ({self.events} events)"
        if self._kept_bytes == 0:
            return f"recording lost: {self.path} could not be written; no event was kept"
        return (f"recording incomplete: {self.path} keeps the header and the first {self.kept_events:,} events; "
                f"{self.lost_events:,} later events were not recorded")

    def close(self) -> None:
        if self._fh is None:
            return
        self.flush()  # a held header (and its events) is released first
        try:
            if self._fh is not None:
                self._fh.close()
        except OSError as exc:  # the last bytes could not be written after all
            self._fh = None
            self._fail(exc)
            return
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
