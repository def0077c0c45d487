"""The shipped qeval task bank (``tasks.toml`` beside this file) as :class:`Task` objects.

:func:`load_bank` parses and validates the file once (cached).  Every task has
an ``id``, a ``kind`` (code, json, math, format), the ``prompt`` the model
sees, its scoring spec, a ``reference`` reply that passes, and a ``wrong``
reply that fails -- given in the file, or derived here (math: the answer plus
one; json: the first expected value changed).
"""

from __future__ import annotations

import ast
import functools
import json
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Any

import msgspec

KINDS = ("code", "json", "math", "format")
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
FORMAT_TYPES = ("regex", "not_regex", "lines", "each_line", "words", "paragraphs", "starts_with", "ends_with",
                "contains", "not_contains", "max_chars")


class BankError(ValueError):
    """The task file is malformed; the message names the task and field."""


@dataclass(frozen=True)
class Case:
    """One hidden test of a code task: call the function on ``args`` and check the result in lanemon.

    ``args`` is the argument list as Python literals (``"(1, 5), (3, 8)"``); exactly one of ``expect`` (the
    return value, a literal), ``length`` (the length of the returned sequence) or ``raises`` (an exception
    type name) is set; ``unchanged``: the call must not modify its arguments.  Literals are parsed with
    :func:`ast.literal_eval` (never executed).
    """

    args: str
    expect_text: str | None = None
    expect: Any = None
    length: int | None = None
    raises: str | None = None
    unchanged: bool = False

    def call(self, function: str) -> str:
        return f"{function}({self.args})"


@dataclass(frozen=True)
class Task:
    id: str
    kind: str
    prompt: str
    reference: str
    wrong: str
    function: str | None = None  # code
    cases: tuple[Case, ...] = ()  # code
    expect: Any = None  # json (parsed)
    types: dict[str, str] = field(default_factory=dict)  # json
    exact_keys: bool = False  # json
    answer: Fraction | None = None  # math
    answer_text: str | None = None  # math, as written in the file
    constraints: tuple[Constraint, ...] = ()  # format


def _req(raw: dict, key: str, tid: str, kind: type = str) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        raise BankError(f"task {tid}: '{key}' must be a non-empty {kind.__name__}")
    return value


