"""prom.parse's fast path against the reference it replaces: prometheus_client's parser, flattened
exactly as parse did before.  Differential (generated expositions and mutations of them), the fixtures,
the fallback's errors, and the speed ratio that is the point of it."""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import pytest
from prometheus_client.parser import _split_quoted, text_string_to_metric_families

from lanemon.client import prom
from lanemon.client.prom import PromParseError, families, parse

FIXTURES = Path(__file__).parent / "fixtures"


def reference(text: str):
    """parse() as it was (commit fa7da9c), plus OverflowError now counted as malformed: the samples,
    or PromParseError (the class) when the reference rejects the body."""
    out: dict = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
    except (ValueError, IndexError, KeyError, TypeError, OverflowError):
        return PromParseError
    return out


def new(text: str):
    try:
        return parse(text)
    except PromParseError:
        return PromParseError


def same(a, b) -> bool:
    """Equal as returned: key order, list order, labels, and values bit for bit in repr
    (nan == nan, -0.0 != 0.0)."""
    if a is PromParseError or b is PromParseError:
        return a is b
    return repr(a) == repr(b) and list(a) == list(b)


# ---------------------------------------------------------------------------
# A generator of expositions inside the fast path's grammar
# ---------------------------------------------------------------------------

NAMES = ["a", "b_total", "vllm:x", "vllm:y_total", "_u", ":c", "d_seconds", "up", "e_total_total", "f1"]
LNAMES = ["engine", "le", "quantile", "model_name", "_", "_x", "a1", "gpu"]
LCHARS = 'ab0 ,=}{#"\\\n/.-:_\t'


def label_value(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randrange(0, 7)):
        c = rng.choice(LCHARS)
        if c == "\\":
            out.append("\\" + rng.choice('\\n"'))
        elif c == '"':
            out.append('\\"')
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append(" ")
        else:
            out.append(c)
    return "".join(out)


def number(rng: random.Random) -> str:
    k = rng.randrange(14)
    sign = rng.choice(["", "", "-", "+"])
    if k == 0:
        return rng.choice(["NaN", "+Inf", "-Inf", "Inf"])
    if k == 1:
        return rng.choice(["0", "-0", "+0", "0.0", "-0.0", "00", "-00.0e0"])
    if k == 2:  # long integers: int() then float() in the reference, float() here
        return sign + str(rng.randrange(10 ** rng.randrange(15, 41)))
    if k == 3:
        return sign + "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 41)))
    if k == 4:
        return f"{sign}{rng.randrange(1000)}.{rng.randrange(1000)}e{rng.choice(['', '+', '-'])}{rng.randrange(400)}"
    if k == 5:
        return rng.choice([f"{sign}{rng.randrange(100)}.", f"{sign}.{rng.randrange(100)}",
                           f"{sign}{rng.randrange(100)}E{rng.randrange(30)}", f"{sign}.5e-3"])
    if k == 6:
        return sign + repr(rng.random() * 10 ** rng.randrange(-5, 20))
    if k == 7:
        return sign + "".join(rng.choice("0123456789") for _ in range(17)) + "." + str(rng.randrange(10 ** 6))
    return sign + str(rng.randrange(10 ** rng.randrange(1, 8)))


def sample_line(rng: random.Random, name: str) -> str:
    keys = rng.sample(LNAMES, rng.randrange(0, 4))
    labels = ",".join(f'{k}="{label_value(rng)}"' for k in keys)
    if keys and rng.random() < 0.15:
        labels += ","  # a trailing comma
    brace = f"{{{labels}}}" if keys or rng.random() < 0.2 else ""
    ts = f" {rng.choice(['', '-'])}{rng.randrange(10 ** rng.randrange(1, 19))}" if rng.random() < 0.15 else ""
    pad, tail = rng.choice(["", "", "", " ", "\t", " \t"]), rng.choice(["", "", "", " ", "\t", "\r"])
    return f"{pad}{name}{brace} {number(rng)}{ts}{tail}"


