"""Text that came from a lane, made harmless: inert on screen, redacted of secrets, bounded in size.

Every byte a lane sends is untrusted (docs/SECURITY.md).  The client
(:mod:`lanemon.client.http`) passes every server string through one
:class:`Redactor` before it becomes an :class:`~lanemon.events.Event`, so the
recorder, the share stream, the screens, reports and exports only ever see the
cleaned text.  Pure functions, no IO, no Textual.

- :func:`inert` removes terminal escape sequences (CSI, OSC, DCS, ...), C0/C1
  control characters, bidi controls and zero-width characters, caps runs of combining
  marks, and cuts over-long text with ``…``.
- :func:`shown_text` is model output as a terminal view shows it (bidi controls made
  visible); :func:`json_visible` writes those characters as ``\\u`` escapes in ``--json``.
- :func:`markup_escape` makes text safe inside Textual/Rich markup (no
  ``MarkupError``, no injected style) after making it inert.
- :class:`Redactor` replaces configured secrets (API keys, header values, URL
  passwords and sensitive query values, also URL-encoded, JSON-escaped or in a
  Basic-auth header), URL userinfo, sensitive query parameters, ``Bearer ...``
  values and well-known key shapes (``sk-...``, ``ghp_...``, JWTs, ...) with
  ``[redacted]``.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

REDACTED = "[redacted]"
ELLIPSIS = "…"

MESSAGE_LIMIT = 500
"""Server messages (error bodies, notes) are cut to this many characters."""
ID_LIMIT = 200
"""Model ids, request ids and other identifiers are cut to this many characters."""

# -- inert -------------------------------------------------------------------------------------------

_ESCAPE_SEQ = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI (also unterminated)
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC ... BEL/ST (title, hyperlinks, clipboard)
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC ... ST
    r"|\x1b[ -/]*[0-~]?"  # two-character and nF escapes (ESC c: full reset, ESC 7, ...)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?"  # 8-bit OSC, DCS, SOS, PM, APC
)
# Invisible characters that change how text reads (issue 24): bidi embeddings, overrides, isolates and marks
# (Trojan Source; U+061C the Arabic letter mark), zero-width characters (space, non-joiner, joiner, word joiner,
# invisible operators, BOM, Mongolian vowel separator), line/paragraph separators.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_ZERO_WIDTH = "\u180e\u200b-\u200d\u2060-\u2064\ufeff"
_INVISIBLE = _BIDI + _ZERO_WIDTH + "\u2028\u2029"
# C0 and C1 controls except tab/newline, DEL, the invisible characters above
_CONTROL_KEEP_NL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + _INVISIBLE + "]")
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f" + _INVISIBLE + "]")
_WHITESPACE_CONTROLS = re.compile(r"[\t\n\r\x0b\x0c\u2028\u2029]+")
# text with none of these is already inert (the fast path: one search)
_UNSAFE = _CONTROL_KEEP_NL
_UNSAFE_ONE_LINE = _CONTROL_ONE_LINE
# token text keeps \r as well (it is the model's output; the screens make it inert when they show it)
_UNSAFE_TOKEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_CONTROL_TOKEN = _UNSAFE_TOKEN
MAX_MARKS = 6
"""Combining marks kept on one character where text is shown (a flood of 20,000 stacks up for ever)."""


@functools.cache
def _mark_runs() -> re.Pattern[str]:
    """Runs of more than :data:`MAX_MARKS` combining marks (Unicode category M*; the BMP's, the musical
    symbols' and the variation selectors'), compiled on first use (a ~10 ms scan of the BMP)."""
    ranges: list[list[int]] = []
    for cp in range(0x300, 0x10000):
        if unicodedata.category(chr(cp))[0] == "M":
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    ranges += [[0x1D165, 0x1D169], [0x1D16D, 0x1D172], [0x1D17B, 0x1D182], [0x1D185, 0x1D18B],
               [0x1D1AA, 0x1D1AD], [0xE0100, 0xE01EF], [0x20D0, 0x20FF]]
    cls = "".join(f"\\U{a:08x}-\\U{b:08x}" if a != b else f"\\U{a:08x}" for a, b in ranges)
    return re.compile(f"([{cls}]{{{MAX_MARKS}}})[{cls}]+")


def cap_marks(text: str) -> str:
    """``text`` with every run of combining marks cut to :data:`MAX_MARKS` (the rest dropped)."""
    if text.isascii() or len(text) <= MAX_MARKS:  # O(1) for ASCII: no marks
        return text
    return _mark_runs().sub(r"\1", text)


_VISIBLE_BIDI = re.compile("[" + _BIDI + "]")
_DROP_IN_VIEW = re.compile("[" + _ZERO_WIDTH + "]")
_VIEW_HINT = re.compile(r"[\x00-\x1f\x7f-\x9f" + _INVISIBLE + "]")


def shown_text(text: str) -> str:
    """Model output as a terminal view shows it: escape sequences and controls out (tab and newline
    kept; a carriage return becomes a newline), bidi controls made visible (``⟨U+202E⟩``), zero-width
    characters dropped, combining-mark runs capped at :data:`MAX_MARKS`.  The recording keeps the text
    as the lane sent it (docs/SECURITY.md); this is for the eye only.  One search when there is nothing
    to do but the marks check."""
    if _VIEW_HINT.search(text) is not None:
        text = _ESCAPE_SEQ.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
        text = _VISIBLE_BIDI.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)
        text = _CONTROL_KEEP_NL.sub("", _DROP_IN_VIEW.sub("", text).replace("\u2028", "\n").replace("\u2029", "\n"))
    return cap_marks(text)


_JSON_INVISIBLE = re.compile("[" + _INVISIBLE + "]")


def json_visible(text: str) -> str:
    """A JSON document with every bidi control and zero-width character inside its strings written as a
    ``\\uXXXX`` escape: the same JSON value, but a terminal that shows it cannot be made to reorder or
    hide text (``--json`` output).  Those characters can only occur inside JSON strings."""
    if _JSON_INVISIBLE.search(text) is None:
        return text
    return _JSON_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def cut(text: str, limit: int | None) -> str:
    """``text`` cut to at most ``limit`` characters, the last one an ellipsis when it was longer."""
    if limit is None or len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    return text[: limit - 1] + ELLIPSIS


def inert(text: Any, limit: int | None = None, *, newlines: bool = False) -> str:
    """``text`` with escape sequences and control characters removed, cut to ``limit`` characters.

    Without ``newlines`` the result is one line (tabs and line breaks become one space);
    with it, ``\\n`` and ``\\t`` are kept (``\\r`` is dropped: it rewrites a terminal line).
    Anything that is not a string is shown as ``str(value)`` first.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if limit is not None and len(text) > 4 * limit + 64:  # never scan megabytes to show a line
        text = text[: 4 * limit + 64]
    unsafe = _UNSAFE if newlines else _UNSAFE_ONE_LINE
    if unsafe.search(text) is not None:
        text = _ESCAPE_SEQ.sub("", text)
        if newlines:
            text = _CONTROL_KEEP_NL.sub("", text.replace("\r\n", "\n"))
        else:
            text = _CONTROL_ONE_LINE.sub("", _WHITESPACE_CONTROLS.sub(" ", text))
    return cut(cap_marks(text), limit)


