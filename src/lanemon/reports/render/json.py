"""The JSON report: the analysis dict itself (docs/JSON.md), indented."""

from __future__ import annotations

from typing import Any

import msgspec
import orjson


def _builtins(obj: Any) -> Any:
    """A typed result inside the analysis (``lanemon.results``) as the JSON its ``--json`` prints."""
    if isinstance(obj, msgspec.Struct):
        return msgspec.to_builtins(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON")


def render_json(analysis: dict[str, Any]) -> str:
    return orjson.dumps(analysis, default=_builtins,
                        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