def family(rng: random.Random) -> list[str]:
    name = rng.choice(NAMES) + rng.choice(["", "", "_b", "x"])
    typ = rng.choice(["counter", "counter", "gauge", "histogram", "summary", "untyped", "unknown", "info",
                      "stateset", "gaugehistogram", None])
    lines = []
    if rng.random() < 0.7:
        doc = rng.choice(["", " Some help.", ' help with "quotes" and \\\\ and \\n', " a  b\tc", " #"])
        lines.append(f"# HELP {name}{doc}")
    if typ:
        lines.append(f"# TYPE {name} {typ}")
    if rng.random() < 0.3 and lines:
        lines.append(rng.choice(lines))  # a repeated HELP/TYPE line
    suffixes = {"histogram": ["_bucket", "_bucket", "_sum", "_count"], "summary": ["", "_sum", "_count"]}.get(
        typ or "", [""])
    for _ in range(rng.randrange(0, 6)):
        r = rng.random()
        if r < 0.75:
            sname = name + rng.choice(suffixes)
        elif r < 0.85:
            sname = name + rng.choice(["_total", "_created", "_bucket", "_sum", ""])  # outside the family
        else:
            sname = rng.choice(NAMES)
        lines.append(sample_line(rng, sname))
        if rng.random() < 0.05:
            lines.append(f"# TYPE {name} {rng.choice(['counter', 'gauge', 'untyped'])}")  # the type changes
    return lines


def exposition(rng: random.Random) -> str:
    lines: list[str] = []
    for _ in range(rng.randrange(0, 6)):
        r = rng.random()
        if r < 0.1:
            lines.append(rng.choice(["", "   ", "\t", "#", "# a comment", "#HELP x", "# HELP", "# foo bar baz qux",
                                     "# HELP  spaced   out  doc", "# EOF"]))
        elif r < 0.2:
            lines.append(sample_line(rng, rng.choice(NAMES)))  # untyped, no family
        else:
            lines.extend(family(rng))
    end = rng.choice(["\n", "\n", "", "\n\n"])
    return rng.choice(["\n", "\n", "\r\n"]).join(lines) + end


MUTATIONS = '"{},=\\ \t#\n\r_.eE+-0x:é\u00a0\u2028\x85\x1c\x0b\x0c\x00'


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(3)
        if op == 0:
            text = text[:i] + rng.choice(MUTATIONS) + text[i:]
        elif op == 1:
            text = text[:i] + text[i + 1:]
        else:
            text = text[:i] + rng.choice(MUTATIONS) + text[i + 1:]
    return text


# ---------------------------------------------------------------------------
# Differential tests
# ---------------------------------------------------------------------------


def test_generated_expositions_take_the_fast_path_and_match_the_reference():
    rng = random.Random(20240611)
    errors = 0
    for i in range(3000):
        text = exposition(rng)
        want = reference(text)
        errors += want is PromParseError
        fast = prom._parse_fast(text)
        assert fast is not None, (i, text)
        assert same(fast, want) and same(new(text), want), (i, text)
    assert errors == 0  # the generator stays inside what the reference accepts


def test_mutated_expositions_match_the_reference():
    rng = random.Random(7)
    fast = fallback = raised = 0
    for i in range(4000):
        text = mutate(rng, exposition(rng) or "a 1\n")
        want = reference(text)
        got = new(text)
        assert same(got, want), (i, text, got, want)
        raised += want is PromParseError
        if prom._parse_fast(text) is None:
            fallback += 1
        else:
            fast += 1
    # both sides exercised: mutations the fast path still reads (and must agree on), and ones it hands over
    assert fast > 800 and fallback > 800 and raised > 300, (fast, fallback, raised)


EDGES = [
    "# TYPE x bogus\nx 1\n",  # Metric() rejects the type when the family is built
    "# TYPE x bogus\n# TYPE x gauge\nx 1\n",  # ... but only the type it has then
    "# TYPE x gauge\nx 1\n# TYPE x bogus\n",
    "# TYPE _total counter\n_total 1\n",  # the counter's name minus _total is empty
    "# TYPE x counter\nx 1\n# TYPE x gauge\nx 2\n",  # read at build time: not renamed
    "# TYPE x gauge\nx 1\n# TYPE x counter\n",  # renamed though typed gauge when read
    "# TYPE x counter\nx_total 1\nx 2\nx 3\n",  # x_total is a singleton, x 2 a singleton after it
    "# TYPE x counter extra words\nx 1\n",  # type "counter extra words": invalid
    "# TYPE x\nx 1\n", "# TYPE\n", "# HELP\nx 1\n", "# HELP x\n# HELP\n# TYPE x counter\nx 1\n",
    "# HELP 1x doc\n", "# HELP x\\y doc\n", '# HELP "x" doc\nx 1\n', '# TYPE x "counter"\nx 1\n',
    '# HELP x "doc"\n# TYPE x counter\nx 1\n', '# "HELP" x\n', '# a "b c" d\n',
    '#"a b" TYPE x\n', '#"a b" TYPE x counter\nx 1\n',  # the quoted split's parts[1] is TYPE, str.split's is not
    "x 1\nx 1\n", "x -0\n", "x -0.0\n", "x +0\n", "x 1e400\n", "x -1e400\n", "x 00012\n",
    "x 1_0\n", "x 0x10\n", "x nan\n", "x -NaN\n", "x inf\n", "x Infinity\n", "x 1.5 1 2\n", "x  1\n", "x\t1\n",
    "x 1 1.5\n", "x 1 +5\n", "x 1 # {a=\"b\"} 1\n",
    "x " + "9" * 40 + "\n", "x " + "9" * 41 + "\n", "x " + "9" * 400 + "\n", "x 1 " + "9" * 19 + "\n",
    "x 1 " + "9" * 400 + "\n", "x " + "1" * 5000 + "\n", "x 1." + "1" * 50 + "\n",
    'x{a="1",a="2"} 1\n', 'x{__name__="y"} 1\n', '{__name__="y"} 1\n', 'x{__a="1"} 1\n', 'x{_a="1"} 1\n',
    'x{a:b="1"} 1\n', 'x{a="1",} 1\n', 'x{,} 1\n', 'x{} 1\n', 'x{a="1" } 1\n', 'x{a= "1"} 1\n',
    'x{a="}"} 1\n', 'x{a="\\"} 1"} 2\n', 'x{a="\\q"} 1\n', 'x{a="\\\\"} 1\n', 'x{a="\t"} 1\n',
    'x{a="\r"} 1\n', 'x{a="é"} 1\n', 'x{a="1"}{b="2"} 1\n', "x{a=\"1\"} 1 2 3\n",
    "x 1\r\ny 2\r\n", "x 1\ry 2\n", "x 1\x0by 2\n", "\x1cx 1\n", "x 1\u2028y 2\n", "\u00a0x 1\n",
    "# TYPE h histogram\nh 1\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
    "# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 1\ns_count 1\ns_bucket 1\n",
]