def inert_token(text: str) -> str:
    """Model output made inert but kept as faithful as possible: escape sequences and control
    characters go, tab, newline and carriage return stay.  Cheap when there is nothing to do."""
    if _UNSAFE_TOKEN.search(text) is None:
        return text
    return _CONTROL_TOKEN.sub("", _ESCAPE_SEQ.sub("", text))


READ_TEXT_LIMIT = 4096
"""A string read from a recording or a share stream is cut to this many characters (model text, a
request's prompt and tool calls excepted: they are the evidence and have their own bounds)."""
READ_ITEMS = 1024
"""At most this many items of one list or object read from a recording or a share stream (then
``"… N more"``)."""
READ_DEPTH = 8
_READ_HINT = re.compile(rb"\\[ubfr]|\x1b|\x7f|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa0-\xa9]"
                        rb"|\xef\xbb\xbf|\xd8\x9c|\xe1\xa0\x8e")
"""A JSON line whose bytes have none of these holds no string :func:`inert` would change: no escaped
control character (``\\u001b``, ``\\u009b``, ``\\u202e``, ``\\b``, ``\\f``, ``\\r``), no raw ESC/DEL, no C1
control, bidi, zero-width or separator character in UTF-8."""
READ_FAST_BYTES = 4096
"""Lines shorter than this without a :data:`_READ_HINT` are taken as they are (the common case: one search)."""
_RAW_TEXT = frozenset({"text", "prompt", "tool_calls"})


def needs_inert(raw: bytes) -> bool:
    """True unless the JSON line ``raw`` is short and has no byte :func:`inert` would change."""
    return len(raw) >= READ_FAST_BYTES or _READ_HINT.search(raw) is not None


READ_EVENT_CHARS = 1 << 16
"""All the strings of one event read from outside, model text, prompt and tool calls excepted, hold at most
this many characters together (64 Ki); past it a string is ``…``: 1,024 fields of 4,096 characters each fit
in a line of the recording bound but not in memory held per event."""


