"""Deterministic, readable text generation for the simulator.

``generate(prompt_text, seed, category, max_tokens, rng)`` builds a reply
from small per-category banks (short Python functions for coding, numbered
steps for reasoning and math, JSON records for extraction, ...).  All
randomness comes from *rng*; :func:`make_rng` derives it from the prompt and a
seed, so the same prompt and seed give the same text on both lanes (it is the
same model).  The natural length is 60-400 tokens, drawn from *rng*; the text
is cut to ``max_tokens`` tokens (finish_reason ``"length"``), else it ends
naturally (``"stop"``).

This is the single place that decides *what* a lane says; a later change adds
the documented early-divergence rule of the quantized lane A here.
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from .tokenizer import tokenize

__all__ = ["make_rng", "generate", "NATURAL_MIN_TOKENS", "NATURAL_MAX_TOKENS"]

NATURAL_MIN_TOKENS = 60
NATURAL_MAX_TOKENS = 400


def make_rng(prompt_text: str, seed: int | str | None) -> random.Random:
    """A ``random.Random`` seeded from *prompt_text* and *seed* (stable across runs)."""
    h = hashlib.sha256(f"{seed}\x00{prompt_text}".encode("utf-8", "surrogatepass")).digest()
    return random.Random(int.from_bytes(h[:16], "big"))


# ---------------------------------------------------------------------------
# Banks
# ---------------------------------------------------------------------------

_CODE_INTROS = (
    "Here is a small, self-contained implementation:",
    "A straightforward way to do this in Python:",
    "This version keeps the logic easy to test:",
    "Something like the following should work:",
)

_CODE_SNIPPETS = (
    '''def chunked(items, size):
    """Yield successive lists of at most `size` items."""
    if size < 1:
        raise ValueError("size must be positive")
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch''',
    '''def interval_intersection(a, b):
    """Return the overlap of two closed intervals, or None."""
    lo = max(a[0], b[0])
    hi = min(a[1], b[1])
    return (lo, hi) if lo <= hi else None''',
    '''def word_counts(text):
    counts = {}
    for word in text.lower().split():
        word = word.strip(".,;:!?\\"'()")
        if word:
            counts[word] = counts.get(word, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))''',
    '''def binary_search(values, target):
    lo, hi = 0, len(values) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if values[mid] == target:
            return mid
        if values[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1''',
    '''from collections import deque

def bfs(graph, start):
    seen = {start}
    order = []
    queue = deque([start])
    while queue:
        node = queue.popleft()
        order.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order''',
    '''def parse_duration(text):
    """Parse strings like '1h30m' or '45s' into seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    total, number = 0, ""
    for ch in text.strip():
        if ch.isdigit():
            number += ch
        elif ch in units and number:
            total += int(number) * units[ch]
            number = ""
        else:
            raise ValueError(f"bad duration: {text!r}")
    return total''',
    '''import functools

