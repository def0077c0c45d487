"""Benchmark prompts: the shipped prompt set, user prompt sets, filler text.

* :func:`load_prompt_set` reads ``data/prompts-v1.toml`` (the shipped set:
  eight categories x five prompts) or a user file of the same format
  (docs/BENCH.md).  Any problem is one line naming the file, the prompt and the
  field, raised as :class:`PromptSetError` (a ``ValueError``; the CLI maps it
  to exit code 2).
* :func:`filler_text` builds readable filler of a requested size from
  ``data/filler.txt``; :func:`prefill_prompt` and :func:`needle_prompt` wrap it
  with a random nonce first (so no prefix cache can serve it) and an
  instruction last.  Token lengths are calibrated against each lane's own
  ``usage.prompt_tokens`` by the caller (a lane's tokenizer is not ours):
  :func:`usage_tokens_per_char` turns one answer's usage into a ratio (or None when
  the usage is not possible), :func:`chars_for_tokens` a target token count into characters.

Pure: no network, no Textual.
"""

from __future__ import annotations

import random
import re
import secrets
import string
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lanemon.config import MAX_NESTING, ConfigError, check_nesting, unreadable
from lanemon.measure.bounds import TOKENS_PER_CHAR, number

MAX_PROMPT_SET_BYTES = 64 << 20
"""A prompt-set file larger than this (64 MiB: a hundred 300K-token prompts) is refused unread."""

SHIPPED_SET = "prompts-v1.toml"
CATEGORIES = ("coding", "prose", "reasoning", "narrative", "summarization", "extraction", "translation", "math")
DEFAULT_MAX_TOKENS = 256
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_CAT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_PROMPT_KEYS = {"id", "category", "max_tokens", "text"}
_SET_KEYS = {"name", "version", "description", "max_tokens"}


class PromptSetError(ValueError):
    """A prompt set file is missing, unreadable or invalid (one-line message)."""


@dataclass(frozen=True, slots=True)
class Prompt:
    id: str
    category: str
    max_tokens: int
    text: str


@dataclass(frozen=True)
class PromptSet:
    name: str
    version: str
    prompts: tuple[Prompt, ...]
    source: str = SHIPPED_SET

    @property
    def categories(self) -> list[str]:
        """Categories in order of first appearance."""
        out: list[str] = []
        for p in self.prompts:
            if p.category not in out:
                out.append(p.category)
        return out

    def by_category(self) -> dict[str, list[Prompt]]:
        out: dict[str, list[Prompt]] = {c: [] for c in self.categories}
        for p in self.prompts:
            out[p.category].append(p)
        return out

    def select(self, categories: list[str] | None) -> "PromptSet":
        """The prompts of ``categories`` (None: all); ValueError naming an unknown one."""
        if not categories:
            return self
        known = self.categories
        unknown = [c for c in categories if c not in known]
        if unknown:
            raise PromptSetError(f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                                 f"(this prompt set has: {', '.join(known)})")
        keep = [p for c in categories for p in self.prompts if p.category == c]
        return PromptSet(self.name, self.version, tuple(keep), self.source)

    def interleaved(self) -> list[Prompt]:
        """Round-robin over categories: coding-01, prose-01, ..., math-01, coding-02, ...

        Any run of ``len(categories)`` consecutive prompts covers every category
        once (while every category still has prompts left).
        """
        groups = list(self.by_category().values())
        out: list[Prompt] = []
        for i in range(max((len(g) for g in groups), default=0)):
            out.extend(g[i] for g in groups if i < len(g))
        return out

    def label(self) -> str:
        return f"{self.name} v{self.version}"


def _fail(source: str, where: str, what: str) -> PromptSetError:
    return PromptSetError(f"prompt set {source}: {where}: {what}" if where else f"prompt set {source}: {what}")


