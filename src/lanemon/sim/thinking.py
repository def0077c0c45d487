"""Thinking-model behaviour of the simulator: the reasoning text and how long it runs.

A thinking request (server ``--thinking``, or per request ``chat_template_kwargs.thinking: true`` or a
``reasoning_effort``) first streams ``delta.reasoning_content`` -- a short readable "thinking"
paragraph -- and then the answer in ``delta.content``.  Reasoning tokens decode at the lane's own
rate, so TTFO - TTFT = reasoning tokens / rate.  Usage reports them in
``completion_tokens_details.reasoning_tokens`` (and inside ``completion_tokens``).  Chat only.
"""

from __future__ import annotations

import random
from typing import Any

from .tokenizer import tokenize

#: Reasoning tokens per request at ``reasoning_effort: medium`` (the server's ``--reasoning-tokens``).
DEFAULT_REASONING_TOKENS = 64

#: Budget multiplier per ``reasoning_effort``; ``none`` switches thinking off.
EFFORT_SCALE = {"minimal": 0.25, "low": 0.5, "medium": 1.0, "high": 2.0}

_OPENERS = (
    "Okay, let me think about what is being asked here.",
    "Let me work through this carefully before answering.",
    "Alright, first I should understand the request.",
)
_STEPS = (
    "The user wants a clear answer, so I should keep it focused.",
    "I should check the key facts first and then decide on a structure.",
    "There are a couple of ways to approach this; the simplest one is probably best.",
    "Let me make sure I am not missing an edge case.",
    "I will outline the main points, then write them out in order.",
    "It helps to start from what is certain and build from there.",
    "I should double-check the numbers before I commit to them.",
    "A short example would make this easier to follow.",
)
_CLOSERS = (
    "Good, I think I have what I need; time to write the answer.",
    "That settles it, so now I can answer.",
)


def thinking_switch(body: dict[str, Any], default: bool) -> tuple[bool, float]:
    """(thinking on?, budget multiplier) for one request body.

    ``chat_template_kwargs.thinking`` (bool) wins; else ``reasoning_effort`` (``none`` = off, other
    levels on); else the server's default.  The multiplier comes from ``reasoning_effort``.
    """
    effort = body.get("reasoning_effort")
    scale = EFFORT_SCALE.get(effort, 1.0) if isinstance(effort, str) else 1.0
    kwargs = body.get("chat_template_kwargs")
    if isinstance(kwargs, dict):
        for key in ("thinking", "enable_thinking"):
            if isinstance(kwargs.get(key), bool):
                return kwargs[key], scale
    if isinstance(effort, str):
        return effort != "none", scale
    return default, scale


def reasoning_pieces(prompt_text: str, rng: random.Random, n_tokens: int) -> list[str]:
    """Exactly ``n_tokens`` tokens of readable thinking text (a short paragraph, cut at a token)."""
    if n_tokens <= 0:
        return []
    parts = [rng.choice(_OPENERS)]
    steps = list(_STEPS)
    rng.shuffle(steps)
    i = 0
    while len(tokenize(" ".join(parts))) < n_tokens:
        if i < len(steps):
            parts.append(steps[i])
        else:
            parts.append(rng.choice(_CLOSERS))
        i += 1
    return tokenize(" ".join(parts))[:n_tokens]