@functools.lru_cache(maxsize=None)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)''',
    '''def percentile(samples, q):
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    k = (len(ordered) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)''',
)

def _snippet(name: str) -> str:
    return next(x for x in _CODE_SNIPPETS if f"def {name}(" in x)


_TOPIC_SNIPPETS = {
    # a prompt naming one of these topics is answered with that code first (the rest as before)
    ("merge", "sorted"): '''def merge_sorted(a, b):
    """Merge two sorted lists into one sorted list (no sort() call)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out + a[i:] + b[j:]

# merge_sorted([1, 4, 9], [2, 3, 10]) -> [1, 2, 3, 4, 9, 10]
# merge_sorted([], [5]) -> [5]''',
    ("binary", "search"): _snippet("binary_search"),
    ("breadth",): _snippet("bfs"),
    ("bfs",): _snippet("bfs"),
    ("fibonacci",): _snippet("fib"),
    ("percentile",): _snippet("percentile"),
    ("duration",): _snippet("parse_duration"),
}


def topic_snippet(prompt_text: str) -> str | None:
    """The code that answers a prompt naming a known topic (every word of a key in it), else None."""
    words = set(re.findall(r"[a-z]+", prompt_text.lower()))
    for key, snippet in _TOPIC_SNIPPETS.items():
        if all(any(w.startswith(k) for w in words) for k in key):
            return snippet
    return None


_CODE_NOTES = (
    "It runs in linear time and uses constant extra memory apart from the output.",
    "Edge cases such as empty input are handled explicitly rather than by accident.",
    "A few unit tests around the boundaries would be worth adding before relying on it.",
    "If performance matters, profile it first; the simple version is usually fast enough.",
    "The function has no side effects, which makes it easy to reuse and to test.",
    "Type hints can be added later without changing the behaviour.",
)

_PROSE = (
    "The harbour was quiet in the early morning, and the light came in low across the water.",
    "Good tools tend to disappear into the work, leaving only the result behind.",
    "Most of the city's older buildings were made from the same pale stone, quarried an hour to the north.",
    "A well-written paragraph moves from a clear claim to the evidence that supports it.",
    "The garden changes more in a single week of spring than in the whole of late summer.",
    "People rarely remember the exact words of a good talk, but they remember how clear it felt.",
    "Rain had left the streets shining, and the cafes were slowly filling again.",
    "What makes a place feel familiar is often a handful of small, repeated details.",
    "The museum's new wing is built around a courtyard that fills with light at noon.",
    "Careful writing is mostly careful thinking that has been given a shape.",
    "The old railway line is now a footpath, lined with birch trees and wild roses.",
    "Every long project has a middle stretch where progress is real but hard to see.",
    "The mountains looked close enough to touch, though they were a day's walk away.",
    "A library is one of the few places where nobody expects you to buy anything.",
)

_REASONING_STEPS = (
    "First, restate the question so that every condition is explicit.",
    "List what is known and what still has to be determined.",
    "Consider the simplest case, since it often shows the pattern.",
    "Check whether any of the conditions contradict each other.",
    "Eliminate the options that break at least one constraint.",
    "Test the remaining candidate against every condition once more.",
    "Look for a counterexample before trusting the general rule.",
    "Separate what follows necessarily from what is merely likely.",
    "Combine the partial results into a single consistent picture.",
    "Confirm that the conclusion does not depend on an unstated assumption.",
)

_REASONING_ENDS = (
    "So the conclusion follows from the constraints alone.",
    "Therefore only one arrangement satisfies every condition.",
    "That settles it: the remaining option is the answer.",
)

_NAMES = ("Mara", "Tomas", "Ines", "Oskar", "Lena", "Amir", "Clara", "Jonas", "Noor", "Felix")
_PLACES = ("the lighthouse", "the old mill", "the harbour market", "the border station",
           "the mountain hut", "the night train", "the orchard", "the empty theatre")
_NARRATIVE = (
    "{a} had not been back to {p} in eleven years.",
    "The door opened before {a} could knock, and {b} stood there holding a lamp.",
    "\"You're late,\" said {b}, though there was no anger in it.",
    "Outside, the wind pushed the rain against the windows in long grey sheets.",
    "{a} set the letter on the table and waited for {b} to read it.",
    "For a while neither of them spoke, and the clock filled the silence.",
    "Somewhere below, a dog barked twice and then went quiet.",
    "{b} folded the letter carefully, as if it might break.",
    "\"Then we leave tonight,\" {a} said, and reached for the coat by the door.",
    "By the time they reached {p}, the sky had begun to clear.",
    "It was only later that {a} understood what {b} had been trying to say.",
    "They walked on without hurrying, the town shrinking behind them.",
)

_SUMMARY_POINTS = (
    "The main finding is that the faster option depends on the workload, not on a single number.",
    "Short, single-user requests favour the lane that reads fewer bytes per token.",
    "Long prompts and many concurrent users favour the lane with faster prefill.",
    "The results come from one run per cell, so small differences should not be over-read.",
    "Quality checks found no difference between the two configurations.",
    "Several open questions remain and are listed for follow-up work.",
    "Costs were dominated by setup time rather than by the measurements themselves.",
    "The recommendation is to choose per job rather than declare an overall winner.",
)

_FIRST = ("Ada", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Juno")
_LAST = ("Novak", "Sato", "Keller", "Moreau", "Okafor", "Lindqvist", "Rossi", "Haddad")
_CITIES = ("Lisbon", "Osaka", "Tallinn", "Denver", "Accra", "Utrecht", "Porto", "Leipzig")
_TAGS = ("invoice", "urgent", "follow-up", "archived", "vip", "draft", "shipping", "refund")

_TRANSLATIONS = (
    ("The meeting has been moved to Thursday morning.", "La réunion a été déplacée à jeudi matin."),
    ("Please send the report before the end of the day.", "Por favor, envía el informe antes del final del día."),
    ("The train to the airport leaves every twenty minutes.", "Der Zug zum Flughafen fährt alle zwanzig Minuten."),
    ("We would like a table for four by the window.", "Nous voudrions une table pour quatre près de la fenêtre."),
    ("The museum is closed on Mondays.", "El museo está cerrado los lunes."),
    ("Thank you for your patience while we fix the problem.", "Vielen Dank für Ihre Geduld, während wir das Problem beheben."),
    ("The weather will be sunny with a light breeze.", "Le temps sera ensoleillé avec une légère brise."),
    ("Could you tell me where the nearest pharmacy is?", "¿Podría decirme dónde está la farmacia más cercana?"),
)

_DEFAULT = (
    "Sure, here is a short overview.",
    "The key idea is to start with the simplest version that works and improve it step by step.",
    "It helps to write down the goal in one sentence before choosing an approach.",
    "Most problems of this kind come down to a few clear trade-offs.",
    "A practical first step is to measure the current situation before changing anything.",
    "If the requirements are still moving, keep the first version small and easy to replace.",
    "Documentation pays off quickly, even when it is only a few lines.",
    "When in doubt, prefer the option that is easier to undo.",
    "Feel free to ask for more detail on any of these points.",
)


# ---------------------------------------------------------------------------
# Per-category unit generators: each returns the next piece of text.
# ---------------------------------------------------------------------------


def _units_coding(rng: random.Random, prompt_text: str = ""):
    snippets = list(_CODE_SNIPPETS)
    rng.shuffle(snippets)
    first = topic_snippet(prompt_text)
    if first is not None:  # the asked-for code first; no extra draw, so other prompts' text is unchanged
        snippets = [first] + [x for x in snippets if x != first]
    yield rng.choice(_CODE_INTROS) + "\n\n"
    for i, snip in enumerate(itertools_cycle(snippets)):
        yield "```python\n" + snip + "\n```\n\n"
        yield rng.choice(_CODE_NOTES) + "\n\n"
        if i % 2 == 1:
            yield "A related helper:\n\n"


def _units_prose(rng: random.Random):
    while True:
        sents = rng.sample(_PROSE, k=rng.randint(3, 5))
        yield " ".join(sents) + "\n\n"


def _units_reasoning(rng: random.Random):
    yield "Let's work through it step by step.\n\n"
    steps = list(_REASONING_STEPS)
    rng.shuffle(steps)
    n = 1
    while True:
        for s in steps:
            yield f"{n}. {s}\n"
            n += 1
            if n % 5 == 0:
                yield "\n" + rng.choice(_REASONING_ENDS) + "\n\n"


def _units_math(rng: random.Random):
    yield "Let's solve it step by step.\n\n"
    n = 1
    total = rng.randint(2, 40)
    yield f"{n}. Start with the given value: x = {total}.\n"
    while True:
        n += 1
        op = rng.choice(("+", "-", "×"))
        k = rng.randint(2, 19)
        if op == "+":
            new = total + k
        elif op == "-":
            new = total - k
        else:
            new = total * k
        yield f"{n}. Apply the next operation: {total} {op} {k} = {new}.\n"
        total = new
        if n % 4 == 0:
            yield f"\nSo far the running result is {total}.\n\n"
        if n % 7 == 0:
            yield f"**Answer:** {total}\n\n"


def _units_narrative(rng: random.Random):
    a, b = rng.sample(_NAMES, 2)
    p = rng.choice(_PLACES)
    while True:
        sents = [s.format(a=a, b=b, p=p) for s in rng.sample(_NARRATIVE, k=rng.randint(3, 4))]
        yield " ".join(sents) + "\n\n"


def _units_summarization(rng: random.Random):
    yield "Summary:\n\n"
    pts = list(_SUMMARY_POINTS)
    while True:
        rng.shuffle(pts)
        for s in pts:
            yield f"- {s}\n"


def _units_extraction(rng: random.Random):
    yield "```json\n"
    i = rng.randint(100, 900)
    while True:
        i += rng.randint(1, 9)
        rec = {
            "id": i,
            "name": f"{rng.choice(_FIRST)} {rng.choice(_LAST)}",
            "city": rng.choice(_CITIES),
            "amount": round(rng.uniform(10, 999), 2),
            "tags": sorted(rng.sample(_TAGS, k=rng.randint(1, 3))),
        }
        yield json.dumps(rec, ensure_ascii=False) + "\n"


def _units_translation(rng: random.Random):
    pairs = list(_TRANSLATIONS)
    while True:
        rng.shuffle(pairs)
        for en, other in pairs:
            yield f"\"{en}\" → \"{other}\"\n"


def _units_default(rng: random.Random):
    yield _DEFAULT[0] + "\n\n"
    body = list(_DEFAULT[1:])
    while True:
        rng.shuffle(body)
        yield " ".join(body[:3]) + "\n\n"


def itertools_cycle(seq):
    while True:
        yield from seq


_UNITS = {
    "coding": _units_coding,
    "prose": _units_prose,
    "reasoning": _units_reasoning,
    "math": _units_math,
    "narrative": _units_narrative,
    "summarization": _units_summarization,
    "extraction": _units_extraction,
    "translation": _units_translation,
    "default": _units_default,
}


def generate(
    prompt_text: str,
    seed: int | str | None,
    category: str,
    max_tokens: int | None,
    rng: random.Random | None = None,
) -> tuple[str, str]:
    """Reply text for *prompt_text* and its finish reason (``"stop"``/``"length"``).

    *rng* supplies all randomness (``make_rng(prompt_text, seed)`` if None).
    The natural length is ``rng.randint(60, 400)`` tokens, reached by whole
    bank units; the result is cut to *max_tokens* tokens if it is longer.
    """
    if rng is None:
        rng = make_rng(prompt_text, seed)
    target = rng.randint(NATURAL_MIN_TOKENS, NATURAL_MAX_TOKENS)
    units = _units_coding(rng, prompt_text) if category == "coding" else _UNITS.get(category, _units_default)(rng)
    parts: list[str] = []
    n = 0
    for unit in units:
        parts.append(unit)
        n += len(tokenize(unit)) + 1  # +1: joins may merge/split a token
        if n >= target:
            break
    text = "".join(parts)
    if category == "extraction":
        text += "```\n"
    text = text.rstrip() if category != "extraction" else text.rstrip("\n")
    pieces = tokenize(text)
    if max_tokens is not None and len(pieces) > max_tokens:
        return "".join(pieces[: max(0, max_tokens)]), "length"
    return text, "stop"
