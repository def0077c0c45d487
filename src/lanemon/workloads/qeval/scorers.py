"""Scorers: a task and a reply text in, ``(passed, reason)`` out.

* math   -- the answer is extracted from prose (``\\boxed{}`` first, then the
  last "answer: X" / "answer is X", then the last number), parsed with
  thousands separators, decimals, fractions and ``\\frac{a}{b}``, and compared
  with the task's answer as exact rationals (``Fraction``): 0.75 == 3/4.
* json   -- the JSON value is taken from the whole reply, else from a code
  fence, else from the first ``{``/``[`` to the last ``}``/``]``; then keys,
  types and values are checked (booleans never equal numbers).
* format -- every constraint of the task must hold on the stripped reply.
* code   -- the code block defining the function runs in the OS sandbox
  (:mod:`lanemon.workloads.qeval.sandbox`), never in-process; the sandbox
  calls the function on each hidden case's arguments and returns the outputs
  as typed JSON; they are compared with the expected values here, in
  lanemon's process, type-strictly (:mod:`lanemon.workloads.qeval.values`).
  Raises :class:`~lanemon.workloads.qeval.sandbox.SandboxUnavailable` when no
  sandbox works (the caller counts the task as skipped).

Reasons are short, human-readable and stable, e.g. ``"expected 24, got 22"``,
``"invalid JSON: Invalid \\escape at line 1 column 35"``,
``"tests failed (1 of 6): f((1, 3), (3, 5)) returned None, expected (3, 3)"``.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from msgspec import UNSET

from .bank import Case, Constraint, Task
from .sandbox import CallResult, SandboxCall, SandboxLimits, SandboxUnavailable, raised_text, run_function
from .values import Undecodable, decode, difference, same, show

__all__ = ["score", "score_math", "score_json", "score_format", "score_code", "check_case", "extract_number",
           "parse_number", "extract_code", "extract_json", "SandboxUnavailable"]

# ----------------------------------------------------------------------------- math

_NUM_CORE = r"[-\u2212]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?![\w])"
_NUM = r"(?<![\w.])" + _NUM_CORE
_NUM_RE = re.compile(_NUM)
_ANSWER_RE = re.compile(r"answer\b[\s*:=]*(?:is\b)?[\s*:=]*(" + _NUM_CORE + ")", re.IGNORECASE)


def parse_number(text: str) -> Fraction | None:
    """``"6,912"``, ``"-14"``, ``"$1,102.50"``, ``"7/8"``, ``"3.75"`` -> exact Fraction (None if not a number)."""
    s = text.strip().replace("\u2212", "-").replace("$", "").replace(" ", "")
    s = s.rstrip("%")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    try:
        return Fraction(s)
    except (ValueError, ZeroDivisionError):
        return None


def _boxed_contents(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"\\boxed\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
            i += 1
        if depth == 0:
            out.append(text[m.end():i - 1])
    return out


def _latex_to_plain(s: str) -> str:
    s = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", s)
    s = re.sub(r"\\text\s*\{[^{}]*\}", "", s)
    s = s.replace("\\,", "").replace("\\!", "").replace("\\ ", "").replace("\\$", "$").replace("\\%", "%")
    s = re.sub(r"\((-?[\d.,]+)\)/\((-?[\d.,]+)\)", r"\1/\2", s)
    return s.replace("{", "").replace("}", "")


def extract_number(text: str) -> Fraction | None:
    """The answer a reply gives: last ``\\boxed{}``, else last "answer: X", else the last number."""
    for content in reversed(_boxed_contents(text)):
        plain = _latex_to_plain(content)
        nums = _NUM_RE.findall(plain) or re.findall(r"-?\d+(?:\.\d+)?(?:/\d+)?", plain)
        for n in reversed(nums):
            value = parse_number(n)
            if value is not None:
                return value
    answers = _ANSWER_RE.findall(text)
    for n in reversed(answers):
        value = parse_number(n)
        if value is not None:
            return value
    for n in reversed(_NUM_RE.findall(text)):
        value = parse_number(n)
        if value is not None:
            return value
    return None


def _show(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    dec = float(f)
    return f"{f.numerator}/{f.denominator}" if Fraction(repr(dec)) != f else f"{dec:g}"


def score_math(task: Task, text: str) -> tuple[bool, str]:
    value = extract_number(text)
    if value is None:
        return False, "no number found in the reply"
    if value == task.answer:
        return True, "passed"
    return False, f"expected {task.answer_text or _show(task.answer)}, got {_show(value)}"


# ----------------------------------------------------------------------------- json

_FENCE_RE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_json(text: str) -> tuple[Any, str | None]:
    """(value, None) or (None, error message) -- the reply's JSON value."""
    candidates = [text.strip()]
    for m in _FENCE_RE.finditer(text):
        candidates.append(m.group(2).strip())
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        s = min(starts)
        e = max(text.rfind("}"), text.rfind("]"))
        if e > s:
            candidates.append(text[s:e + 1])
    first_error = None
    for cand in candidates:
        if not cand:
            continue
        try:
            return json.loads(cand), None
        except json.JSONDecodeError as exc:
            if first_error is None:
                first_error = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    return None, first_error or "invalid JSON: the reply is empty"


