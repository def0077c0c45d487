"""The typed schema of a recording: its header and every event kind, checked as a file is read.

A recording is something other people hand you, so every line is untrusted.  Each
event line is decoded by msgspec straight into :class:`EventRow` (the envelope:
``t`` a non-negative integer, ``kind`` a string, ``lane`` and ``req`` strings or
absent, ``data`` an object), and the fields a reader relies on in ``data`` are
checked against the kind's schema (:data:`DATA_SCHEMAS`): a usage count is an
integer, a token's text a string, and so on.  Every kind's schema is made by
:func:`checker` from the one typed model its writer builds (results/readings.py: a probe, a
scrape, a GPU reading, a host sample, a loop window, a usage block, a stream's end;
results/requests.py: a lane's identity, a request, its first byte, a token, an error, a note;
results/marks.py: a mark; results/monitor_events.py: an alert, a lane going down or up), so a field added to
the model is checked in recordings too.  Fields a schema does not name are
kept as they are (newer minor versions add fields); kinds it does not know keep
only the envelope check.  The header is checked by :func:`check_header`.

Sizes are bounded before anything is parsed: the header line by
:data:`MAX_HEADER_BYTES`, every event line by :data:`MAX_LINE_BYTES`;
:func:`bounded_lines` never holds a longer line in memory.

A line that fails is the reader's to skip and count (:class:`lanemon.recording.reader.Recording`);
a header that fails is one clear :class:`~lanemon.recording.reader.RecordingError`.
"""

from __future__ import annotations

import operator
import re
import types
from collections.abc import Iterator
from functools import cache, reduce
from typing import IO, Annotated, Any, Union, get_args, get_origin

import msgspec

from lanemon import events as ev_schema
from lanemon.events import Event
from lanemon.results.marks import MARK_MODELS
from lanemon.results.monitor_events import AlertEvent, LaneDown, LaneUp
from lanemon.results.requests import (FirstByte, LaneIdentity, Note, RequestError, RequestSent, RequestTags,
                                      TokenChunk)
from lanemon.results.readings import HostSample, LoopWindow, ProbeResult, ServerScrape, StreamEnd, Telemetry, Usage
from lanemon.untrusted import ID_LIMIT, inert, inert_event_data, needs_inert

__all__ = ["EventRow", "Header", "HostInfo", "QevalInfo", "DATA_SCHEMAS", "data_schemas", "checker", "MAX_HEADER_BYTES",
           "MAX_LINE_BYTES", "BadRow", "decode_event",
           "check_header", "bounded_lines", "Overlong"]

MAX_HEADER_BYTES = 1 << 20
"""The header line's bound (1 MiB); a longer first line is not a lanemon recording."""
MAX_LINE_BYTES = 8 << 20
"""An event line's bound (8 MiB); a longer line is skipped without being read into memory."""
READ_CHUNK = 1 << 20

class EventRow(msgspec.Struct):
    """The envelope of one event line."""

    t: Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]
    kind: str
    lane: str | None = None
    req: str | None = None
    data: dict[str, Any] | None = None


