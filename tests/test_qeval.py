"""qeval: the task bank, the scorers and the paired test (no network, no simulator)."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from lanemon.sim.qeval_responder import DEFAULT_MISSES, QevalResponder, parse_misses
from lanemon.results.qeval import QevalCompare, QevalResult, QevalSide, QevalTask
from lanemon.workloads.qeval import compare_line, compare_runs, load_bank, mcnemar_exact, score, select_tasks
from lanemon.workloads.qeval.sandbox import sandbox_problem
from lanemon.workloads.qeval.scorers import extract_code, extract_json, extract_number, score_format

BANK = load_bank()
needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None,
                                   reason=f"code tasks are skipped here: {sandbox_problem()}")
WRITEUP_MISSES = {"code_interval_intersect", "json_escape", "json_count", "math_m9"}


# ----------------------------------------------------------------------------- bank

def test_bank_has_75_tasks_of_four_kinds_with_the_writeup_misses():
    assert len(BANK) == 75
    kinds = Counter(t.kind for t in BANK.values())
    assert set(kinds) == {"code", "json", "math", "format"}
    assert kinds == {"code": 20, "json": 20, "math": 20, "format": 15}
    assert WRITEUP_MISSES <= set(BANK)
    assert {f"math_m{i}" for i in range(1, 21)} == {t for t in BANK if t.startswith("math_")}
    assert len({t.prompt.strip() for t in BANK.values()}) == 75  # the sim looks prompts up exactly


@pytest.mark.parametrize("tid", [t for t in BANK if BANK[t].kind != "code"])
def test_reference_passes_and_wrong_fails(tid):
    task = BANK[tid]
    assert score(task, task.reference) == (True, "passed")
    passed, reason = score(task, task.wrong)
    assert not passed and reason != "passed"


@needs_sandbox
def test_code_references_pass_and_wrong_solutions_fail_in_the_sandbox():
    from concurrent.futures import ThreadPoolExecutor

    code = [t for t in BANK.values() if t.kind == "code"]
    with ThreadPoolExecutor(4) as pool:
        ref = list(pool.map(lambda t: score(t, t.reference), code))
        wrong = list(pool.map(lambda t: score(t, t.wrong), code))
    for t, r, w in zip(code, ref, wrong):
        assert r == (True, "passed"), (t.id, r)
        assert not w[0] and w[1].startswith("tests failed ("), (t.id, w)


@needs_sandbox
def test_writeup_misses_fail_for_the_right_reason():
    reasons = {tid: score(BANK[tid], BANK[tid].wrong)[1] for tid in WRITEUP_MISSES}
    assert reasons["code_interval_intersect"] == (
        "tests failed (2 of 6): interval_intersect((1, 3), (3, 5)) returned None, expected (3, 3)")
    assert reasons["json_escape"].startswith("invalid JSON: Invalid \\escape")
    assert reasons["json_count"] == "key 'count': expected 3, got 2"
    assert reasons["math_m9"] == "expected 24, got 22"


def test_select_tasks_by_id_and_kind():
    sel = select_tasks("math,json_escape")
    assert [t.id for t in sel] == ["json_escape"] + [f"math_m{i}" for i in range(1, 21)]
    assert len(select_tasks(None)) == 75
    with pytest.raises(KeyError, match="nope"):
        select_tasks("code,nope")


# ----------------------------------------------------------------------------- math

@pytest.mark.parametrize("text,value", [
    ("so the result is 42", 42),
    ("Answer: 42", 42),
    ("The answer is 42. I checked it in 3 steps.", 42),
    ("answer: 1,234,567", 1234567),
    ("Final answer: 6,912.", 6912),
    ("**Answer:** 54", 54),
    ("\\boxed{\\frac{7}{8}}", Fraction(7, 8)),
    ("First 3, then \\boxed{-14} and 99 afterwards", -14),
    ("\\boxed{1{,}024}", 1024),
    ("Answer: 3.75", Fraction(15, 4)),
    ("Answer: 15/4", Fraction(15, 4)),
    ("Answer: $1,102.50", Fraction(2205, 2)),
    ("25 - 7 = 18", 18),
    ("x = −5", -5),
    ("Answer: 0.125", Fraction(1, 8)),
    ("90.0 square metres", 90),
])
def test_math_extraction(text, value):
    assert extract_number(text) == value


def test_math_exact_rational_comparison():
    m19 = BANK["math_m19"]  # answer 15/4
    assert score(m19, "Answer: 3.75")[0]
    assert score(m19, "\\boxed{\\dfrac{15}{4}}")[0]
    assert score(m19, "Answer: 3.7500")[0]
    assert score(m19, "Answer: 3.74") == (False, "expected 15/4, got 3.74")
    assert score(m19, "I do not know") == (False, "no number found in the reply")
    assert score(BANK["math_m7"], "so 2^10 is 1,024") == (True, "passed")


# ----------------------------------------------------------------------------- json

def test_json_extraction_and_checks():
    t = BANK["json_config"]
    assert score(t, 'Sure!\n```json\n{"host": "127.0.0.1", "port": 8001, "tls": false}\n```')[0]
    assert score(t, 'Here: {"host": "127.0.0.1", "port": 8001, "tls": false} done')[0]
    assert score(t, '{"host": "127.0.0.1", "port": "8001", "tls": false}') == (
        False, "key 'port': expected integer, got string")
    assert score(t, '{"host": "127.0.0.1", "tls": false}') == (False, "missing key 'port'")
    assert score(t, '{"host": "127.0.0.1", "port": 8001, "tls": 0}') == (
        False, "key 'tls': expected boolean, got integer")
    assert score(t, '[1, 2]') == (False, "expected a JSON object, got array")
    assert score(t, "no json here")[1].startswith("invalid JSON")
    assert score(BANK["json_exact_keys"], '{"a": 1, "b": 2, "c": 3, "d": 4}') == (False, "unexpected key(s) 'd'")
    assert score(BANK["json_zip_string"], '{"zip": 2139}') == (False, "key 'zip': expected string, got integer")
    assert score(BANK["json_unicode"], '{"city": "Zürich", "greeting": "Grüezi"}')[0]
    assert score(BANK["json_weekdays"], '["mon", "tue", "wed", "thu"]')[1].startswith("expected [")
    value, error = extract_json('{"a": 1,}')
    assert value is None and error.startswith("invalid JSON")


# ----------------------------------------------------------------------------- format

def test_format_constraints():
    assert score_format(BANK["format_twelve_words"], "one two three four five six seven eight nine ten eleven") == (
        False, "11 words, expected exactly 12")
    assert score_format(BANK["format_three_bullets"], "- a\n- b") == (False, "2 lines, expected exactly 3")
    assert score_format(BANK["format_three_bullets"], "- a\n* b\n- c")[1].startswith("line 2 does not match")
    assert score_format(BANK["format_no_e"], "A big cat sat on a rug THEN")[1] == "contains 'e'"
    assert score_format(BANK["format_ends_with"], "Clear skies. Over and out.\n\n")[0]  # stripped
    assert score_format(BANK["format_short_line"], "x" * 51 + " lanemon")[1].startswith("59 characters")
    assert score_format(BANK["format_two_paragraphs"], "One.\n\nTwo.\r\n\r\nThree.") == (
        False, "3 paragraphs, expected exactly 2")
    assert score_format(BANK["format_yes_no"], "no")[1].startswith("does not match the required pattern")


def test_extract_code_picks_the_block_defining_the_function():
    text = "Example use:\n```python\nprint(f(1))\n```\nSolution:\n```python\ndef f(x):\n    return x\n```"
    assert extract_code(text, "f").strip().startswith("def f(")
    assert extract_code("def f(x):\n    return x", "f").startswith("def f")
    assert extract_code("```python\ndef f(x):\n    return x", "f").startswith("def f")  # unterminated fence
    assert extract_code("I cannot help with that.", "f") is None
    assert score(BANK["code_rotate"], "no code") == (False, "no code block defining rotate() found")


def test_code_cases_are_literals_checked_when_the_bank_loads():
    from lanemon.workloads.qeval.bank import BankError, parse_task

    base = {"id": "c", "kind": "code", "function": "f", "prompt": "p", "reference": "r", "wrong": "w"}
    ok = parse_task({**base, "cases": [{"args": "1, [2]", "expect": "(1, 2)"}, {"args": "", "raises": "ValueError"},
                                       {"args": "3", "len": 2, "unchanged": True}]})
    assert [(c.args, c.expect, c.raises, c.length, c.unchanged) for c in ok.cases] == [
        ("1, [2]", (1, 2), None, None, False), ("", None, "ValueError", None, False), ("3", None, None, 2, True)]
    for bad in ([], [{"args": "1"}], [{"args": "__import__('os')", "expect": "1"}],
                [{"args": "1", "expect": "1", "len": 1}], [{"args": "1", "expect": "f()"}],
                [{"args": "1", "raises": "not a name"}], [{"args": "1", "expect": "1", "tests": "x"}]):
        with pytest.raises(BankError):
            parse_task({**base, "cases": bad})


def test_sandbox_values_decode_strictly_and_compare_by_type():
    from lanemon.workloads.qeval.values import Opaque, Undecodable, decode, difference, same

    tree = {"tuple": [1, {"list": ["a", {"dict": [[1, 2.5], [{"tuple": [1]}, None]]}]}, True,
                      {"set": [1, 2]}, {"bytes": "ff"}, {"bigint": "1" * 30}, {"float": "nan"}]}
    value = decode(tree)
    assert value[:2] == (1, ["a", {1: 2.5, (1,): None}]) and value[3] == {1, 2} and value[4] == b"\xff"
    assert value[5] == int("1" * 30) and value[6] != value[6]
    assert type(decode({"object": "Anything"})) is Opaque
    for garbage in ({"list": 1}, {"dict": [[1]]}, {"dict": [[1, 1], [1, 2]]}, {"x": []}, {"list": [], "tuple": []},
                    [1, 2], {"set": [{"list": []}]}, {"bigint": "12a"}, {"float": "1.5"}):
        with pytest.raises(Undecodable):
            decode(garbage)
    nested: dict = {"list": []}
    for _ in range(100):
        nested = {"list": [nested]}
    with pytest.raises(Undecodable):
        decode(nested)
    assert same(2.0, 2) and same({"a": [1, (2,)]}, {"a": [1, (2,)]}) and same({1, 2}, {2, 1})
    assert not same(True, 1) and not same(1, True) and not same([3], (3,)) and not same({True: 1}, {1: 1})
    assert not same(Opaque("X"), Opaque("X")) and not same("1", 1) and not same([1, 2], [1, 2, 3])
    assert difference(["a", "b"], ["a", "c"]) == "returned a value whose [1] is 'b', expected 'c'"
    assert difference([1], (1,)) == "returned [1], expected (1,)"


# ----------------------------------------------------------------------------- McNemar / compare

def test_mcnemar_against_hand_computation():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 5) == pytest.approx(2 * (1 + 6) / 64) == 0.21875
    assert mcnemar_exact(5, 1) == 0.21875
    assert mcnemar_exact(0, 6) == 2 / 64
    assert mcnemar_exact(3, 3) == 1.0  # capped at 1
    assert mcnemar_exact(0, 1) == 1.0
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def _run(lane, failing, ids):
    return QevalResult(lane=lane, model="m", passed=len(ids) - len(failing), total=len(ids),
                       tasks={i: QevalTask(passed=i not in failing, reason="", kind="math", prompt_tokens=1,
                                           completion_tokens=1, seconds=0.1) for i in ids})


def test_compare_runs_groups_and_left_out():
    ids = [f"t{i}" for i in range(10)]
    a = _run("A", {"t0", "t1"}, ids)
    b = _run("B", {"t1", "t2", "t3", "t4", "t5", "t6"}, ids[:9] + ["extra"])
    res = compare_runs(a, b)
    assert isinstance(res, QevalCompare)
    assert res.left_out == 2  # t9 only in A, extra only in B
    assert (res.kept, res.broke, res.fixed, res.both_failed) == (2, 5, 1, 1)
    assert res.broke_ids == ["t2", "t3", "t4", "t5", "t6"] and res.fixed_ids == ["t0"]
    assert res.both_failed_ids == ["t1"] and res.kept_ids == ["t7", "t8"]
    assert res.p_value == 0.21875
    assert res.a == QevalSide(name="A", passed=7, total=9)
    assert res.b == QevalSide(name="B", passed=3, total=9)
    assert compare_line(res) == "A 7/9, B 3/9; kept 2, broke 5, fixed 1, p = 0.219"


# ----------------------------------------------------------------------------- sim responder

def test_sim_responder_rule():
    r = QevalResponder()
    assert r.misses == frozenset(DEFAULT_MISSES) == WRITEUP_MISSES
    assert r.answer("  " + BANK["math_m1"].prompt + "\n") == BANK["math_m1"].reference
    assert r.answer(BANK["math_m9"].prompt) == BANK["math_m9"].wrong
    assert r.answer("Compute 17 × 23.") is None  # not the exact prompt
    assert parse_misses("") == frozenset()
    assert parse_misses(" a, b ,") == {"a", "b"}
    assert QevalResponder("").answer(BANK["math_m9"].prompt) == BANK["math_m9"].reference
    text, finish = QevalResponder().reply(BANK["code_fizzbuzz"].prompt, 5)
    assert finish == "length" and BANK["code_fizzbuzz"].reference.startswith(text)
    with pytest.raises(ValueError, match="unknown qeval task"):
        QevalResponder("math_m99")


def test_format_constraints_are_checked_into_their_struct_when_the_bank_loads():
    from lanemon.workloads.qeval.bank import BankError, Constraint, parse_task

    base = {"id": "f", "kind": "format", "prompt": "p", "reference": "r", "wrong": "w"}
    task = parse_task({**base, "constraints": [{"type": "words", "exact": 3}, {"type": "contains", "text": "x",
                                                                                "ignore_case": True}]})
    assert task.constraints == (Constraint("words", exact=3), Constraint("contains", text="x", ignore_case=True))
    assert score_format(task, "a b X") == (True, "passed")
    for bad in ({"type": "words", "exact": "3"}, {"type": "regex"}, {"type": "max_chars"}, {"type": "rhyme"}, "x",
                {"type": "contains", "text": 5}):
        with pytest.raises(BankError, match="bad constraint"):
            parse_task({**base, "constraints": [bad]})


def test_the_runs_figures_per_kind_and_over_all_tasks():
    """workloads/qeval/run.py task_figures: passed / total per kind (the bank's kinds first, in their order), the
    median seconds and median completion tokens / seconds of each kind and of the run; a task without seconds or
    usage is in the counts, not in the medians."""
    from lanemon.workloads.qeval.run import build_result, task_figures

    def t(kind, passed, secs, toks):
        return QevalTask(passed=passed, reason="passed" if passed else "no", kind=kind, prompt_tokens=10,
                         completion_tokens=toks, seconds=secs)

    tasks = [t("math", True, 1.0, 10), t("json", False, 2.0, 40), t("math", False, 3.0, 90), t("math", True, None, 5),
             t("odd", True, 4.0, None)]
    got = task_figures(tasks)
    assert list(got.kinds) == ["json", "math", "odd"]  # bank order (code, json, math, format), then the rest
    math = got.kinds["math"]
    assert (math.passed, math.total, math.median_s, math.median_tok_s) == (2, 3, 2.0, 20.0)  # 10/1 and 90/3
    assert (got.kinds["odd"].median_s, got.kinds["odd"].median_tok_s) == (4.0, None)
    assert got.median_s == 2.5 and got.median_tok_s == 20.0  # seconds 1, 2, 3, 4; rates 10, 20, 30
    assert task_figures([]) == (None, None, {})
    run = build_result("A", None, {f"t{i}": x for i, x in enumerate(tasks)}, bank={})
    assert (run.passed, run.total, run.median_s, run.kinds["math"].total) == (3, 5, 2.5, 3)
