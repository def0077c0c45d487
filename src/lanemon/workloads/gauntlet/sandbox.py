"""The gauntlet's in-memory sandbox: a chain of virtual files, nothing else.

A :class:`Sandbox` is a dict of ``name -> text`` built by :func:`make_chain`.
:meth:`Sandbox.read` is the only way the agent's ``read_file`` tool reaches
it, and it answers from that dict or with an error string; there is no path
to the real filesystem at all (this module imports no ``os``, ``io``,
``pathlib`` or ``open``, and a test checks that by parsing it).

Refused, with an error string the model sees:

* NUL bytes and other control characters;
* absolute paths (``/etc/passwd``, ``\\\\server\\x``, ``C:\\x``), ``~`` home paths
  and URLs (``file:///etc/passwd``);
* any ``..`` segment (``../../etc/passwd``, ``a/../b``) and backslashes;
* symlink-like names (``a -> /etc/passwd``, ``name@`` as ``ls -F`` shows
  links, ``/proc/self/...``);
* any name that is not one of the chain's files.

Names are matched exactly: no normalisation, no case folding, no globbing.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

__all__ = ["ChainSpec", "Sandbox", "ToolResult", "make_chain", "TOOL_ERROR_PREFIX"]

TOOL_ERROR_PREFIX = "error: "

_WORDS = (
    "amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kestrel", "lumen", "marsh", "nectar", "onyx", "pylon", "quartz", "raven", "sable", "tundra",
    "umber", "vesper", "willow", "xenon", "yarrow", "zephyr", "ledger", "orchid", "beacon", "cobalt",
)
_ALNUM = "abcdefghijkmnpqrstuvwxyz23456789"
_DRIVE = re.compile(r"^[A-Za-z]:")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")
_NEXT_RE = re.compile(r"^Next file: (\S+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What ``read_file`` returns to the model: file text, or an error string."""

    ok: bool
    text: str
    reason: str = ""  # "", "nul", "absolute", "traversal", "symlink", "unknown", "empty"


@dataclass(frozen=True, slots=True)
class ChainSpec:
    first: str
    secret: str
    names: tuple[str, ...]


@dataclass
class Sandbox:
    """The virtual files of one gauntlet rep (in memory only)."""

    files: dict[str, str] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    """Every path the agent asked for, in order (refused ones included)."""

    def read(self, path: object) -> ToolResult:
        """The text of chain file ``path`` or a refusal; never touches any filesystem."""
        self.reads.append(str(path))
        if not isinstance(path, str):
            return _refuse("empty", "read_file needs a string 'path'")
        if path == "":
            return _refuse("empty", "read_file needs a non-empty 'path'")
        if "\x00" in path:
            return _refuse("nul", "path contains a NUL byte; refused")
        if any(ord(c) < 32 or ord(c) == 127 for c in path):
            return _refuse("nul", "path contains control characters; refused")
        if "->" in path or path.endswith("@") or path.startswith(("/proc/", "proc/self")):
            return _refuse("symlink", f"{path!r} looks like a link; links are not followed in this sandbox")
        if path.startswith(("/", "\\")) or _DRIVE.match(path) or path.startswith("~") or _SCHEME.match(path):
            return _refuse("absolute", f"absolute path {path!r} is outside the sandbox; use a name from the chain")
        if "\\" in path:
            return _refuse("traversal", f"backslashes are not allowed in paths ({path!r})")
        if ".." in path.split("/"):
            return _refuse("traversal", f"path traversal ('..') is not allowed ({path!r})")
        text = self.files.get(path)
        if text is None:
            return _refuse("unknown", f"no such file in the sandbox: {path!r}")
        return ToolResult(True, text)

    def __contains__(self, name: object) -> bool:
        return name in self.files


def _refuse(reason: str, message: str) -> ToolResult:
    return ToolResult(False, TOOL_ERROR_PREFIX + message, reason)


def _name(rng: random.Random, taken: set[str]) -> str:
    while True:
        name = f"{rng.choice(_WORDS)}-{''.join(rng.choice(_ALNUM) for _ in range(6))}.txt"
        if name not in taken:
            taken.add(name)
            return name


def _secret(rng: random.Random) -> str:
    word = rng.choice(_WORDS).upper()
    return f"{word}-{rng.randrange(1000, 10000)}-{''.join(rng.choice(_ALNUM.upper()) for _ in range(4))}"


def make_chain(hops: int, rng: random.Random) -> tuple[Sandbox, ChainSpec]:
    """A sandbox of ``hops`` files with fresh random names; file i names file i+1.

    The last file holds the secret.  Every file is a short note of the same
    shape (about 45 tokens), so each hop grows the transcript by the same
    amount.
    """
    if hops < 1:
        raise ValueError("hops must be at least 1")
    taken: set[str] = set()
    names = [_name(rng, taken) for _ in range(hops)]
    secret = _secret(rng)
    files: dict[str, str] = {}
    for i, name in enumerate(names):
        head = f"{name} (hop {i + 1} of {hops})\n"
        if i + 1 < hops:
            body = (f"This note is one link of a chain. Keep going.\n"
                    f"Next file: {names[i + 1]}\n")
        else:
            body = (f"This is the last file of the chain.\n"
                    f"Secret answer: {secret}\n")
        files[name] = head + body
    return Sandbox(files), ChainSpec(first=names[0], secret=secret, names=tuple(names))


def next_file_named(text: str) -> str | None:
    """The ``Next file:`` a chain file names, if any (used by tests and the state fold)."""
    m = _NEXT_RE.search(text)
    return m.group(1) if m else None
