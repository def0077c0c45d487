"""Pure unit tests of the simulator's model: tokenizer, classifier, curves, cache, text."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time

import pytest

from lanemon.sim import engine as eng
from lanemon.sim.profiles import PROFILES, Profile
from lanemon.sim.text import generate, make_rng
from lanemon.sim.tokenizer import chat_prompt_text, count_tokens, tokenize
from lanemon.sim.tools import build_arguments, decide_tool_call, split_arguments

A = PROFILES["tensorfold-exl3"]
B = PROFILES["sglang-native"]

SAMPLE = (
    "The quick brown fox jumps over the lazy dog.\n\n  Internationalization (i18n) costs 1,234.56 "
    "dollars; café naïve — ok?\tdef f(x): return x**2 # done\r\n日本語のテキスト"
)


# ---------------------------------------------------------------- tokenizer


def test_tokenizer_round_trip_and_rule():
    pieces = tokenize(SAMPLE)
    assert "".join(pieces) == SAMPLE
    assert count_tokens(SAMPLE) == len(pieces)
    assert tokenize("hello world") == ["hell", "o", " worl", "d"]
    assert tokenize("a  b\n") == ["a", " ", " b", "\n"]
    assert tokenize("x(y)") == ["x", "(", "y", ")"]
    assert tokenize(" (") == [" ("]
    assert tokenize("") == []
    for p in pieces:
        assert p
        body = p[1:] if p.startswith(" ") and len(p) > 1 else p
        assert len(body) == 1 or (body.isalnum() and len(body) <= 4), p


def test_tokenizer_is_prefix_stable():
    pieces = tokenize(SAMPLE * 3)
    for k in range(len(pieces) + 1):
        assert tokenize("".join(pieces[:k])) == pieces[:k]


def test_tokenizer_counts_in_plausible_range_for_english():
    text = " ".join(
        ["The harbour was quiet in the early morning and the light came in low across the water."] * 50
    )
    ratio = count_tokens(text) / len(text.split())
    assert 1.1 < ratio < 2.5


def test_tokenizer_speed():
    text = ("Lorem, the quick brown fox; jumps over 12 lazy dogs.\n" * 23000)[:1_200_000]
    t = time.perf_counter()
    n = count_tokens(text)
    dt = time.perf_counter() - t
    assert n > 200_000
    assert dt < 1.5, dt  # spec: well under a second; generous for slow CI


def test_chat_template_token_count():
    text = chat_prompt_text([("system", "Be brief."), ("user", "Hi")])
    assert text == "<|system|>\nBe brief.\n<|user|>\nHi\n"


# ---------------------------------------------------------------- classifier


@pytest.mark.parametrize(
    "prompt,cat",
    [
        ("Write a Python function that reverses a list", "coding"),
        ("Implement binary search", "coding"),
        ("Tell me a story about a dragon", "narrative"),
        ("Write an essay on rivers", "prose"),
        ("Describe the sea at dawn", "prose"),
        ("Summarize this article: ...", "summarization"),
        ("Give me a summary of the meeting", "summarization"),
        ("Extract the names as JSON", "extraction"),
        ("Translate this into French: good morning", "translation"),
        ("Solve the equation 3x + 5 = 11", "math"),
        ("Calculate 17% of 230", "math"),
        ("Explain why the sky is blue, step by step", "reasoning"),
        ("Here is a logic puzzle for you", "reasoning"),
        ("Hello there", "default"),
        ("", "default"),
    ],
)
def test_classify(prompt, cat):
    assert eng.classify(prompt) == cat


def test_classify_keyword_needs_word_start():
    assert eng.classify("malfunctioning") == "default"  # "function" inside a word
    assert eng.classify("FUNCTION please") == "coding"


# ---------------------------------------------------------------- profiles


def test_profiles_shape():
    assert set(PROFILES) == {"tensorfold-exl3", "sglang-native"}
    for p in PROFILES.values():
        assert isinstance(p, Profile)
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.name = "x"  # type: ignore[misc]
        assert p.max_parallel == 16
        assert p.context_len == 1_048_576
        assert "default" in p.category_c1
    assert (A.lane, B.lane) == ("A", "B")
    assert A.models == ("deepseek-v4.1-flash", "glm-5.3-flash")
    assert B.models == ("deepseek-v4.1-flash",)
    assert (A.prefix_cache, B.prefix_cache) == (False, True)
    assert (A.logprobs, B.logprobs) == ("reject", "no_prompt")
    hash(A)


# ---------------------------------------------------------------- prefill


@pytest.mark.parametrize("n", [2000, 8000, 32000, 64000])
def test_prefill_ratio_on_ladder(n):
    r = eng.prefill_rate(B, n) / eng.prefill_rate(A, n)
    assert 1.3 <= r <= 2.0, (n, r)


def test_prefill_named_points():
    assert eng.prefill_rate(B, 12000) / eng.prefill_rate(A, 12000) == pytest.approx(1.6, abs=0.06)
    assert eng.prefill_rate(B, 93000) / eng.prefill_rate(A, 93000) == pytest.approx(2.0, abs=0.06)
    assert eng.prefill_rate(B, 131072) == pytest.approx(4600, rel=0.03)
    assert eng.prefill_rate(B, 2950) == pytest.approx(3654)
    for n in (1000, 2000, 5000, 20000, 93000, 131072, 300000, 900000):
        assert 2400 <= eng.prefill_rate(A, n) <= 2700  # "flat around 2.4-2.7K"
    # clamping and monotone interpolation between points
    assert eng.prefill_rate(B, 10) == eng.prefill_rate(B, 2000)
    assert eng.prefill_rate(B, 10**7) == eng.prefill_rate(B, 300000)
    assert 3900 < eng.prefill_rate(B, 10000) < 4100


def test_prefill_seconds_match_writeup():
    # "a 93K-token document costs 35 s before the first token on A and 17 s on B"
    assert eng.model_ttft(A, 93000, 0, 1) == pytest.approx(35, abs=1.0)
    assert eng.model_ttft(B, 93000, 0, 1) == pytest.approx(17, abs=1.0)
    # "a 300K context costs about two minutes on A and 100-115 s on B"
    assert 110 <= eng.model_ttft(A, 300000, 0, 1) <= 130
    assert 100 <= eng.model_ttft(B, 300000, 0, 1) <= 115


def test_ttft_floor_and_concurrency():
    assert eng.model_ttft(A, 20, 0, 1) == pytest.approx(0.17)
    assert eng.model_ttft(B, 20, 0, 1) == pytest.approx(0.22)
    assert eng.model_ttft(A, 20, 0, 6) == pytest.approx(0.17 * 1.2)
    # the concurrency factor applies to the floor only
    long_ = eng.model_ttft(B, 64000, 0, 1)
    assert eng.model_ttft(B, 64000, 0, 16) == pytest.approx(long_)


def test_prefix_hit_rate_at_2950():
    cold = 2950 / eng.model_ttft(B, 2950, 0, 1)
    warm = 2950 / eng.model_ttft(B, 2950, 2949, 1)
    assert cold == pytest.approx(3654, rel=0.01)
    assert warm == pytest.approx(12542, rel=0.01)


# ---------------------------------------------------------------- decode


def test_agg_crossover_and_c6():
    for n in (1, 2, 3):
        assert eng.agg_rate(A, n) > eng.agg_rate(B, n), n
    for n in (4, 5, 6, 8, 12, 16):
        assert eng.agg_rate(B, n) > eng.agg_rate(A, n), n
    # the curve is the instantaneous aggregate; it is fitted so that lanemon's
    # closed-loop decode ladder *measures* 223 / 263 at C6 (tests/test_bench_decode.py)
    assert eng.agg_rate(A, 6) == 243
    assert eng.agg_rate(B, 6) == 305
    assert eng.agg_rate(A, 40) == eng.agg_rate(A, 16)
    assert eng.agg_rate(B, 7) == pytest.approx((305 + 342) / 2)


def test_per_stream_rates():
    assert eng.per_stream_rate(A, "coding", 1) == 148
    assert eng.per_stream_rate(B, "coding", 1) == 134
    assert eng.per_stream_rate(A, "prose", 1) == 88
    assert eng.per_stream_rate(B, "prose", 1) == 74
    assert eng.per_stream_rate(A, "no-such", 1) == A.category_c1["default"]
    for cat in A.category_c1:
        edge = A.category_c1[cat] / B.category_c1[cat]
        assert 1.05 <= edge <= 1.25, (cat, edge)  # A faster in every category (~1.1-1.2x)
    # default stream at C6: six of them deliver the aggregate curve
    assert 6 * eng.per_stream_rate(B, "default", 6) == pytest.approx(305)
    assert eng.per_stream_rate(B, "coding", 4) < eng.per_stream_rate(B, "coding", 1)


# ---------------------------------------------------------------- prefix cache


def test_prefix_cache_blocks():
    c = eng.PrefixCache(block=256, max_blocks=1000)
    base = [f"t{i}" for i in range(1000)]
    assert c.lookup(base) == 0
    assert c.lookup(base) == 999  # identical repeat: all but the last token
    other = base[:600] + ["x"] * 400
    assert c.lookup(other) == 512  # two full shared blocks
    assert c.lookup(["y"] + base[1:]) == 0  # first block differs: nothing shared
    assert c.lookup(base[:300], insert=False) == 256
    assert c.lookup(base[:256]) == 255  # whole prompt is one seen block; keep one to compute


def test_prefix_cache_lru_bound():
    c = eng.PrefixCache(block=4, max_blocks=8)
    first = [str(i) for i in range(16)]  # 4 blocks
    c.lookup(first)
    for k in range(3):
        c.lookup([f"{k}-{i}" for i in range(16)])
    assert len(c) <= 8
    assert c.lookup(first, insert=False) == 0  # evicted (least recently used)


# ---------------------------------------------------------------- text / tools


def test_generate_deterministic_and_bounded():
    for cat in ("coding", "prose", "reasoning", "narrative", "summarization", "extraction",
                "translation", "math", "default"):
        t1, f1 = generate("prompt", 0, cat, None, make_rng("prompt", 0))
        t2, f2 = generate("prompt", 0, cat, None, make_rng("prompt", 0))
        assert (t1, f1) == (t2, f2)
        assert f1 == "stop"
        assert 50 <= count_tokens(t1) <= 470, (cat, count_tokens(t1))
        assert "lorem" not in t1.lower()
        t3, f3 = generate("prompt", 0, cat, 7, make_rng("prompt", 0))
        assert f3 == "length" and count_tokens(t3) == 7 and t1.startswith(t3)
    assert generate("a", 0, "prose", None, make_rng("a", 0)) != generate("b", 0, "prose", None, make_rng("b", 0))


def test_generate_coding_is_python():
    text, _ = generate("x", 1, "coding", None, make_rng("x", 1))
    assert "```python\ndef " in text or "```python\nimport" in text or "```python\nfrom" in text


def test_tool_arguments_and_split():
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"},
                                         "mode": {"type": "string", "enum": ["text", "bytes"]}},
        "required": ["path", "limit", "mode"]}}},
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    rng = random.Random(0)
    assert decide_tool_call([], tools, "auto", rng, "hello") is None
    assert decide_tool_call([], tools, "none", rng, "call read_file") is None
    tc = decide_tool_call([], tools, "auto", rng, "please use get_weather")
    assert tc.name == "get_weather" and set(json.loads(tc.arguments)) == {"city"}
    tc = decide_tool_call([], tools, "required", rng, "")
    assert tc.name == "read_file"
    args = json.loads(tc.arguments)
    assert isinstance(args["path"], str) and args["path"] and args["limit"] == 1 and args["mode"] == "text"
    tc2 = decide_tool_call([], tools, {"type": "function", "function": {"name": "get_weather"}}, rng, "")
    assert tc2.name == "get_weather"
    groups = split_arguments(tc.arguments)
    assert len(groups) >= 3 and "".join("".join(g) for g in groups) == tc.arguments
    assert build_arguments(None, rng) == {}


def test_sim_never_imports_textual():
    import subprocess

    code = ("import sys, lanemon.sim.server, lanemon.sim.__main__; "
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_chat_prompt_tokens_adds_two():
    from lanemon.sim.tokenizer import CHAT_EXTRA_TOKENS, chat_prompt_tokens

    rendered = chat_prompt_text([("user", "Hello there, how are you?")])
    assert CHAT_EXTRA_TOKENS == 2
    assert len(chat_prompt_tokens(rendered)) == count_tokens(rendered) + 2
