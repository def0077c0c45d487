"""The JSON report: the analysis itself (docs/JSON.md), indented."""

from __future__ import annotations

from typing import Any

import orjson

from lanemon.results.analysis import Analysis, as_analysis
from lanemon.results.common import to_json_obj


def render_json(analysis: Analysis | dict[str, Any]) -> str:
    obj = to_json_obj(as_analysis(analysis))
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n"
