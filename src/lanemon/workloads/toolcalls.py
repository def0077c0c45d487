"""Tool calls in a stream: merge the OpenAI deltas into whole calls and check them against the tool.

A lane that "returns a tool call" has not necessarily returned a usable one: its
``arguments`` must be a JSON object that fits the tool's JSON Schema.  The
checker covers the part of JSON Schema that tool definitions use (``type``,
``properties``, ``required``, ``enum``, ``items``, ``additionalProperties:
false``); anything else in a schema is not checked.  Pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass
class ToolCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


def merge_tool_deltas(deltas: Iterable[Any]) -> list[ToolCall]:
    """OpenAI streaming tool-call deltas (by ``index``) merged into whole calls."""
    calls: dict[int, ToolCall] = {}
    for delta in deltas:
        if not isinstance(delta, dict):
            continue
        idx = delta.get("index", 0)
        idx = idx if isinstance(idx, int) else 0
        call = calls.setdefault(idx, ToolCall())
        if isinstance(delta.get("id"), str) and delta["id"]:
            call.id = delta["id"]
        fn = delta.get("function")
        if isinstance(fn, dict):
            if isinstance(fn.get("name"), str) and fn["name"] and not call.name:
                call.name = fn["name"]
            if isinstance(fn.get("arguments"), str):
                call.arguments += fn["arguments"]
    return [calls[i] for i in sorted(calls)]


_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                       "integer": (int,), "number": (int, float), "null": (type(None),)}


def schema_problem(value: Any, schema: Any, where: str = "arguments") -> str | None:
    """Why ``value`` does not fit ``schema`` (the subset tool definitions use), or None."""
    if not isinstance(schema, dict):
        return None
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _TYPES:
        ok = isinstance(value, _TYPES[expected]) and not (expected in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return f"{where} is {type(value).__name__}, the schema asks for {expected}"
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return f"{where} is not one of the schema's values"
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for key in schema.get("required") or []:
            if key not in value:
                return f"{where} lacks the required {key!r}"
        if schema.get("additionalProperties") is False:
            extra = [k for k in value if k not in props]
            if extra:
                return f"{where} has {extra[0]!r}, which the schema does not allow"
        for key, sub in props.items():
            if key in value:
                why = schema_problem(value[key], sub, f"{where}.{key}")
                if why:
                    return why
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value[:100]):
            why = schema_problem(item, schema["items"], f"{where}[{i}]")
            if why:
                return why
    return None


def call_problem(call: ToolCall, tools: list[dict[str, Any]]) -> str | None:
    """Why a call is not a usable call of one of ``tools`` (OpenAI tool definitions), or None."""
    by_name = {t["function"]["name"]: t["function"] for t in tools
               if isinstance(t, dict) and isinstance(t.get("function"), dict) and "name" in t["function"]}
    if call.name not in by_name:
        return f"it calls {call.name[:40]!r}, not one of the tools offered" if call.name else "the call has no name"
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else None
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(args, dict):
        shown = json.dumps(call.arguments[:40]) if call.arguments.strip() else "empty"
        return f"arguments are {shown}, not a JSON object"
    return schema_problem(args, by_name[call.name].get("parameters") or {})
