"""The quantized lane's divergent text reads as text: where it leaves the native reply at the start of a
sentence it does not begin mid-phrase (issue 40 item 4: lane A's race text began `our like the following
should work:`)."""

from __future__ import annotations

from lanemon.sim.divergence import apply, divergence_word
from lanemon.sim.text import generate, make_rng
from lanemon.workloads.agree import first_divergence_word, load_agree_prompts

PROMPTS = [f"Write a Python function number {i} that merges two sorted lists." for i in range(60)]


def quant(prompt: str, category: str) -> tuple[str, str]:
    native, finish = generate(prompt, 0, category, None, make_rng(prompt, 0))
    out, _ = apply("tensorfold-exl3", prompt, 0, native, finish, temperature=0, category=category, max_tokens=None)
    return native, out


def test_a_divergence_at_a_sentence_start_begins_a_sentence():
    starts = [p for p in PROMPTS if divergence_word(p, 0) == 0]
    assert len(starts) >= 10  # the rule diverges at word 0 for ~45 % of prompts
    for prompt in starts:
        native, out = quant(prompt, "coding")
        first, second = out.split()[:2]
        assert first[:1].isupper() and first[-1] in ".,!", (prompt, out[:60])  # a whole opener: "Sure."
        assert second[:1].isupper(), (prompt, out[:60])  # then a sentence from its start
        assert first_divergence_word(native, out)[0] == 0


def test_the_divergence_word_is_unchanged():
    """The documented rule (the write-up's histogram) still decides where the texts part."""
    for text in load_agree_prompts():
        native, out = quant(text, "default")
        d = divergence_word(text, 0)
        if d < len(native.split()):
            assert first_divergence_word(native, out)[0] == d, text
    for prompt in PROMPTS:
        native, out = quant(prompt, "coding")
        d = divergence_word(prompt, 0)
        if d < len(native.split()):
            assert first_divergence_word(native, out)[0] == d, prompt