def parse_prompt_set(text: str, source: str) -> PromptSet:
    """Parse and validate the TOML text of a prompt set."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, "", f"not valid TOML ({exc})") from None
    except RecursionError:
        raise _fail(source, "", f"nested too deeply (at most {MAX_NESTING} tables/arrays)") from None
    try:
        check_nesting(data, "", depth=MAX_NESTING, finite=False)
    except ConfigError:
        raise _fail(source, "", f"nested too deeply (at most {MAX_NESTING} tables/arrays)") from None
    unknown_top = set(data) - {"set", "prompt"}
    if unknown_top:
        raise _fail(source, "", f"unknown table '{sorted(unknown_top)[0]}' (expected [set] and [[prompt]])")
    head = data.get("set", {})
    if not isinstance(head, dict):
        raise _fail(source, "[set]", "must be a table")
    bad = set(head) - _SET_KEYS
    if bad:
        raise _fail(source, "[set]", f"unknown field '{sorted(bad)[0]}'")
    name = head.get("name", Path(source).stem)
    version = head.get("version", "1")
    for key, value in (("name", name), ("version", version)):
        if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value).strip() == "":
            raise _fail(source, "[set]", f"'{key}' must be a non-empty string")
    default_max = head.get("max_tokens", DEFAULT_MAX_TOKENS)
    if isinstance(default_max, bool) or not isinstance(default_max, int) or default_max < 1:
        raise _fail(source, "[set]", "'max_tokens' must be a positive integer")
    items = data.get("prompt")
    if items is None:
        raise _fail(source, "", "no [[prompt]] tables")
    if not isinstance(items, list) or not items:
        raise _fail(source, "", "'prompt' must be a non-empty array of tables ([[prompt]])")
    prompts: list[Prompt] = []
    seen: set[str] = set()
    for i, item in enumerate(items, 1):
        where = f"prompt {i}"
        if not isinstance(item, dict):
            raise _fail(source, where, "must be a table")
        pid = item.get("id")
        if isinstance(pid, str):
            where = f"prompt {i} ({pid})"
        bad = set(item) - _PROMPT_KEYS
        if bad:
            raise _fail(source, where, f"unknown field '{sorted(bad)[0]}' (fields: id, category, max_tokens, text)")
        for key in ("id", "category", "text"):
            if key not in item:
                raise _fail(source, where, f"missing field '{key}'")
        if not isinstance(pid, str) or not _ID_RE.match(pid):
            raise _fail(source, where, "'id' must be a string of letters, digits, '-', '_' or '.'")
        if pid in seen:
            raise _fail(source, where, f"duplicate id '{pid}'")
        seen.add(pid)
        cat = item["category"]
        if not isinstance(cat, str) or not _CAT_RE.match(cat):
            raise _fail(source, where, "'category' must be a lower-case word like 'coding'")
        body = item["text"]
        if not isinstance(body, str) or not body.strip():
            raise _fail(source, where, "'text' must be a non-empty string")
        mt = item.get("max_tokens", default_max)
        if isinstance(mt, bool) or not isinstance(mt, int) or mt < 1:
            raise _fail(source, where, "'max_tokens' must be a positive integer")
        prompts.append(Prompt(pid, cat, mt, body))
    return PromptSet(str(name), str(version), tuple(prompts), source)


def load_prompt_set(path: str | Path | None = None) -> PromptSet:
    """The shipped set (``path=None``) or a user file of the same format."""
    if path is None:
        text = resources.files("lanemon.workloads").joinpath("data", SHIPPED_SET).read_text("utf-8")
        return parse_prompt_set(text, SHIPPED_SET)
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_PROMPT_SET_BYTES + 1)
        if len(raw) > MAX_PROMPT_SET_BYTES:
            raise PromptSetError(f"prompt set {p}: larger than {MAX_PROMPT_SET_BYTES >> 20} MiB; not read")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptSetError(f"prompt set {p}: {unreadable(exc)}") from None
    return parse_prompt_set(text, str(p))


# ---------------------------------------------------------------------------
# Filler text and long prompts
# ---------------------------------------------------------------------------


@lru_cache(maxsize=1)
def filler_paragraphs() -> tuple[str, ...]:
    """The shipped filler paragraphs (``data/filler.txt``; '#' lines are comments)."""
    raw = resources.files("lanemon.workloads").joinpath("data", "filler.txt").read_text("utf-8")
    lines = [ln for ln in raw.splitlines() if not ln.startswith("#")]
    paras = [" ".join(block.split()) for block in "\n".join(lines).split("\n\n")]
    return tuple(p for p in paras if p)


def filler_text(n_chars: int, rng: random.Random) -> str:
    """About ``n_chars`` characters of readable prose, paragraphs separated by blank lines.

    Paragraphs are drawn in a shuffled order (reshuffled every pass) and
    numbered, so long fillers do not repeat one block verbatim; the text is
    cut at a word boundary at or below ``n_chars``.
    """
    if n_chars <= 0:
        return ""
    paras = list(filler_paragraphs())
    parts: list[str] = []
    size = 0
    n = 0
    while size < n_chars:
        rng.shuffle(paras)
        for para in paras:
            n += 1
            piece = f"({n}) {para}"
            parts.append(piece)
            size += len(piece) + 2
            if size >= n_chars:
                break
    text = "\n\n".join(parts)
    if len(text) > n_chars:
        cut = text.rfind(" ", 0, n_chars)
        text = text[: cut if cut > 0 else n_chars].rstrip()
    return text


def new_nonce(rng: random.Random | None = None) -> str:
    """A random 16-hex-digit tag that starts every long prompt (defeats prefix caches)."""
    if rng is None:
        return secrets.token_hex(8)
    return f"{rng.getrandbits(64):016x}"


def new_key(rng: random.Random | None = None, length: int = 8) -> str:
    """A random key of letters and digits for the needle test."""
    alphabet = string.ascii_uppercase + string.digits
    if rng is None:
        return "".join(secrets.choice(alphabet) for _ in range(length))
    return "".join(rng.choice(alphabet) for _ in range(length))


PREFILL_HEAD = "Reference {nonce}. The notes below are background reading.\n\n"
PREFILL_TAIL = "\n\nReply with the single word: ok."
NEEDLE_HEAD = ("Reference {nonce}. Below is a long collection of notes. Somewhere in them there is a "
               "pass key; read everything and remember it.\n\n")
NEEDLE_SENTENCE = "The pass key is {key}. Remember it. {key} is the pass key."
NEEDLE_TAIL = "\n\nWhat is the pass key? Answer with the pass key only."

#: Tokens per character assumed before a lane has been calibrated (~4 chars/token, typical BPE).
DEFAULT_TOKENS_PER_CHAR = 0.25


def usage_tokens_per_char(prompt_tokens: object, chars: int) -> float | None:
    """Tokens per character a lane's ``usage.prompt_tokens`` shows for a prompt of ``chars`` characters, or None
    when that is not a possible ratio (:data:`lanemon.measure.bounds.TOKENS_PER_CHAR`): a lane that says 5 tokens
    for 8,000 characters would have the caller build a prompt of millions of characters for 2,000 tokens."""
    pt = number(prompt_tokens)
    if not pt or chars <= 0:
        return None
    ratio = pt / chars
    lo, hi = TOKENS_PER_CHAR
    return ratio if lo <= ratio <= hi else None


def chars_for_tokens(tokens: int, tokens_per_char: float) -> int:
    """Characters of prompt text expected to give ``tokens`` tokens on a lane."""
    if tokens_per_char <= 0:
        tokens_per_char = DEFAULT_TOKENS_PER_CHAR
    return max(1, round(tokens / tokens_per_char))


def prefill_prompt(total_chars: int, rng: random.Random, nonce: str | None = None) -> str:
    """A prompt of about ``total_chars`` characters: nonce first, filler, a one-word instruction last."""
    head = PREFILL_HEAD.format(nonce=nonce or new_nonce(rng))
    body = filler_text(max(0, total_chars - len(head) - len(PREFILL_TAIL)), rng)
    return head + body + PREFILL_TAIL


def needle_prompt(total_chars: int, key: str, depth: float, rng: random.Random,
                  nonce: str | None = None) -> tuple[str, float]:
    """A prompt of about ``total_chars`` characters with the key sentence at ``depth`` (0..1).

    The sentence goes in at the paragraph boundary nearest to ``depth`` of the
    filler; returns ``(prompt, actual depth)``.
    """
    head = NEEDLE_HEAD.format(nonce=nonce or new_nonce(rng))
    sentence = NEEDLE_SENTENCE.format(key=key)
    room = max(0, total_chars - len(head) - len(NEEDLE_TAIL) - len(sentence) - 2)
    filler = filler_text(room, rng)
    depth = min(1.0, max(0.0, depth))
    target = int(len(filler) * depth)
    cuts = [0] + [m.end() for m in re.finditer(r"\n\n", filler)] + [len(filler)]
    pos = min(cuts, key=lambda c: abs(c - target))
    if pos == 0:
        body = sentence + ("\n\n" + filler if filler else "")
    elif pos >= len(filler):
        body = filler + "\n\n" + sentence
    else:
        body = filler[:pos] + sentence + "\n\n" + filler[pos:]
    actual = pos / len(filler) if filler else 0.0
    return head + body + NEEDLE_TAIL, round(actual, 4)
