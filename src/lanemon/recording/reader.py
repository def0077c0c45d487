"""Read recordings back: a header and a lazy stream of events.

Readers are forgiving where a file is merely cut short (a crash mid-write):
a truncated last line is dropped with one warning and every earlier event is
kept.  They are strict where reading on would mislead: a file that is not a
lanemon recording, or one written by a newer major schema version, raises
:class:`RecordingError` with a message fit for the terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from lanemon.events import SCHEMA_NAME, SCHEMA_VERSION, Event, parse_version


class RecordingError(ValueError):
    """The file cannot be read as a lanemon recording."""


class Recording:
    """An open recording: ``header`` now, ``events()`` lazily, ``warnings`` as found."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self.skipped = 0
        try:
            with self.path.open("rb") as fh:
                first = fh.readline()
        except FileNotFoundError:
            raise RecordingError(f"{self.path}: no such file") from None
        except IsADirectoryError:
            raise RecordingError(f"{self.path}: is a directory, not a recording") from None
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read: {exc.strerror}") from None
        self.header = self._parse_header(first)

    def _parse_header(self, line: bytes) -> dict[str, Any]:
        if not line.strip():
            raise RecordingError(f"{self.path}: empty file, not a lanemon recording")
        try:
            header = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise RecordingError(f"{self.path}: not a lanemon recording (first line is not JSON)") from None
        if not isinstance(header, dict) or header.get("schema") != SCHEMA_NAME:
            raise RecordingError(f"{self.path}: not a lanemon recording (no '{SCHEMA_NAME}' header)")
        try:
            major, minor = parse_version(header.get("version", ""))
        except ValueError:
            raise RecordingError(f"{self.path}: unreadable schema version {header.get('version')!r}") from None
        if major > SCHEMA_VERSION[0]:
            raise RecordingError(
                f"{self.path}: written with recording schema {major}.{minor} by lanemon "
                f"{header.get('lanemon', '?')}; this lanemon reads schema {SCHEMA_VERSION[0]}.x -- upgrade lanemon"
            )
        if major == SCHEMA_VERSION[0] and minor > SCHEMA_VERSION[1]:
            self.warnings.append(
                f"recording schema {major}.{minor} is newer than {SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}; "
                "unknown fields are ignored"
            )
        return header

    @property
    def lanes(self) -> list[dict[str, Any]]:
        return [dict(lane) for lane in self.header.get("lanes", []) if isinstance(lane, dict) and lane.get("name")]

    def events(self) -> Iterator[Event]:
        """Yield every readable event in file order."""
        with self.path.open("rb") as fh:
            fh.readline()  # header
            lineno = 1
            pending: bytes | None = None
            pending_lineno = 0
            for raw in fh:
                lineno += 1
                if pending is not None:
                    # the previous bad line was not the last: it is corruption, not truncation
                    self._bad(pending_lineno, "unreadable line skipped")
                    pending = None
                if not raw.endswith(b"\n"):
                    # last line without newline: a write cut short
                    ev = self._decode(raw)
                    if ev is None:
                        self.warnings.append(
                            f"{self.path}: last line {lineno} is truncated (recording was cut short); "
                            "it was dropped, every earlier event is kept"
                        )
                    else:
                        yield ev
                    return
                ev = self._decode(raw)
                if ev is None:
                    if raw.strip():
                        pending, pending_lineno = raw, lineno
                    continue
                yield ev
            if pending is not None:
                self.warnings.append(
                    f"{self.path}: last line {pending_lineno} is unreadable; it was dropped, every earlier event is kept"
                )

    def _bad(self, lineno: int, what: str) -> None:
        self.skipped += 1
        if self.skipped <= 3:
            self.warnings.append(f"{self.path}: line {lineno}: {what}")

    @staticmethod
    def _decode(raw: bytes) -> Event | None:
        try:
            obj = orjson.loads(raw)
            return Event.from_json_obj(obj)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


def read_events(path: Path | str) -> tuple[dict[str, Any], list[Event], list[str]]:
    """Convenience: (header, all events, warnings)."""
    rec = Recording(path)
    events = list(rec.events())
    return rec.header, events, rec.warnings
