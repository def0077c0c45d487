"""Tool calls are checked, not just seen: arguments must be a JSON object fitting the tool's schema."""

from __future__ import annotations

from lanemon.workloads.check import TOOL, tool_check
from lanemon.workloads.toolcalls import ToolCall, call_problem, merge_tool_deltas, schema_problem


def deltas(name, *parts):
    out = [{"index": 0, "id": "c1", "type": "function", "function": {"name": name}}]
    out += [{"index": 0, "function": {"arguments": p}} for p in parts]
    return out


def test_streamed_deltas_merge_into_whole_calls():
    calls = merge_tool_deltas(deltas("get_weather", '{"ci', 'ty": "Lis', 'bon"}') +
                              [{"index": 1, "function": {"name": "other", "arguments": "{}"}}, "junk", None])
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", '{"city": "Lisbon"}'), ("other", "{}")]


def test_check_passes_only_usable_calls():
    ok = tool_check(merge_tool_deltas(deltas("get_weather", '{"city": "Lisbon"}')))
    assert ok.passed and "arguments match the schema" in ok.detail
    cases = {
        '"38"': 'arguments are "\\"38\\"", not a JSON object',  # the vLLM answer check once called a tool call
        "null": 'arguments are "null", not a JSON object',
        "": "arguments are empty, not a JSON object",
        '{"city": ': "arguments are not valid JSON",
        "{}": "lacks the required 'city'",
        '{"city": 38}': "arguments.city is int, the schema asks for string",
    }
    for args, why in cases.items():
        r = tool_check(merge_tool_deltas(deltas("get_weather", args)))
        assert r.passed is False and why in r.detail, (args, r.detail)
    r = tool_check(merge_tool_deltas(deltas("get_time", '{"city": "x"}')))
    assert not r.passed and "not one of the tools offered" in r.detail
    r = tool_check([])
    assert not r.passed and r.detail == "accepted, but no tool call came back"


def test_schema_subset():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
                                               "flag": {"type": "boolean"}},
              "required": ["n"], "additionalProperties": False}
    assert schema_problem({"n": 3, "tags": ["a"], "flag": True}, schema) is None
    assert "is bool" in schema_problem({"n": True}, schema)  # a boolean is not an integer
    assert "arguments.tags[1] is not one of" in schema_problem({"n": 1, "tags": ["a", "c"]}, schema)
    assert "'x', which the schema does not allow" in schema_problem({"n": 1, "x": 0}, schema)
    assert call_problem(ToolCall(name="get_weather", arguments='{"city": "Porto"}'), [TOOL]) is None