def inert_value(value: Any, limit: int = READ_TEXT_LIMIT, *, depth: int = 0, budget: list[int] | None = None) -> Any:
    """A JSON-like value read from outside (a recording's line, a share message) with every string and
    key made inert (newlines kept) and cut to ``limit``; at most :data:`READ_ITEMS` items a container,
    :data:`READ_DEPTH` levels and ``budget[0]`` characters in all (default :data:`READ_EVENT_CHARS`).
    The gate every event passes when it is read (docs/SECURITY.md)."""
    if budget is None:
        budget = [READ_EVENT_CHARS]
    if isinstance(value, str):
        if not value:
            return value
        if budget[0] <= 0:
            return ELLIPSIS
        out = inert(value, min(limit, budget[0]), newlines=True)
        budget[0] -= len(out)
        return out
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth >= READ_DEPTH:
        return ELLIPSIS
    if isinstance(value, dict):
        out_d: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= READ_ITEMS:
                out_d[ELLIPSIS] = f"{len(value) - READ_ITEMS} more"
                break
            key = inert(k, ID_LIMIT)
            budget[0] -= len(key)
            out_d[key] = inert_value(v, limit, depth=depth + 1, budget=budget)
        return out_d
    if isinstance(value, (list, tuple)):
        kept = [inert_value(v, limit, depth=depth + 1, budget=budget) for v in value[:READ_ITEMS]]
        if len(value) > READ_ITEMS:
            kept.append(f"{ELLIPSIS} {len(value) - READ_ITEMS} more")
        return kept
    return inert_value(str(value), limit, depth=depth, budget=budget)


def inert_event_data(data: dict[str, Any]) -> dict[str, Any]:
    """An event's ``data`` read from outside made inert: model text (``text``), a request's ``prompt``
    and ``tool_calls`` keep their newlines, tabs and carriage returns and their length (they are the
    evidence, bounded by the line), every other string is :func:`inert_value`, within one budget of
    :data:`READ_EVENT_CHARS` for the event."""
    out: dict[str, Any] = {}
    budget = [READ_EVENT_CHARS]
    for i, (k, v) in enumerate(data.items()):
        if i >= READ_ITEMS:
            break
        key = inert(k, ID_LIMIT)
        if key in _RAW_TEXT:
            if isinstance(v, str):
                out[key] = inert_token(v)
            else:
                out[key] = inert_value(v, 1 << 16, budget=[1 << 20])
        else:
            out[key] = inert_value(v, budget=budget)
    return out


def markup_escape(text: Any) -> str:
    """Arbitrary text made safe inside Textual markup (and inert).

    Every ``[`` is escaped (``textual.markup.escape`` leaves ``[DONE]`` alone although the parser
    eats it); a trailing backslash, which would escape the markup that follows, gets a zero-width
    space after it.
    """
    out = inert(text, newlines=True).replace("[", "\\[")
    if out.endswith("\\"):
        out += "\u200b"
    return out


def rich_escape(text: Any, limit: int | None = None) -> str:
    """Arbitrary text made safe inside Rich console markup (and inert, one line)."""
    from rich.markup import escape

    return escape(inert(text, limit))


# -- redaction ---------------------------------------------------------------------------------------