def _loose(tp: Any) -> Any:
    """``tp`` as a recording may hold it: a nested Struct as its :func:`checker`, inside unions, lists and dicts."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return checker(tp)
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):  # ``UNSET`` (a field the writer may leave out) is never read
        return reduce(operator.or_, (_loose(a) for a in args if a is not msgspec.UnsetType))
    if origin is list:
        return list[_loose(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[args[0], _loose(args[1])]  # type: ignore[misc]
    return tp


def _fields(model: type[msgspec.Struct]) -> Iterator[msgspec.structs.FieldInfo]:
    """The fields of ``model`` as its event's data holds them: a tagged model's tag field first (a string), and a
    nested reading it splices (``SPLICED``, a scrape's figures beside ``ok``) gives its own fields in its place."""
    tag = model.__struct_config__.tag_field  # a tagged model's tag (``state`` of a lane_state): a string
    if tag is not None:
        yield msgspec.structs.FieldInfo(tag, tag, str, msgspec.NODEFAULT, msgspec.NODEFAULT)
    spliced = getattr(model, "SPLICED", ())
    for f in msgspec.structs.fields(model):
        if f.name in spliced:
            yield from _fields(next(a for a in get_args(f.type) if isinstance(a, type) and
                                    issubclass(a, msgspec.Struct)))
        else:
            yield f


_CHECKERS: dict[tuple[type[msgspec.Struct], ...], type[msgspec.Struct]] = {}


def checker(*models: type[msgspec.Struct], name: str | None = None) -> type[msgspec.Struct]:
    """The recording checker made from the typed model(s) of an event's data: every field the models name, with
    the model's type, optional (a recording from an older lanemon may lack it), unknown keys kept (a newer one may
    add some); the first model naming a key decides its type.  A field added to the model is checked in
    recordings with no second edit."""
    got = _CHECKERS.get(models)
    if got is not None:
        return got
    fields: dict[str, tuple[str, Any, None]] = {}
    for model in models:
        for f in _fields(model):
            fields.setdefault(f.encode_name, (f.encode_name, _loose(f.type) | None, None))
    name = name or f"{models[0].__name__}Data"
    cls = msgspec.defstruct(name, list(fields.values()), forbid_unknown_fields=False, module=__name__)
    cls.__doc__ = (f"A recorded {name.removesuffix('Data')}'s data, checked as it is read: the fields of "
                   + ", ".join(m.__name__ for m in models) + ", each optional; unknown keys kept.")
    _CHECKERS[models] = cls
    return cls


_KINDS: dict[str, tuple[type[msgspec.Struct], ...]] = {
    ev_schema.PROBE: (ProbeResult,),
    ev_schema.LANE: (LaneIdentity,),
    ev_schema.REQUEST: (RequestSent, RequestTags),
    ev_schema.FIRST_BYTE: (FirstByte,),
    ev_schema.TOKEN: (TokenChunk,),
    ev_schema.USAGE: (Usage,),
    ev_schema.DONE: (StreamEnd,),
    ev_schema.ERROR: (RequestError,),
    ev_schema.MARK: MARK_MODELS,
    ev_schema.NOTE: (Note,),
    ev_schema.SERVER_METRICS: (ServerScrape,),
    ev_schema.HOST: (HostSample,),
    ev_schema.CLIENT_LOAD: (LoopWindow,),
    ev_schema.GPU: (Telemetry,),
    ev_schema.ALERT: (AlertEvent,),
    ev_schema.LANE_STATE: (LaneDown, LaneUp),
}
"""kind -> the one model (or models) of its ``data``: the typed reading, request event or mark its writer builds
(results/readings.py, results/requests.py, results/marks.py, results/monitor_events.py)."""


@cache
def data_schemas() -> dict[str, type[msgspec.Struct]]:
    """kind -> the schema of its ``data`` (fields not named are kept unchecked): :data:`_KINDS`' models made
    lenient by :func:`checker`.  Built on first use (some 20 ms: a command that never reads a recording does not
    pay it); ``DATA_SCHEMAS`` is the same dict."""
    return {kind: checker(*models, name=_NAMES.get(kind)) for kind, models in _KINDS.items()}


_NAMES = {ev_schema.MARK: "MarkData", ev_schema.ALERT: "AlertData", ev_schema.LANE_STATE: "LaneStateData",
          ev_schema.LANE: "LaneData", ev_schema.REQUEST: "RequestData", ev_schema.FIRST_BYTE: "FirstByteData",
          ev_schema.TOKEN: "TokenData", ev_schema.ERROR: "ErrorData", ev_schema.NOTE: "NoteData"}
"""The checker's name where the first model's would mislead (a lane_state's is not only a LaneDown's)."""


def __getattr__(name: str) -> Any:
    if name == "DATA_SCHEMAS":
        return data_schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: 309 digits in a row: the shortest integer a float cannot hold (> 1.8e308) has that many, so a line without
#: such a run (nearly every line) needs no walk of its data
_LONG_DIGITS = re.compile(rb"\d{309}").search


class BadRow(ValueError):
    """One event line that does not fit the schema (the message says where)."""


_decoder = msgspec.json.Decoder(EventRow)
_convert = msgspec.convert


def decode_event(raw: bytes) -> Event:
    """One event line -> :class:`Event`; :class:`BadRow` if it is not JSON or does not fit the schema.

    The event is made inert here, the one gate every event read from outside passes (a recording, a
    share stream): every string without escape sequences or control characters, cut to
    ``untrusted.READ_TEXT_LIMIT`` (model text, prompts and tool calls excepted), lane and request ids to
    ``ID_LIMIT``, containers bounded (``untrusted.inert_event_data``).  A line with none of the bytes
    that could need it (most lines) costs one search."""
    try:
        row = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise BadRow(_where(exc)) from None
    except (msgspec.DecodeError, RecursionError):
        raise BadRow("not JSON") from None
    if len(raw) > 309 and row.data and _LONG_DIGITS(raw) is not None:  # a number no reader can use (float())
        from lanemon.measure.bounds import beyond_float  # inert: the module's own import (a local one here
        # would make every later ``inert`` in this function local, unbound on the lines that skip this branch)

        where = beyond_float(row.data)
        if where is not None:
            raise BadRow(inert(f"a number past float's range at `$.data{where}`", 200))
    schema = data_schemas().get(row.kind)
    if schema is not None and row.data:
        try:
            _convert(row.data, schema)
        except msgspec.ValidationError as exc:
            raise BadRow(f"{row.kind} event: " + _where(exc).replace("`$.", "`$.data.", 1)) from None
    if not needs_inert(raw):
        return Event(row.t, row.kind, row.lane, row.req, row.data or {})
    return Event(row.t, inert(row.kind, ID_LIMIT), None if row.lane is None else inert(row.lane, ID_LIMIT),
                 None if row.req is None else inert(row.req, ID_LIMIT), inert_event_data(row.data or {}))


def _where(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:199] + "…"


class LaneInfo(msgspec.Struct, forbid_unknown_fields=False):
    name: str | None = None
    url: str | None = None
    model: str | None = None


class WorkerHost(msgspec.Struct, forbid_unknown_fields=False):
    """One worker of a run that sent its requests from workers (``bench load --workers-backend ray``): where it
    ran and how its clock was put on the main clock at ``ready`` (docs/WORKERS.md, "Clocks")."""

    worker: int | None = None
    node: str | None = None
    """Ray node id."""
    host: str | None = None
    address: str | None = None
    version: str | None = None
    """The lanemon version the worker runs (checked equal to the main process's at ``ready``)."""
    pid: int | None = None
    offset_ns: int | None = None
    """The worker host's clock minus the main clock, ns (subtracted from every stamp it makes)."""
    offset_uncertainty_ns: int | None = None
    """Half the round trip the offset was measured over: the true offset is within ± this."""
    synced_at_ns: int | None = None
    """Session time of that measurement."""


class HostInfo(msgspec.Struct, forbid_unknown_fields=False, omit_defaults=True):
    """The header's ``host``: the machine lanemon ran on (recording/writer.py ``host_info``)."""

    platform: str | None = None
    python: str | None = None
    cpus: int | None = None
    memory_bytes: int | None = None


class QevalInfo(msgspec.Struct, forbid_unknown_fields=False):
    """The header's ``qeval`` (``lanemon qeval``): the lane evaluated and how many tasks."""

    lane: str | None = None
    tasks: int | None = None


class Header(msgspec.Struct, forbid_unknown_fields=False):
    schema: str
    version: str
    lanemon: str | None = None
    created: str | None = None
    command: str | None = None
    lanes: list[LaneInfo] = []
    host: HostInfo = msgspec.field(default_factory=HostInfo)
    bench: str | None = None
    qeval: QevalInfo | None = None
    wall_t0_s: float | None = None
    """wall-clock time (epoch s) of the session clock's t = 0 (optional, schema 1.0 readers ignore it)."""
    workers: list[WorkerHost] | None = None
    """Each worker of a run across load hosts (optional, schema 1.0 readers ignore it)."""


def check_header(obj: Any) -> None:
    """Raise ValueError (saying which field) unless ``obj`` fits :class:`Header`."""
    try:
        msgspec.convert(obj, Header)
    except msgspec.ValidationError as exc:
        raise ValueError(_where(exc)) from None


class Overlong:
    """A line longer than the bound: its size (with its newline), never its bytes."""

    __slots__ = ("size", "ended")

    def __init__(self, size: int, ended: bool) -> None:
        self.size = size
        self.ended = ended  # False: the file ended inside it


def bounded_lines(fh: IO[bytes], max_line: int | None = None,
                  chunk: int | None = None) -> Iterator[tuple[bytes, bool] | Overlong]:
    """Every line of ``fh`` from its position, in order: ``(bytes without the newline, ended)``, where
    ``ended`` is False only for a last line the file cut short.

    Lines are split at ``\n`` only (as the recorder writes them).  A line longer than ``max_line``
    bytes comes as :class:`Overlong` and is never held in memory: reading skips to its end.  Memory
    stays within about ``chunk + max_line``.
    """
    max_line = MAX_LINE_BYTES if max_line is None else max_line
    chunk = READ_CHUNK if chunk is None else chunk
    tail = b""
    skipping = 0  # > 0: inside an overlong line, this many bytes so far
    while True:
        block = fh.read(chunk)
        if not block:
            break
        if skipping:
            nl = block.find(b"\n")
            if nl < 0:
                skipping += len(block)
                continue
            yield Overlong(skipping + nl + 1, True)
            skipping = 0
            block = block[nl + 1:]
        data = tail + block if tail else block
        parts = data.split(b"\n")
        tail = parts.pop()
        for line in parts:
            if len(line) >= max_line:
                yield Overlong(len(line) + 1, True)
            else:
                yield line, True
        if len(tail) >= max_line:
            skipping, tail = len(tail), b""
    if skipping:
        yield Overlong(skipping, False)
    elif tail:
        yield tail, False
