"""Values that come back from the sandbox: decoded from their typed JSON and compared type-strictly.

The sandbox's bootstrap encodes every return value by its exact type
(``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": [[k, v], ...]}``, ``{"set": ...}``,
``{"bytes": HEX}``, ``{"bigint": "..."}``, ``{"float": "nan"}``; ``null``, booleans, numbers and strings as
themselves; anything else ``{"object": TYPE}``).  The JSON is untrusted: :func:`decode` accepts only
that shape (bounded depth and size) and turns it into plain Python values -- an object of an unknown type
becomes an :class:`Opaque` that equals nothing.  :func:`same` compares a decoded value with the expected
one from the task bank: types must match exactly (``True`` is not ``1``, a list is not a tuple), except
that an int and a float compare by value (``2 == 2.0``); dict keys and set members are matched the same
way, in any order.  Nothing here calls a method of a value the solution made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Opaque", "Undecodable", "decode", "same", "show", "difference"]

MAX_DEPTH = 40
MAX_ITEMS = 100_000


class Undecodable(ValueError):
    """The sandbox's JSON is not a value the bootstrap could have encoded."""


@dataclass(frozen=True)
class Opaque:
    """A value of a type the sandbox does not encode (its type name only); never equal to anything."""

    type_name: str

    def __eq__(self, other: object) -> bool:  # pragma: no cover - same() never calls it
        return False

    def __hash__(self) -> int:
        return hash(("Opaque", self.type_name))


_CONTAINERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}


def decode(tree: Any, _depth: int = 0, _count: list[int] | None = None) -> Any:
    """The Python value ``tree`` encodes; raises :class:`Undecodable` for anything else."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_ITEMS or _depth > MAX_DEPTH:
        raise Undecodable("value too large or nested too deeply")
    if tree is None or type(tree) in (bool, str, float):
        return tree
    if type(tree) is int:
        return tree
    if type(tree) is not dict or len(tree) != 1:
        raise Undecodable(f"unexpected {type(tree).__name__}")
    (tag, body), = tree.items()
    if tag in _CONTAINERS:
        if type(body) is not list:
            raise Undecodable(f"{tag} without items")
        items = [decode(x, _depth + 1, count) for x in body]
        if tag in ("set", "frozenset"):
            if not all(_hashable(x) for x in items):
                raise Undecodable("unhashable set member")
        return _CONTAINERS[tag](items)
    if tag == "dict":
        if type(body) is not list or not all(type(p) is list and len(p) == 2 for p in body):
            raise Undecodable("dict without [key, value] pairs")
        out: dict[Any, Any] = {}
        for k, v in body:
            key = decode(k, _depth + 1, count)
            if not _hashable(key) or key in out or any(same(key, old) for old in out):
                raise Undecodable("bad or repeated dict key")
            out[key] = decode(v, _depth + 1, count)
        return out
    if tag == "bytes" and type(body) is str:
        try:
            return bytes.fromhex(body)
        except ValueError:
            raise Undecodable("bad bytes") from None
    if tag == "bigint" and type(body) is str and len(body) <= 4000:
        try:
            return int(body)
        except ValueError:
            raise Undecodable("bad integer") from None
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "object" and type(body) is str:
        return Opaque(body[:80])
    raise Undecodable(f"unknown tag {str(tag)[:40]!r}")


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def same(got: Any, want: Any) -> bool:
    """Type-strict equality of a decoded value and an expected one (see the module docstring)."""
    tg, tw = type(got), type(want)
    if tg is Opaque or tw is Opaque:
        return False
    if tg in (int, float) and tw in (int, float):
        return got == want
    if tg is not tw:
        return False
    if tg in (list, tuple):
        return len(got) == len(want) and all(same(a, b) for a, b in zip(got, want))
    if tg in (set, frozenset):
        return len(got) == len(want) and all(any(same(a, b) for a in got) for b in want)
    if tg is dict:
        if len(got) != len(want):
            return False
        for wk, wv in want.items():
            match = [gk for gk in got if same(gk, wk)]
            if len(match) != 1 or not same(got[match[0]], wv):
                return False
        return True
    if tg in (type(None), bool, str, bytes):
        return got == want
    return False


def show(value: Any, limit: int = 80) -> str:
    """A short printable form of a decoded value (``repr``, cut with an ellipsis)."""
    text = f"<{value.type_name} object>" if type(value) is Opaque else repr(value)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def difference(got: Any, want: Any) -> str:
    """Where a decoded value first differs from the expected one: ``"[14] is 'Fizz', expected 'FizzBuzz'"``
    inside two sequences of the same type and length, else ``"returned GOT, expected WANT"``."""
    path = ""
    while type(got) is type(want) and type(got) in (list, tuple) and len(got) == len(want):
        i = next((i for i, (a, b) in enumerate(zip(got, want)) if not same(a, b)), None)
        if i is None:
            break
        path += f"[{i}]"
        got, want = got[i], want[i]
    if path:
        return f"returned a value whose {path} is {show(got)}, expected {show(want)}"
    return f"returned {show(got)}, expected {show(want)}"
