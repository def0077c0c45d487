"""The simulator's needle-in-a-haystack rule (documented in docs/SIMULATOR.md).

A prompt is a *needle question* when its last 2,000 characters ask
``What is the pass key`` (case-insensitive).  The reply is then
``"The pass key is KEY."`` where KEY is the first ``pass key is KEY`` in the
prompt (KEY: 4-64 letters/digits).  Without such a sentence the lane answers
that it found none.  A lane started with ``needle_miss=True`` answers a wrong
key of the same length instead (every character shifted by one within its
class: ``A->B``, ``z->a``, ``9->0``), so lanemon's "not found" path can be
tested.  Pure functions; no IO.
"""

from __future__ import annotations

import re

QUESTION_RE = re.compile(r"what is the (?:secret )?pass ?key", re.IGNORECASE)
NEEDLE_RE = re.compile(r"pass ?key is ([A-Za-z0-9]{4,64})\b", re.IGNORECASE)
QUESTION_WINDOW = 2000
NOT_FOUND_REPLY = "I could not find a pass key in the text."


def wrong_key(key: str) -> str:
    """A different key of the same length (each character shifted by one in its class)."""
    out = []
    for ch in key:
        if ch.isdigit():
            out.append(str((int(ch) + 1) % 10))
        elif "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 + 1) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 + 1) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)


def needle_reply(prompt: str, miss: bool = False) -> str | None:
    """The reply to a needle question, or None when ``prompt`` is not one."""
    if not QUESTION_RE.search(prompt[-QUESTION_WINDOW:]):
        return None
    m = NEEDLE_RE.search(prompt)
    if m is None:
        return NOT_FOUND_REPLY
    key = m.group(1)
    return f"The pass key is {wrong_key(key) if miss else key}."
