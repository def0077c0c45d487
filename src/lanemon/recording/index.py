"""A seek index over a recording, built in one pass when a replay opens it.

The index holds byte offsets, never events, so its size does not grow with
the events' payload:

* a **checkpoint** every :data:`CHECKPOINT_EVERY` lines: the byte offset of
  that line and ``tmax_before``, the latest event time before it.  The state
  "at time T" is the fold of every event before the first one later than T,
  so a checkpoint is a valid starting point for T exactly when
  ``tmax_before <= T`` (a non-decreasing sequence: bisect);
* every **marker** (``mark`` events: bench cells, races): time, label, offset;
* the first and last event times and the event count.

Building it decodes almost nothing: a line written by the recorder starts
with ``{"t":<int>,`` and ends with ``}\\n``; only other lines (and markers) go
through the JSON parser.  The warnings about truncated or unreadable lines
are the same as :meth:`lanemon.recording.reader.Recording.events` gives.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from lanemon import events as schema
from lanemon.events import Event
from lanemon.recording.reader import Recording, truncated_warning, unreadable_last_warning
from lanemon.recording.schema import MAX_LINE_BYTES, BadRow, Overlong, bounded_lines, decode_event

CHECKPOINT_EVERY = 16384
"""Lines between checkpoints: a backward seek re-folds at most this many events."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    offset: int
    """Byte offset of the line that starts this checkpoint."""
    tmax_before: int
    """Latest event time before ``offset`` (-1 before the first event)."""


@dataclass(frozen=True, slots=True)
class Marker:
    t: int
    label: str
    offset: int
    lane: str | None = None


@dataclass
class RecordingIndex:
    checkpoints: list[Checkpoint] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    events: int = 0
    t_first: int = 0
    t_last: int = 0
    end_offset: int = 0

    @property
    def duration_ns(self) -> int:
        """Session time of the last event (times count from the session start, not the first event)."""
        return self.t_last

    def checkpoint_for(self, t: int) -> int:
        """Index of the last checkpoint whose events before it are all at or before ``t``."""
        keys = [c.tmax_before for c in self.checkpoints]
        return max(0, bisect.bisect_right(keys, t) - 1)

    @classmethod
    def build(cls, recording: Recording, every: int | None = None) -> "RecordingIndex":
        """One pass over the file.  Big chunks of well-formed lines are indexed with a few
        C-level calls (regex over the chunk, no per-line Python); a chunk with anything odd
        in it (a broken line, a line not written by the recorder) is indexed line by line."""
        builder = _Builder(cls(), recording, every or CHECKPOINT_EVERY)
        with recording.path.open("rb") as fh:
            fh.seek(recording.body_offset)
            builder.offset = recording.body_offset
            builder.run(fh)
        return builder.finish()


_T = re.compile(rb'\n\{"t":(\d+),')  # searched in b"\n" + chunk: one match per recorder line
_MARK = b'"kind":"mark"'
CHUNK = 4 << 20