# JSON type names in checking order: bool before int (True is an int), None first.
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"),
    (str, "string"), (list, "array"), (dict, "object"),
)


def _type_name(v: Any) -> str:
    return next((name for cls, name in _JSON_TYPES if isinstance(v, cls)), type(v).__name__)


def _is_type(v: Any, want: str) -> bool:
    got = _type_name(v)
    return got == want or (want == "number" and got == "integer")


def _equal(a: Any, b: Any) -> bool:
    """Deep JSON equality; booleans are not numbers, 1 == 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _short(v: Any, n: int = 60) -> str:
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 1] + "…"


def score_json(task: Task, text: str) -> tuple[bool, str]:
    value, error = extract_json(text)
    if error is not None:
        return False, error
    expect = task.expect
    if isinstance(expect, dict):
        if not isinstance(value, dict):
            return False, f"expected a JSON object, got {_type_name(value)}"
        for key, want in expect.items():
            if key not in value:
                return False, f"missing key {key!r}"
            typ = task.types.get(key)
            if typ and not _is_type(value[key], typ):
                return False, f"key {key!r}: expected {typ}, got {_type_name(value[key])}"
            if not _equal(value[key], want):
                return False, f"key {key!r}: expected {_short(want)}, got {_short(value[key])}"
        if task.exact_keys:
            extra = [k for k in value if k not in expect]
            if extra:
                return False, "unexpected key(s) " + ", ".join(repr(k) for k in extra)
        return True, "passed"
    if not _equal(value, expect):
        return False, f"expected {_short(expect)}, got {_short(value)}"
    return True, "passed"


# ----------------------------------------------------------------------------- format


def _count_check(n: int, c: Constraint, what: str) -> str | None:
    if c.exact is not None and n != c.exact:
        return f"{n} {what}, expected exactly {c.exact}"
    if c.min is not None and n < c.min:
        return f"{n} {what}, expected at least {c.min}"
    if c.max is not None and n > c.max:
        return f"{n} {what}, expected at most {c.max}"
    return None


def _check(c: Constraint, text: str) -> str | None:
    typ = c.type
    flags = re.IGNORECASE if c.ignore_case else 0
    lines = text.split("\n")
    if typ == "regex":
        if not re.fullmatch(c.regex, text, flags):
            return f"does not match the required pattern /{c.regex}/"
    elif typ == "not_regex":
        if re.search(c.regex, text, flags):
            return f"contains the forbidden pattern /{c.regex}/"
    elif typ == "lines":
        return _count_check(len(lines), c, "lines")
    elif typ == "each_line":
        for i, line in enumerate(lines, 1):
            if not re.fullmatch(c.regex, line, flags):
                return f"line {i} does not match /{c.regex}/: {line[:60]!r}"
    elif typ == "words":
        return _count_check(len(text.split()), c, "words")
    elif typ == "paragraphs":
        paras = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        return _count_check(len(paras), c, "paragraphs")
    elif typ in ("starts_with", "ends_with", "contains", "not_contains"):
        hay, needle = (text.lower(), c.text.lower()) if flags else (text, c.text)
        ok = {"starts_with": hay.startswith, "ends_with": hay.endswith,
              "contains": lambda s: s in hay, "not_contains": lambda s: s not in hay}[typ](needle)
        if not ok:
            verb = {"starts_with": "does not start with", "ends_with": "does not end with",
                    "contains": "does not contain", "not_contains": "contains"}[typ]
            return f"{verb} {c.text!r}"
    elif typ == "max_chars":
        if len(text) > c.value:
            return f"{len(text)} characters, expected at most {c.value}"
    return None


def score_format(task: Task, text: str) -> tuple[bool, str]:
    text = text.replace("\r\n", "\n").strip()
    for c in task.constraints:
        problem = _check(c, text)
        if problem:
            return False, problem
    return True, "passed"


# ----------------------------------------------------------------------------- code


def extract_code(text: str, function: str) -> str | None:
    """The code block that defines ``function`` (else the first Python block; else bare code)."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE_RE.finditer(text)]
    pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(function)}\s*\(", re.MULTILINE)
    for _, body in blocks:
        if pattern.search(body):
            return body
    for lang, body in blocks:
        if lang in ("python", "py", "python3", ""):
            return body
    if pattern.search(text):
        return text
    return None


def check_case(case: Case, function: str, result: CallResult | None,
               limits: SandboxLimits | None = None) -> str | None:
    """None when the sandbox's ``result`` for ``case`` is right, else what was wrong (one line)."""
    call = case.call(function)
    if result is None:
        return f"{call}: no result"
    if result.raised is not UNSET:
        if case.raises is not None and case.raises in result.raised:
            return _check_args(case, call, result)
        want = f"expected {case.raises}" if case.raises else f"expected {_expected(case)}"
        return f"{call} raised {raised_text(result, limits)}, {want}"
    if result.value is UNSET:
        return f"{call}: no result"
    try:
        got = decode(result.value)
    except (Undecodable, RecursionError) as exc:
        return f"{call} returned an unreadable value ({exc})"
    if case.raises is not None:
        return f"{call} returned {show(got)}, expected it to raise {case.raises}"
    if case.length is not None:
        if type(got) not in (list, tuple, str):
            return f"{call} returned {show(got)}, expected a sequence of length {case.length}"
        if len(got) != case.length:
            return f"{call} returned {len(got)} items, expected {case.length}"
    elif not same(got, case.expect):
        return f"{call} {difference(got, case.expect)}"
    return _check_args(case, call, result)


def _expected(case: Case) -> str:
    return f"length {case.length}" if case.length is not None else show(case.expect)


def _check_args(case: Case, call: str, result: CallResult) -> str | None:
    if not case.unchanged:
        return None
    import ast

    before = ast.literal_eval(f"({case.args},)") if case.args.strip() else ()
    try:
        after = decode(None if result.args is UNSET else result.args)
    except (Undecodable, RecursionError):
        return f"{call}: arguments unreadable after the call"
    if not same(after, before):
        shown = show(after[0]) if type(after) is tuple and len(after) == 1 else show(after)
        return f"{call} changed its arguments to {shown}"
    return None


def score_code(task: Task, text: str, limits: SandboxLimits | None = None) -> tuple[bool, str]:
    """Run the reply's code in the sandbox on every case; raises SandboxUnavailable when there is none."""
    assert task.function is not None and task.cases
    code = extract_code(text, task.function)
    if code is None:
        return False, f"no code block defining {task.function}() found"
    calls = [SandboxCall(c.args, c.unchanged) for c in task.cases]
    run = run_function(code, task.function, calls, limits)
    if run.status == "missing":
        return False, f"the solution does not define {task.function}()"
    if run.status != "ran":
        return False, _printable(run.reason)
    if len(run.results) != len(task.cases):
        return False, "the sandbox returned the wrong number of results"
    problems = [p for c, r in zip(task.cases, run.results)
                if (p := check_case(c, task.function, r, limits)) is not None]
    if problems:
        return False, _printable(f"tests failed ({len(problems)} of {len(task.cases)}): {problems[0]}")
    return True, "passed"


def _printable(text: str) -> str:
    """A reason built from what the sandbox printed: control characters replaced (it is shown and recorded)."""
    return "".join(c if c.isprintable() else "?" for c in text)


def score(task: Task, text: str, limits: SandboxLimits | None = None) -> tuple[bool, str]:
    """Score one reply; never raises for bad replies (code tasks: SandboxUnavailable when no sandbox works)."""
    if task.kind == "code":
        return score_code(task, text, limits)
    if task.kind == "json":
        return score_json(task, text)
    if task.kind == "math":
        return score_math(task, text)
    return score_format(task, text)
