"""The simulator's answers to qeval tasks.

Rule: a chat request whose **last user message**, stripped of leading and
trailing whitespace, is exactly the ``prompt`` of a task the simulator knows
(``qeval_answers.json`` beside this module) is a qeval task.  The simulator
then replies with that task's ``reference`` text (a correct answer), unless
the task is on the lane's miss list, in which case it replies with the task's
``wrong`` text (a plausible answer that fails the scorer for the task's own
reason: buggy code, a JSON bad escape, a wrong count, a wrong number).  Any
other prompt gets the ordinary generated text.

The data file is the simulator's own copy of the prompts and scripted answers
of lanemon's qeval task bank: the simulator never imports the measuring side
(the workloads).  ``tests/test_sim_qeval_data.py`` checks that the copy agrees
with the bank and regenerates it (``python tests/test_sim_qeval_data.py --write``).

The default miss list is the write-up's four shared misses, so both simulated
lanes score 71/75 with the same misses.  Only the text changes: the lane's
TTFT, decode rates and streaming are those of its profile (the reply is
tokenized and streamed like any other).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from importlib import resources

from .tokenizer import tokenize

__all__ = ["DEFAULT_MISSES", "QevalResponder", "parse_misses", "load_answers", "DATA_FILE"]

DEFAULT_MISSES: tuple[str, ...] = ("code_interval_intersect", "json_escape", "json_count", "math_m9")
DATA_FILE = "qeval_answers.json"


def parse_misses(text: str | Iterable[str] | None) -> frozenset[str]:
    """``"a,b,c"`` or an iterable -> a set of task ids; None -> the default four; ``""`` -> miss nothing."""
    if text is None:
        return frozenset(DEFAULT_MISSES)
    items = text.split(",") if isinstance(text, str) else list(text)
    return frozenset(s.strip() for s in items if s and s.strip())


@functools.lru_cache(maxsize=1)
def load_answers() -> dict[str, dict[str, str]]:
    """Task id -> ``{"prompt", "reference", "wrong"}`` from the simulator's data file, in bank order."""
    text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    return {t["id"]: {"prompt": t["prompt"], "reference": t["reference"], "wrong": t["wrong"]}
            for t in json.loads(text)["tasks"]}


@functools.lru_cache(maxsize=1)
def _prompts() -> dict[str, tuple[str, str, str]]:
    return {t["prompt"].strip(): (tid, t["reference"], t["wrong"]) for tid, t in load_answers().items()}


class QevalResponder:
    """Answers qeval prompts for one simulated lane."""

    def __init__(self, misses: str | Iterable[str] | None = None) -> None:
        self.misses = parse_misses(misses)
        unknown = sorted(self.misses - set(load_answers()))
        if unknown:
            raise ValueError(f"unknown qeval task id(s) in the miss list: {', '.join(unknown)}")

    def answer(self, last_user: str) -> str | None:
        """The reply text for a qeval prompt, or None when ``last_user`` is not one."""
        hit = _prompts().get(last_user.strip())
        if hit is None:
            return None
        tid, reference, wrong = hit
        return wrong if tid in self.misses else reference

    def reply(self, last_user: str, max_tokens: int | None) -> tuple[str, str] | None:
        """``(text, finish_reason)`` for a qeval prompt, cut to ``max_tokens`` sim tokens ("length"); else None."""
        text = self.answer(last_user)
        if text is None:
            return None
        pieces = tokenize(text)
        if max_tokens is not None and len(pieces) > max_tokens:
            return "".join(pieces[:max_tokens]), "length"
        return text, "stop"
