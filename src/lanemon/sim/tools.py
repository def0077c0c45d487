"""Tool-call policy of the simulated model.

:func:`decide_tool_call` is the one place that decides whether a chat reply is
a tool call and what it contains.  Today's rule:

* ``tool_choice == "none"`` → never;
* ``tool_choice == "required"`` → call the tool named in the last user
  message, else the first tool;
* ``tool_choice == {"type": "function", "function": {"name": X}}`` → call X;
* otherwise (``"auto"`` / absent) → call a tool only if its name appears in
  the last user message.

Arguments are a JSON object that fills every *required* property with a short
deterministic value (strings by property name, numbers 1, booleans true, ...).

What the server calls is :func:`lanemon.sim.agent.decide_reply`: it asks the
scripted gauntlet agent (the write-up's 20-hop file chain) first and falls back
to :func:`decide_tool_call`.  This module never imports the agent (the agent
builds on it).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from .tokenizer import tokenize

__all__ = ["ToolCall", "decide_tool_call", "build_arguments", "split_arguments"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text
    tail_tokens: int = 0
    """Tokens decoded after the last argument chunk and never streamed (the
    model's closing tool-call markup, swallowed by the server's tool parser)."""


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        fn = tool.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            return fn["name"]
    return None


def _string_value(prop: str, rng: random.Random) -> str:
    p = prop.lower()
    if "path" in p or "file" in p:
        return rng.choice(("notes/start.txt", "data/hop-01.txt", "README.md", "src/main.py"))
    if "url" in p:
        return "https://example.com/docs"
    if "city" in p or "location" in p:
        return rng.choice(("Lisbon", "Osaka", "Tallinn", "Denver"))
    if "query" in p or "search" in p or "q" == p:
        return rng.choice(("lane benchmark results", "prefill throughput", "tool call format"))
    if "lang" in p:
        return "en"
    if "unit" in p:
        return "celsius"
    if "name" in p:
        return rng.choice(("alpha", "beta", "gamma"))
    return rng.choice(("example", "default", "sample", "value"))


def _value_for(prop: str, schema: Any, rng: random.Random) -> Any:
    if not isinstance(schema, dict):
        return _string_value(prop, rng)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    typ = schema.get("type", "string")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "string")
    if typ == "integer":
        return 1
    if typ == "number":
        return 1.0
    if typ == "boolean":
        return True
    if typ == "array":
        return []
    if typ == "object":
        return build_arguments(schema, rng)
    return _string_value(prop, rng)


def build_arguments(parameters: Any, rng: random.Random) -> dict:
    """A JSON-able dict filling each required property of *parameters*."""
    if not isinstance(parameters, dict):
        return {}
    props = parameters.get("properties") or {}
    required = parameters.get("required") or []
    out: dict[str, Any] = {}
    for name in required:
        if isinstance(name, str):
            out[name] = _value_for(name, props.get(name) if isinstance(props, dict) else None, rng)
    return out


def decide_tool_call(
    messages: list[dict],
    tools: list[dict] | None,
    tool_choice: Any,
    rng: random.Random,
    last_user_text: str = "",
) -> ToolCall | None:
    """The tool call the model makes for this chat request, or None."""
    if not tools:
        return None
    by_name = {n: t for t in tools if (n := _tool_name(t))}
    if not by_name:
        return None
    if tool_choice == "none":
        return None
    mentioned = next((n for n in by_name if n in last_user_text), None)
    chosen: str | None = None
    if isinstance(tool_choice, dict):
        fn = tool_choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if name in by_name:
            chosen = name
    elif tool_choice == "required":
        chosen = mentioned or next(iter(by_name))
    else:  # "auto" or absent
        chosen = mentioned
    if chosen is None:
        return None
    params = by_name[chosen]["function"].get("parameters")
    args = build_arguments(params, rng)
    call_id = "call_" + "".join(rng.choice("0123456789abcdef") for _ in range(24))
    return ToolCall(id=call_id, name=chosen, arguments=json.dumps(args, ensure_ascii=False))


def split_arguments(arguments: str, pieces: int = 5) -> list[list[str]]:
    """Token groups of *arguments*, streamed as successive ``arguments`` deltas.

    Returns up to *pieces* non-empty groups of tokens (at least one group, even
    for ``"{}"``), in order; ``"".join`` of all tokens is *arguments*.
    """
    toks = tokenize(arguments)
    if not toks:
        return [[]]
    pieces = max(1, min(pieces, len(toks)))
    size = -(-len(toks) // pieces)
    return [toks[i : i + size] for i in range(0, len(toks), size)]