@pytest.mark.parametrize("text", EDGES)
def test_edge_cases_match_the_reference(text):
    assert same(new(text), reference(text))


def test_split_matches_the_references_quoted_split_for_unquoted_comments():
    """The claim the comment path rests on: for ASCII without a quote in the first three parts,
    str.split(None, 3) is prometheus_client's _split_quoted(line, None, 3)."""
    rng = random.Random(3)
    alphabet = "# \t\r\x0b\x0cabHELPTYP_:x1\\"
    for _ in range(20000):
        line = "#" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 20)))
        if rng.random() < 0.3:
            line += ' "q  "' + "".join(rng.choice(alphabet + '"') for _ in range(rng.randrange(0, 8)))
        line = line.strip()
        parts = line.split(None, 3)
        if any('"' in p for p in parts[:3]):
            continue
        assert parts == _split_quoted(line, None, 3), repr(line)


def test_integer_values_convert_as_the_reference_does():
    """Integers (up to the grammar's 40 digits): float(s) + 0.0 is float(int(s)), -0 included."""
    rng = random.Random(5)
    for _ in range(20000):
        s = rng.choice(["", "-", "+"]) + "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 41)))
        assert repr(float(s) + 0.0) == repr(float(int(s))), s


# ---------------------------------------------------------------------------
# Fixtures, errors, speed
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["vllm_dp2_before.prom", "vllm_dp2_after.prom", "dcgm_h100x2.prom"])
def test_fixtures_take_the_fast_path(fixture):
    text = (FIXTURES / fixture).read_text()
    fast = prom._parse_fast(text)
    assert fast is not None and fast
    assert same(fast, reference(text))
    assert same(parse(text), fast)


def test_overflow_is_a_parse_error():
    """A 400-digit integer: int() reads it, float() cannot (OverflowError, which escaped parse).  families()
    keeps the value an int, but the timestamp's int / 1000 overflows there too."""
    for text in ("x " + "9" * 400 + "\n", "# TYPE x gauge\nx 1 " + "9" * 400 + "\n"):
        assert prom._parse_fast(text) is None
        with pytest.raises(PromParseError):
            parse(text)
    with pytest.raises(PromParseError):
        families("x 1 " + "9" * 400 + "\n")
    assert families("x " + "9" * 400 + "\n") == {"x": "unknown"}


def test_fast_path_is_several_times_faster():
    """A ~60 KB vLLM body: the fast path against the reference in the same process, best of several
    interleaved rounds (a ratio, so a loaded machine slows both)."""
    one = (FIXTURES / "vllm_dp2_after.prom").read_text()
    text = one * (60_000 // len(one) + 1)
    assert prom._parse_fast(text) is not None
    best = {"fast": math.inf, "ref": math.inf}
    for _ in range(7):
        for key, fn in (("fast", parse), ("ref", reference)):
            t0 = time.perf_counter()
            fn(text)
            best[key] = min(best[key], time.perf_counter() - t0)
    assert best["ref"] >= 3 * best["fast"], best
