"""Read recordings back: a header and a lazy stream of events.

Readers are forgiving where a file is merely cut short (a crash mid-write):
a truncated last line is dropped with one warning and every earlier event is
kept.  A line that does not fit the schema (lanemon.recording.schema: wrong
types, not JSON, longer than the line bound) is skipped and counted.  They are
strict where reading on would mislead: a file that is not a lanemon recording,
a header that does not fit the schema, or one written by a newer major schema
version raises :class:`RecordingError` with a message fit for the terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from lanemon.config import unreadable
from lanemon.public_lane import PublicLane
from lanemon.events import SCHEMA_NAME, SCHEMA_VERSION, Event, parse_version
from lanemon.recording.schema import (MAX_HEADER_BYTES, MAX_LINE_BYTES, BadRow, Overlong, bounded_lines,
                                      check_header, decode_event)
from lanemon.untrusted import ID_LIMIT, inert, inert_value


class RecordingError(ValueError):
    """The file cannot be read as a lanemon recording."""


class Recording:
    """An open recording: ``header`` now, ``events()`` lazily, ``warnings`` as found.

    ``skipped`` counts the lines dropped because they do not fit the schema (lanemon.recording.schema)
    or exceed its size bound; the first few are named in ``warnings``, then one summary line.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        self.skipped = 0
        self._bad_offsets: set[int] = set()
        try:
            with self.path.open("rb") as fh:
                first = fh.readline(MAX_HEADER_BYTES + 1)
        except OSError as exc:
            raise RecordingError(f"{self.path}: {unreadable(exc, 'a recording')}") from None
        self.body_offset = len(first)
        """Byte offset of the first event line."""
        self.header = self._parse_header(first)

    def _parse_header(self, line: bytes) -> dict[str, Any]:
        if len(line) > MAX_HEADER_BYTES:
            raise RecordingError(f"{self.path}: not a lanemon recording (first line longer than "
                                 f"{MAX_HEADER_BYTES >> 20} MiB)")
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
        except (ValueError, TypeError):
            raise RecordingError(f"{self.path}: unreadable schema version {_short(header.get('version'))}") from None
        if major > SCHEMA_VERSION[0]:
            raise RecordingError(
                f"{self.path}: written with recording schema {major}.{minor} by lanemon "
                f"{_short(header.get('lanemon', '?'))}; this lanemon reads schema {SCHEMA_VERSION[0]}.x -- "
                "upgrade lanemon"
            )
        try:
            check_header(header)
        except ValueError as exc:
            raise RecordingError(f"{self.path}: bad recording header: {exc}") from None
        header = inert_value(header)  # the gate: every string shown from a header is inert (docs/SECURITY.md)
        lanes = header.get("lanes")
        if isinstance(lanes, list):  # lane names are identifiers: one line, ID_LIMIT
            header["lanes"] = [{**lane, "name": inert(lane["name"], ID_LIMIT)}
                               if isinstance(lane, dict) and isinstance(lane.get("name"), str) else lane
                               for lane in lanes]
        if major == SCHEMA_VERSION[0] and minor > SCHEMA_VERSION[1]:
            self.warnings.append(
                f"recording schema {major}.{minor} is newer than {SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}; "
                "unknown fields are ignored"
            )
        return header

    @property
    def lanes(self) -> list[PublicLane]:
        """The header's lanes (checked against its schema and made inert when it was read)."""
        return [PublicLane(lane["name"], lane.get("url", ""), lane.get("model"))
                for lane in self.header.get("lanes", []) if isinstance(lane, dict) and lane.get("name")]

    def events(self) -> Iterator[Event]:
        """Yield every readable event in file order."""
        decode = decode_event
        with self.path.open("rb") as fh:
            fh.seek(self.body_offset)
            lineno = 1
            pending: tuple[int, str] | None = None
            for item in bounded_lines(fh):
                lineno += 1
                if pending is not None:
                    # the previous bad line was not the last: it is corruption, not truncation
                    self._bad(*pending)
                    pending = None
                if item.__class__ is Overlong:
                    self._bad(lineno, f"longer than {MAX_LINE_BYTES >> 20} MiB")
                    continue
                raw, ended = item
                try:
                    yield decode(raw)
                except BadRow as exc:
                    if not ended:  # last line without newline: a write cut short
                        self.warnings.append(truncated_warning(self.path, lineno))
                        break
                    if raw.strip():
                        pending = (lineno, str(exc))
            if pending is not None:
                self.warnings.append(unreadable_last_warning(self.path, pending[0]))
        self.summarise()

    def _bad(self, lineno: int, why: str) -> None:
        self.skipped += 1
        if self.skipped <= SHOWN_BAD_LINES:
            self.warnings.append(f"{self.path}: line {lineno}: skipped ({why})")

    def bad_at(self, offset: int, why: str) -> None:
        """A bad line found while replaying (by byte offset): counted once, however often it is re-read."""
        if offset in self._bad_offsets:
            return
        self._bad_offsets.add(offset)
        self.skipped += 1
        if self.skipped <= SHOWN_BAD_LINES:
            self.warnings.append(f"{self.path}: line {self._line_at(offset)}: skipped ({why})")
        elif self.skipped == SHOWN_BAD_LINES + 1:
            self.warnings.append(f"{self.path}: more lines skipped (unreadable or not fitting the recording schema)")

    def _line_at(self, offset: int) -> int | str:
        """The line number of the line starting at byte *offset* (counted for a warning only)."""
        newlines = 0
        try:
            with self.path.open("rb") as fh:
                while offset > 0:
                    block = fh.read(min(offset, 1 << 20))
                    if not block:
                        break
                    newlines += block.count(b"\n")
                    offset -= len(block)
        except OSError:
            return f"at byte {offset}"
        return newlines + 1

    def summarise(self) -> None:
        """After a full read: one warning counting the skipped lines beyond those named."""
        if self.skipped > SHOWN_BAD_LINES:
            self.warnings.append(f"{self.path}: {self.skipped} lines skipped in all (unreadable or not fitting "
                                 "the recording schema)")

    @staticmethod
    def _decode(raw: bytes) -> Event | None:
        try:
            return decode_event(raw)
        except BadRow:
            return None


SHOWN_BAD_LINES = 3
"""Bad lines named one by one in ``Recording.warnings``; the rest are counted."""


def truncated_warning(path: Path, lineno: int) -> str:
    return (f"{path}: last line {lineno} is truncated (recording was cut short); it was dropped, every earlier "
            "event is kept")


def unreadable_last_warning(path: Path, lineno: int) -> str:
    return f"{path}: last line {lineno} is unreadable; it was dropped, every earlier event is kept"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def read_events(path: Path | str) -> tuple[dict[str, Any], list[Event], list[str]]:
    """Convenience: (header, all events, warnings)."""
    rec = Recording(path)
    events = list(rec.events())
    return rec.header, events, rec.warnings
