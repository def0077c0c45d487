"""Greedy divergence of the quantized lane: a documented, seedable rule.

The write-up ran greedy agreement on 40 raw-text prompts x 128 tokens between
lane A (EXL3 3.5 bpw) and lane B (native): 0/40 exact, median first divergence
at word 2, 9/40 agree for ten or more words, 18/40 diverge at word 0.  The
simulator reproduces that signature with this rule:

* Lanes whose profile is in :data:`DIVERGENT_PROFILES` (the quantized
  ``tensorfold-exl3``) diverge; the native lane never does, so two native lanes
  agree exactly.
* Only at temperature 0 (greedy); sampled text is already random.
* Per prompt, ``u = sha256(SALT, seed, prompt)`` mapped to [0, 1) picks the
  first divergent word ``d`` from the write-up's histogram:
  u < 0.45 -> 0;  < 0.475 -> 1;  < 0.55 -> 2;  < 0.775 -> 3..9 (uniform);  else 10..49 (uniform).
* The lane says the native text's first ``d`` words, then a different word
  (:data:`SWAPS`), then continues from an alternative generation of its own.
  Where word ``d`` starts a sentence (the reply's first word, or after ``.:!?`` or a line break) the
  different word is a short sentence of its own (:data:`OPENERS`, ``Sure.``) and the alternative
  generation goes on from a sentence start of its own, so the text never begins mid-phrase
  (``our like the following should work:`` before issue 40).
  When the native reply has ``d`` or fewer words, the texts agree within the
  window if it was cut by ``max_tokens``; if the native reply ended by itself,
  the quantized lane goes on past its end (the divergence shows at the native length).

``SALT`` was chosen (by trying salts in order) so that the shipped 40-prompt
agreement set (``lanemon/workloads/data/agree-v1.txt``) at seed 0 gives the
write-up's figures exactly; any other prompt set follows the same histogram in
expectation.
"""

from __future__ import annotations

import hashlib
import re

from .text import generate, make_rng
from .tokenizer import tokenize

DIVERGENT_PROFILES = frozenset({"tensorfold-exl3"})
SALT = "exl3-3.5bpw-82"

_WORDS = re.compile(r"\S+|\s+")
SWAPS = ("a", "the", "this", "its", "one", "some", "each", "our", "that", "every")
OPENERS = ("Sure.", "Okay.", "Right.", "Certainly.", "Alright.")
_SENTENCE_END = (".", ":", "!", "?")


def _starts_sentence(parts: list[str], i: int) -> bool:
    """Is ``parts[i]`` (a word of :data:`_WORDS`' split) the first word of a sentence or line?"""
    if i == 0:
        return True
    gap = parts[i - 1]
    if "\n" in gap:
        return True
    return i >= 2 and parts[i - 2].endswith(_SENTENCE_END)


def divergence_word(prompt: str, seed: int | str = 0, salt: str | None = None) -> int:
    """The 0-based word index at which the quantized lane leaves the native text."""
    salt = SALT if salt is None else salt
    h = hashlib.sha256(f"{salt}\x00{seed}\x00{prompt}".encode("utf-8", "surrogatepass")).digest()
    u = int.from_bytes(h[:8], "big") / 2**64
    v = int.from_bytes(h[8:16], "big") / 2**64
    if u < 0.45:
        return 0
    if u < 0.475:
        return 1
    if u < 0.55:
        return 2
    if u < 0.775:
        return 3 + int(v * 7)
    return 10 + int(v * 40)


def apply(profile_name: str, prompt: str, seed: int, text: str, finish: str, *, temperature: float,
          category: str, max_tokens: int | None) -> tuple[str, str]:
    """The quantized lane's version of ``text`` (unchanged for other lanes or sampled requests)."""
    if profile_name not in DIVERGENT_PROFILES or temperature != 0:
        return text, finish
    d = divergence_word(prompt, seed)
    parts = _WORDS.findall(text)
    word_idx = [i for i, p in enumerate(parts) if not p.isspace()]
    if d >= len(word_idx) and finish == "length":
        return text, finish  # the divergence lies beyond the requested window: identical within it
    if d >= len(word_idx):
        # the native reply ended first: the quantized lane does not stop there (its end-of-text
        # decision is the first thing that differs), so the divergence shows at the native length
        cut = len(parts)
        native_word = ""
        parts = parts + [" "]
    else:
        cut = word_idx[d]
        native_word = parts[cut]
    alt_text, _ = generate(prompt, f"{seed}:quant", category, None, make_rng(prompt, f"{seed}:quant"))
    alt_parts = _WORDS.findall(alt_text)
    alt_idx = [i for i, p in enumerate(alt_parts) if not p.isspace()]
    # a sentence start: a short sentence, then the alternative text from a sentence start at or after word d
    start = next((j for j in alt_idx[d:] if _starts_sentence(alt_parts, j)), None) \
        if _starts_sentence(parts, cut) else None
    if start is not None:
        swap = next(w for w in OPENERS[(len(prompt) + d) % len(OPENERS):] + OPENERS if w != native_word)
        tail = "".join(alt_parts[start:])
    else:
        swap = next(w for w in SWAPS[(len(prompt) + d) % len(SWAPS):] + SWAPS if w != native_word)
        tail = "".join(alt_parts[alt_idx[d + 1] - 1:]) if d + 1 < len(alt_idx) else ""
    head = "".join(parts[:cut]) + swap
    out = head + (tail if not tail or tail[:1].isspace() else " " + tail)
    if max_tokens is not None:
        toks = tokenize(out)
        if len(toks) > max_tokens:
            return "".join(toks[:max_tokens]), "length"
    return out, finish
