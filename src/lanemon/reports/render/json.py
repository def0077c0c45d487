"""The JSON report: the analysis dict itself (docs/JSON.md), indented; a typed result in it (``lanemon.results``)
as the JSON its command's ``--json`` prints."""

from __future__ import annotations

from typing import Any

import orjson

from lanemon.results.common import Result, to_json_obj


def render_json(analysis: dict[str, Any]) -> str:
    return orjson.dumps(analysis, default=_typed, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"


def _typed(obj: Any) -> Any:
    """A typed result as its JSON object (orjson asks for what it cannot write itself)."""
    if isinstance(obj, Result):
        return to_json_obj(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")