class _Builder:
    def __init__(self, index: RecordingIndex, recording: Recording, every: int) -> None:
        self.index, self.recording, self.every = index, recording, every
        self.offset = 0
        self.lineno = 1
        self.n = 0
        self.tmax = -1
        self.t_first: int | None = None
        self.since = every  # a checkpoint at the first event line
        self.pending_bad: tuple[int, str] | None = None
        self.truncated = False

    def run(self, fh: IO[bytes]) -> None:
        tail = b""
        while not self.truncated:
            block = fh.read(CHUNK)
            if not block:
                break
            block = tail + block
            cut = block.rfind(b"\n") + 1
            chunk, tail = block[:cut], block[cut:]
            if chunk and not self._fast(chunk):
                for raw in chunk.split(b"\n")[:-1]:
                    self._line(raw + b"\n")
            if len(tail) >= MAX_LINE_BYTES:  # a line over the bound: counted and stepped over, never held
                self._overlong(fh, len(tail))
                tail = b""
        if tail and not self.truncated:
            self._line(tail)

    def _overlong(self, fh: IO[bytes], size: int) -> None:
        """Skip the rest of a line longer than the bound (``size`` bytes of it already read)."""
        self.lineno += 1
        ended = False
        while True:
            block = fh.read(CHUNK)
            if not block:
                break
            nl = block.find(b"\n")
            if nl >= 0:
                size += nl + 1
                fh.seek(nl + 1 - len(block), 1)
                ended = True
                break
            size += len(block)
        self.offset += size
        if self.pending_bad is not None:
            self.recording._bad(*self.pending_bad)
            self.pending_bad = None
        self.recording._bad(self.lineno, f"longer than {MAX_LINE_BYTES >> 20} MiB")
        if not ended:
            self.truncated = True

    def _fast(self, chunk: bytes) -> bool:
        """Index a chunk of whole lines if every one is a recorder line; False to go line by line."""
        if self.pending_bad is not None:
            return False
        lines = chunk.split(b"\n")
        lines.pop()  # after the last newline
        nl = len(lines)
        if max(map(len, lines), default=0) >= MAX_LINE_BYTES:
            return False  # a line over the bound: the line-by-line path steps over it
        ts = _T.findall(b"\n" + chunk)
        if len(ts) != nl or chunk.count(b"}\n") != nl or b"\n\n" in chunk:
            return False
        times = list(map(int, ts))
        base = self.offset
        found = []
        i = chunk.find(_MARK)
        while i >= 0:
            start = chunk.rfind(b"\n", 0, i) + 1
            end = chunk.find(b"\n", i)
            ev = Recording._decode(chunk[start:end])
            if ev is None:
                return False
            if ev.kind == schema.MARK:
                found.append(Marker(ev.t, str(ev.data.get("label", "mark")), base + start, ev.lane))
            i = chunk.find(_MARK, end)
        self.index.markers.extend(found)
        # checkpoints: the first at line k0 of this chunk (`since` lines after the last one), then every `every`
        k0 = max(0, self.every - self.since)
        k, pos, at = k0, base, 0
        while k < nl:
            pos += sum(map(len, lines[at:k])) + (k - at)
            at = k
            before = max(self.tmax, max(times[:k])) if k else self.tmax
            self.index.checkpoints.append(Checkpoint(pos, before))
            k += self.every
        if k0 < nl:
            self.since = nl - (k0 + ((nl - 1 - k0) // self.every) * self.every)
        else:
            self.since += nl
        if self.t_first is None and times:
            self.t_first = times[0]
        if times:
            self.tmax = max(self.tmax, max(times))
        self.n += nl
        self.lineno += nl
        self.offset += len(chunk)
        return True

    def _line(self, raw: bytes) -> None:
        recording = self.recording
        self.lineno += 1
        here = self.offset
        self.offset += len(raw)
        if len(raw) - raw.endswith(b"\n") >= MAX_LINE_BYTES:  # as the reader: over the bound, not read
            if self.pending_bad is not None:
                recording._bad(*self.pending_bad)
                self.pending_bad = None
            recording._bad(self.lineno, f"longer than {MAX_LINE_BYTES >> 20} MiB")
            return
        t: int | None = None
        if raw.startswith(b'{"t":') and raw.endswith(b"}\n") and b'"kind":"mark"' not in raw:
            try:
                t = int(raw[5 : raw.find(b",", 5)])
            except ValueError:
                t = None
        if t is None:
            try:
                ev, why = decode_event(raw.rstrip(b"\n") if raw.endswith(b"\n") else raw), ""
            except BadRow as exc:
                ev, why = None, str(exc)
            if ev is None or not raw.endswith(b"\n"):
                if self.pending_bad is not None:
                    recording._bad(*self.pending_bad)
                    self.pending_bad = None
                if not raw.endswith(b"\n"):
                    if ev is None:
                        recording.warnings.append(truncated_warning(recording.path, self.lineno))
                        self.truncated = True
                        return
                elif raw.strip():
                    self.pending_bad = (self.lineno, why)
                    recording._bad_offsets.add(here)  # counted here: a replay reading it again does not recount
                    return
                else:
                    return
            t = ev.t
            if ev.kind == schema.MARK:
                self.index.markers.append(Marker(t, str(ev.data.get("label", "mark")), here, ev.lane))
        if self.pending_bad is not None:
            recording._bad(*self.pending_bad)
            self.pending_bad = None
        if self.since >= self.every:
            self.index.checkpoints.append(Checkpoint(here, self.tmax))
            self.since = 0
        self.since += 1
        self.n += 1
        if self.t_first is None:
            self.t_first = t
        if t > self.tmax:
            self.tmax = t

    def finish(self) -> RecordingIndex:
        index, recording = self.index, self.recording
        if self.pending_bad is not None:
            recording.warnings.append(unreadable_last_warning(recording.path, self.pending_bad[0]))
        recording.summarise()
        index.events = self.n
        index.t_first = self.t_first or 0
        index.t_last = max(self.tmax, 0)
        index.end_offset = self.offset
        if not index.checkpoints:
            index.checkpoints.append(Checkpoint(self.offset, -1))
        index.markers.sort(key=lambda m: (m.t, m.offset))
        return index


def read_from(fh: IO[bytes], offset: int, end: int,
              recording: Recording | None = None) -> Iterator[tuple[int, Event]]:
    """``(line offset, event)`` for every readable event line in ``[offset, end)``.

    Lines over the bound and lines that do not fit the schema are stepped over.  The index's fast
    path checks a line's shape, not its types, so a well-shaped line that fails the schema is found
    here: with *recording* given, it is counted there once (``Recording.bad_at``), with a warning.
    """
    fh.seek(offset)
    decode = decode_event
    for item in bounded_lines(fh):
        if offset >= end:
            return
        here = offset
        if item.__class__ is Overlong:
            offset += item.size
            continue
        raw, ended = item
        offset += len(raw) + ended
        try:
            ev = decode(raw)
        except BadRow as exc:
            if not ended:
                return
            if recording is not None and raw.strip():
                recording.bad_at(here, str(exc))
            continue
        yield here, ev
        if not ended:
            return