def parse_task(raw: dict) -> Task:
    tid = raw.get("id")
    if not isinstance(tid, str) or not tid:
        raise BankError(f"a task has no id: {raw!r:.80}")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise BankError(f"task {tid}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    prompt = _req(raw, "prompt", tid)
    reference = _req(raw, "reference", tid)
    wrong = raw.get("wrong")
    kw: dict[str, Any] = {}
    if kind == "code":
        kw["function"] = _req(raw, "function", tid)
        kw["cases"] = _parse_cases(raw.get("cases"), tid)
        if wrong is None:
            raise BankError(f"task {tid}: code tasks need an explicit 'wrong' reply")
    elif kind == "json":
        try:
            kw["expect"] = json.loads(_req(raw, "expect", tid))
        except json.JSONDecodeError as exc:
            raise BankError(f"task {tid}: 'expect' is not valid JSON: {exc}") from None
        types = raw.get("types") or {}
        bad = {k: v for k, v in types.items() if v not in JSON_TYPES}
        if bad:
            raise BankError(f"task {tid}: unknown JSON types {bad}")
        kw["types"] = dict(types)
        kw["exact_keys"] = bool(raw.get("exact_keys", False))
        if wrong is None:
            wrong = _derive_json_wrong(kw["expect"])
    elif kind == "math":
        text = str(_req(raw, "answer", tid))
        try:
            kw["answer"] = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise BankError(f"task {tid}: answer {text!r} is not an exact number") from None
        kw["answer_text"] = text
        if wrong is None:
            wrong = f"Working it through step by step.\nAnswer: {_fmt_fraction(kw['answer'] + 1)}"
    else:
        cons = raw.get("constraints")
        if not isinstance(cons, list) or not cons:
            raise BankError(f"task {tid}: format tasks need a non-empty 'constraints' list")
        kw["constraints"] = tuple(_constraint(c, tid) for c in cons)
        if wrong is None:
            raise BankError(f"task {tid}: format tasks need an explicit 'wrong' reply")
    return Task(id=tid, kind=kind, prompt=prompt, reference=reference, wrong=wrong, **kw)


class Constraint(msgspec.Struct, frozen=True):
    """One rule a format reply must meet (``[[tasks.constraints]]``): its ``type`` (:data:`FORMAT_TYPES`) and what
    that type reads: ``regex`` (regex, not_regex, each_line), ``text`` (starts_with, ends_with, contains,
    not_contains), ``value`` (max_chars), ``exact``/``min``/``max`` (lines, words, paragraphs)."""

    type: str
    regex: str | None = None
    text: str | None = None
    value: int | None = None
    exact: int | None = None
    min: int | None = None
    max: int | None = None
    ignore_case: bool = False


_NEEDS = {"regex": "regex", "not_regex": "regex", "each_line": "regex", "starts_with": "text", "ends_with": "text",
          "contains": "text", "not_contains": "text", "max_chars": "value"}


def _constraint(raw: Any, tid: str) -> Constraint:
    """A bank's constraint checked into its Struct: a known type, fields of the right types, the field its type
    reads present; BankError naming it otherwise."""
    try:
        c = msgspec.convert(raw, Constraint)
    except msgspec.ValidationError:
        raise BankError(f"task {tid}: bad constraint {raw!r}") from None
    if c.type not in FORMAT_TYPES or (c.type in _NEEDS and getattr(c, _NEEDS[c.type]) is None):
        raise BankError(f"task {tid}: bad constraint {raw!r}")
    return c


def _literal(text: Any, tid: str, what: str) -> Any:
    if not isinstance(text, str):
        raise BankError(f"task {tid}: {what} must be a string holding a Python literal")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise BankError(f"task {tid}: {what} {text!r} is not a Python literal") from None


def _parse_cases(raw: Any, tid: str) -> tuple[Case, ...]:
    if not isinstance(raw, list) or not raw:
        raise BankError(f"task {tid}: code tasks need a non-empty 'cases' list")
    out = []
    for c in raw:
        if not isinstance(c, dict) or not isinstance(c.get("args"), str):
            raise BankError(f"task {tid}: bad case {c!r}: needs 'args' (a string)")
        unknown = set(c) - {"args", "expect", "len", "raises", "unchanged"}
        if unknown:
            raise BankError(f"task {tid}: case {c['args']!r}: unknown field(s) {', '.join(sorted(unknown))}")
        if sum(k in c for k in ("expect", "len", "raises")) != 1:
            raise BankError(f"task {tid}: case {c['args']!r}: give exactly one of expect, len, raises")
        _literal(f"({c['args']},)" if c["args"].strip() else "()", tid, f"case args {c['args']!r}:")
        case = Case(args=c["args"], unchanged=bool(c.get("unchanged", False)))
        if "expect" in c:
            case = Case(args=c["args"], expect_text=c["expect"], expect=_literal(c["expect"], tid, "expect"),
                        unchanged=case.unchanged)
        elif "len" in c:
            if not isinstance(c["len"], int) or isinstance(c["len"], bool) or c["len"] < 0:
                raise BankError(f"task {tid}: case {c['args']!r}: len must be a non-negative integer")
            case = Case(args=c["args"], length=c["len"], unchanged=case.unchanged)
        else:
            if not isinstance(c["raises"], str) or not c["raises"].isidentifier():
                raise BankError(f"task {tid}: case {c['args']!r}: raises must be an exception name")
            case = Case(args=c["args"], raises=c["raises"], unchanged=case.unchanged)
        out.append(case)
    return tuple(out)


def _fmt_fraction(f: Fraction) -> str:
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _mutate(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value + 0.01, 6)
    if isinstance(value, str):
        return value.upper() if value != value.upper() else value + "x"
    if isinstance(value, list):
        return value[:-1] if value else [0]
    if isinstance(value, dict):
        return {k: (_mutate(v) if i == 0 else v) for i, (k, v) in enumerate(value.items())} or {"x": 1}
    return 0  # null


def _derive_json_wrong(expect: Any) -> str:
    return json.dumps(_mutate(expect), ensure_ascii=False)


@functools.lru_cache(maxsize=1)
def load_bank() -> dict[str, Task]:
    """All shipped tasks by id, in file order."""
    text = resources.files(__package__).joinpath("tasks.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    out: dict[str, Task] = {}
    for raw in data.get("task", []):
        task = parse_task(raw)
        if task.id in out:
            raise BankError(f"duplicate task id {task.id}")
        out[task.id] = task
    return out


def select_tasks(spec: str | None, bank: dict[str, Task] | None = None) -> list[Task]:
    """Tasks named by ``spec`` (comma-separated ids and/or kinds; None or "" = all), in bank order.

    Raises :class:`KeyError` naming the unknown entries.
    """
    bank = bank if bank is not None else load_bank()
    if not spec or not spec.strip():
        return list(bank.values())
    items = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in items if s not in bank and s not in KINDS]
    if unknown:
        raise KeyError(", ".join(unknown))
    wanted = set(items)
    return [t for t in bank.values() if t.id in wanted or t.kind in wanted]
