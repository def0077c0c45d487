"""What a lane's requests and a session's notes write, typed: a lane's identity (:class:`LaneIdentity`, the ``lane``
event), a request sent (:class:`RequestSent` and the keys a workload tags it with, :class:`RequestTags`: the
``request`` event), its first byte (:class:`FirstByte`), a token-carrying chunk (:class:`TokenChunk`), why it failed
(:class:`RequestError`, the ``error`` event) and a note for the log (:class:`Note`).

The producers (client/http.py, client/sse.py, workloads/harness.py, sessions/sources.py, workers/, share/,
monitor/alerting.py) build these; the event carries :func:`~lanemon.results.readings.event_data` of one, the JSON
object recordings have always held (same keys, same values, same order: a field at its default is left out; a field
defaulting to ``UNSET`` is written whenever it was given, null included).  recording/schema.py makes the recording
checker of each kind from these models (``MODELS``), so a field added here is checked in recordings too.  The
stream reader's hot path (client/sse.py) writes a token's dict literally, with these keys
(tests/test_results_requests.py holds it to :class:`TokenChunk`).  Here, beside the other typed readings, so the
writers and the checker read one model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, UnsetType

from lanemon.results.marks import Key
from lanemon.results.readings import Reading, event_data

if TYPE_CHECKING:
    from lanemon.config import LaneConfig


class LaneIdentity(Reading):
    """A lane's identity became known or changed (``lane`` event): config.LaneConfig.public() and what the client
    learnt (the model it serves, whether it streams usage on every chunk)."""

    name: str | None
    url: str | None
    model: str | None
    """The model lanemon uses on this lane (null: not pinned and not learnt yet)."""
    telemetry: str | None = None
    """Where the lane's GPUs report (a public URL, or ``nvml``)."""
    cost_per_hour: float | None = None
    """What the lane's GPUs cost per hour, USD."""
    continuous_usage: bool | None = None
    """The lane accepts ``stream_options.continuous_usage_stats`` (absent: not asked)."""


class RequestSent(Reading):
    """A request was written (``request`` event): what was asked of the lane.  The workload's tags
    (:class:`RequestTags`) follow these keys, then ``queued_ms``."""

    endpoint: str | None
    """``chat`` or ``completions``."""
    purpose: Key
    """Why lanemon sent it: ``probe``, ``bench``, ``detect`` ..."""
    model: str | None
    """The model id as recorded (the lane's shown name for its wire id, else cleaned)."""
    max_tokens: int | None | UnsetType = UNSET
    temperature: float | None | UnsetType = UNSET
    seed: Any = UNSET
    reasoning_effort: Any = UNSET
    thinking: Any = UNSET
    """The body's ``chat_template_kwargs.thinking`` when it set one."""
    continuous_usage: bool | None = False
    """The request asked for usage on every chunk."""
    prompt_chars: int | None | UnsetType = UNSET
    prompt: str | None | UnsetType = UNSET
    """The prompt's text, when it is short enough to record (client/http.PROMPT_RECORD_LIMIT)."""
    queued_ms: float | None | UnsetType = UNSET
    """How long the request waited for a ready connection, ms (written last, after the tags)."""


class RequestTags(msgspec.Struct, kw_only=True):
    """The keys a workload tags its requests with (a bench's cell, a race, a qeval task ...): any scalar, each
    optional (a workload's own keys beyond these are kept unchecked).  Readers group requests by them
    (measure/records.py ``RequestRecord.meta``)."""

    bench: Key = None
    cell: Key = None
    part: Key = None
    run: Key = None
    rep: Key = None
    chars: int | None = None
    length: Key = None
    race: Key = None
    prompt_id: Key = None
    level: Key = None
    category: Key = None
    task: Key = None
    kind: Key = None
    turn: Key = None


class FirstByte(Reading):
    """The response began (``first_byte`` event): its HTTP status and the server's id of the request."""

    status: Key
    server_request_id: str | None = None
    """The answer's ``x-request-id`` (redacted, to match server logs)."""


class TokenChunk(Reading):
    """A token-carrying chunk (``token`` event): its text (reasoning text when ``reasoning``), how many tokens it
    carried when the usage block said, and what else it held."""

    text: str | None
    reasoning: bool | None = None
    content: str | None = None
    """Answer text in the same chunk as reasoning text (coalescing servers)."""
    nr: int | None = None
    """Of ``n``, how many were reasoning tokens (the usage block's rise), when a chunk carried both."""
    tool_calls: list[Any] | None = None
    blank: bool | None = None
    """Tokens without text (usage rose, or logprobs named them): counted, no text."""
    n: int | None = None
    """Tokens in the chunk (the rise of ``completion_tokens``), when the usage block said."""


class RequestError(Reading):
    """A request failed (``error`` event): the class of failure (events.ERR_*), the HTTP status where there was
    one, why, and when the server asked to be retried."""

    cls: str | None
    status: Key = None
    message: str | None = None
    retry_after: str | None = None
    """The answer's ``Retry-After`` (429/503), at most 64 characters."""


def error_data(cls: str, message: str, status: int | None = None) -> dict[str, Any]:
    """An ``error`` event's data: :func:`event_data` of a :class:`RequestError` (``status`` left out when None)."""
    return event_data(RequestError(cls=cls, status=status, message=message))


class Note(Reading, kw_only=True):
    """A note for the log (``note`` event): its level and message; a retried connection and the load hosts' notes
    say so."""

    level: str | None
    """``info``, ``warning`` or ``error``."""
    retry: bool = False
    """A pooled connection the server had closed was retried once (client/http.retry_note)."""
    message: str | None
    about: str | None = None
    """What the note is about, for a reader that picks some out (``load_hosts``: workers/ray_pool.py)."""


MODELS: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "lane": (LaneIdentity,), "request": (RequestSent, RequestTags), "first_byte": (FirstByte,),
    "token": (TokenChunk,), "error": (RequestError,), "note": (Note,)}
"""kind -> the model(s) of its data (recording/schema.py makes the checkers from these)."""


def note_data(message: str, level: str = "info", about: str | None = None) -> dict[str, Any]:
    """A ``note`` event's data: :func:`event_data` of a :class:`Note`."""
    return event_data(Note(level=level, message=message, about=about))


def lane_data(lane: LaneConfig, **learnt: Any) -> dict[str, Any]:
    """A ``lane`` event's data: :func:`event_data` of a :class:`LaneIdentity` made from the lane's public identity
    (``LaneConfig.public()``: no credentials) and what the client learnt (``model``, ``continuous_usage``).  A key
    the model does not name is a TypeError: the model is the one definition of what the event holds."""
    return event_data(LaneIdentity(**{**lane.public(), **learnt}))