SENSITIVE_PARAMS = (
    "key", "api_key", "api-key", "apikey", "x-api-key", "token", "access_token", "refresh_token", "id_token",
    "auth", "auth_token", "authorization", "secret", "client_secret", "password", "passwd", "pwd", "sig",
    "signature", "x-amz-signature", "x-goog-signature", "session", "sessionid", "credential", "credentials",
    "code", "jwt",
)
_PARAMS = "|".join(re.escape(p) for p in sorted(SENSITIVE_PARAMS, key=len, reverse=True))
# a value that looks like a credential: 8+ characters with a digit in them, or 24+ characters
_VALUE = r"(?:(?=[{chars}]*\d)[{chars}]{{8,}}|[{chars}]{{24,}})"
_GENERIC = [  # (hints: every group needs one of its substrings in the lower-cased text, pattern, replacement)
    # scheme://user:pass@host -> scheme://[redacted]@host
    ((("://",), ("@",)), re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,15}://)[^/\s@\"'<>]+@"), r"\1" + REDACTED + "@"),
    # ?api_key=...&token=... in any URL or form body
    ((("=",), ("?", "&", ";")), re.compile(r"(?i)([?&;](?:" + _PARAMS + r")=)[^&#;\s\"'<>]*"), r"\1" + REDACTED),
    # Authorization: Bearer xxx / Basic xxx
    ((("bearer", "basic"),), re.compile(r"(?i)\b(bearer|basic)(\s+)" + _VALUE.format(chars=r"A-Za-z0-9._~+/=:-")),
     r"\1\2" + REDACTED),
    # "api_key": "...", 'password'='...', secret: ...
    ((("key", "token", "secret", "passw", "authorization"), (":", "=")),
     re.compile(r"(?i)([\"']?\b(?:api[_-]?key|x-api-key|access[_-]?token|auth[_-]?token|client[_-]?secret|secret|"
                r"password|passwd|authorization)\b[\"']?\s*[:=]\s*[\"']?)(?!\[redacted\])(?:bearer\s+|basic\s+)?"
                + _VALUE.format(chars=r"^\s\"',;&}<>")),
     r"\1" + REDACTED),
    # well-known key shapes: OpenAI/Anthropic-style sk-..., GitHub, Slack, AWS, Hugging Face, Google, JWTs
    ((("sk-", "pk-", "rk-"),), re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{3,}[A-Za-z0-9]{8,}[A-Za-z0-9_-]*"), REDACTED),
    ((("gh", "github_pat"),), re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"), REDACTED),
    ((("xox",),), re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), REDACTED),
    ((("akia", "asia"),), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    ((("hf_",),), re.compile(r"\bhf_[A-Za-z0-9]{20,}"), REDACTED),
    ((("aiza",),), re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), REDACTED),
    ((("eyj",),), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),
]


def _hinted(low: str, groups: tuple[tuple[str, ...], ...]) -> bool:
    return all(any(h in low for h in group) for group in groups)


MIN_SECRET = 6
"""Configured values shorter than this are not searched for (they would redact ordinary words)."""


def _variants(secret: str) -> set[str]:
    out = {secret, quote(secret, safe=""), json.dumps(secret)[1:-1], json.dumps(secret)[1:-1].replace("/", "\\/")}
    return {v for v in out if len(v) >= MIN_SECRET}


def url_secrets(url: str) -> list[str]:
    """The secrets a URL carries: its userinfo (user, password, ``user:password`` and its Basic-auth
    base64) and the values of its sensitive query parameters."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    out: list[str] = []
    if password:
        out.append(password)
        pair = f"{user or ''}:{password}"
        out += [pair, base64.b64encode(pair.encode()).decode()]
    if user:
        out.append(user)
    sensitive = {p.lower() for p in SENSITIVE_PARAMS}
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if name.lower() in sensitive and value:
            out.append(value)
    return out


TOKEN_CACHE_ITEMS = 4096
"""Cleaned token texts a :class:`Redactor` remembers (then it starts again): at most about 1 MB."""
TOKEN_CACHE_CHARS = 48
"""Only texts this short are remembered (a token is a few characters; a long chunk is rarely repeated)."""


class Redactor:
    """Replaces secrets in server text with ``[redacted]``.

    ``secrets`` are exact values to remove wherever they appear (configured API keys, header
    values, URL credentials); the generic patterns (URL userinfo, sensitive query parameters,
    bearer values, well-known key shapes) apply to every text.  Token text (model output) is only
    searched for the exact secrets: the generic patterns would rewrite ordinary code a model writes.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values: set[str] = set()
        for secret in secrets:
            if isinstance(secret, str) and len(secret) >= MIN_SECRET:
                values |= _variants(secret)
        self.secrets = tuple(sorted(values, key=len, reverse=True))
        self._literal = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None
        # model output: control characters or an exact secret (one search on the hot path)
        token_alternatives = [_UNSAFE_TOKEN.pattern] + [re.escape(s) for s in self.secrets]
        self._token_hint = re.compile("|".join(token_alternatives))
        self.token_cache: dict[str, str] = {}
        """Short token texts already cleaned -> their clean text (bounded: :data:`TOKEN_CACHE_ITEMS` of at
        most :data:`TOKEN_CACHE_CHARS` characters, emptied when full): a stream repeats its tokens, and a
        dict look-up costs less than the search (the SSE reader looks here first)."""
        self.text_cache: dict[tuple[str, int | None, bool], str] = {}
        """Short server strings already made inert and redacted by :meth:`text` -> the result (bounded as
        :attr:`token_cache`): a GPU reading's or a /metrics scrape's labels and keys are the same strings every
        reading, and :meth:`scrub` cleaned each of them every time (a fifth of a scrape's CPU)."""
        self.texts_cleaned = 0
        """Short texts cleaned rather than found in :attr:`text_cache` (tests count them)."""

    @classmethod
    def for_lane(cls, lane: Any) -> "Redactor":
        """The redactor of one lane (a :class:`~lanemon.config.LaneConfig`): its key, its header
        values and the credentials in its URL."""
        return cls(lane_secrets([lane]))

    def redact(self, text: str) -> str:
        """``text`` with every secret and secret-looking value replaced by ``[redacted]``."""
        if self._literal is not None:
            text = self._literal.sub(REDACTED, text)
        low = text.lower()  # cheap substring hints first: a regex runs only where it could match
        for groups, pattern, repl in _GENERIC:
            if _hinted(low, groups):
                text = pattern.sub(repl, text)
        return text

    __call__ = redact

    def text(self, value: Any, limit: int | None = MESSAGE_LIMIT, *, newlines: bool = False) -> str:
        """A server string as it may be recorded and shown: inert, redacted, at most ``limit`` long.  A short
        one's result is remembered (:attr:`text_cache`)."""
        if not isinstance(value, str):
            value = "" if value is None else str(value)
        short = len(value) <= TOKEN_CACHE_CHARS
        if short:
            key = (value, limit, newlines)
            out = self.text_cache.get(key)
            if out is not None:
                return out
        if limit is not None and len(value) > 4 * limit + 256:
            value = value[: 4 * limit + 256]
        out = inert(self.redact(inert(value, None, newlines=newlines)), limit, newlines=newlines)
        if short:
            self.texts_cleaned += 1
            cache = self.text_cache
            if len(cache) >= TOKEN_CACHE_ITEMS:
                cache.clear()
            cache[key] = out
        return out

    def ident(self, value: Any) -> str:
        """An identifier from the server (model id, request id): one line, at most ``ID_LIMIT``."""
        return self.text(value, ID_LIMIT)

    def token(self, text: str) -> str:
        """Model output: control characters and escape sequences removed, exact secrets redacted;
        the common case (nothing to do) costs one regex search.  A short text's result is remembered
        (:attr:`token_cache`)."""
        if self._token_hint.search(text) is None:
            out = text
        else:
            out = inert_token(text)
            if self._literal is not None:
                out = self._literal.sub(REDACTED, out)
        if len(text) <= TOKEN_CACHE_CHARS:
            cache = self.token_cache
            if len(cache) >= TOKEN_CACHE_ITEMS:
                cache.clear()
            cache[text] = out
        return out

    def deep(self, value: Any, *, depth: int = 0) -> Any:
        """A JSON-like value with every string (and key) redacted; nothing cut, nothing made inert
        (a second guard for text that was cleaned at the source already)."""
        if isinstance(value, str):
            return self.redact(value)
        if depth >= 32:
            return value
        if isinstance(value, dict):
            return {(self.redact(k) if isinstance(k, str) else k): self.deep(v, depth=depth + 1)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.deep(v, depth=depth + 1) for v in value]
        return value

    def scrub(self, value: Any, limit: int = MESSAGE_LIMIT, *, items: int = 64, depth: int = 0) -> Any:
        """A JSON-like value from the server (tool calls, odd fields) with every string made inert
        and redacted; bounded in depth (6), ``items`` per container and string length."""
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value, limit, newlines=True)
        if depth >= 6:
            return ELLIPSIS
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for i, (k, v) in enumerate(value.items()):
                if i >= items:
                    out[ELLIPSIS] = f"{len(value) - items} more"
                    break
                out[self.text(k, ID_LIMIT)] = self.scrub(v, limit, items=items, depth=depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            kept = [self.scrub(v, limit, items=items, depth=depth + 1) for v in value[:items]]
            if len(value) > items:
                kept.append(f"{ELLIPSIS} {len(value) - items} more")
            return kept
        return self.text(value, limit)


def lane_secrets(lanes: Iterable[Any]) -> list[str]:
    """Every secret the given lanes (:class:`~lanemon.config.LaneConfig`) carry: API keys (from their
    environment variables), header values, URL credentials and sensitive query values."""
    out: list[str] = []
    for lane in lanes:
        try:
            key = lane.api_key()
        except Exception:
            key = None
        if key:
            out.append(key)
        for name, value in (getattr(lane, "headers", None) or {}).items():
            if isinstance(value, str):
                out.append(value)
                scheme, _, rest = value.partition(" ")  # "Bearer xyz": the token alone, too
                if rest and scheme.lower() in ("bearer", "basic", "token"):
                    out.append(rest.strip())
        out += url_secrets(getattr(lane, "url", "") or "")
    return out


PUBLIC = Redactor()
"""A redactor with no configured secrets: the generic patterns only."""
