"""The JSON report: the analysis dict itself (docs/JSON.md), indented."""

from __future__ import annotations

from typing import Any

import orjson


def render_json(analysis: dict[str, Any]) -> str:
    return orjson.dumps(analysis, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
