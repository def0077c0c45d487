"""``lanemon check``: the smoke test to run right after a lane boots.

Seven checks, in the spirit of the write-up's ``sanity.py ... 6/6``: the model
list answers, a non-streaming completion, a streaming completion, a streaming
chat, a usage block in the stream, tool calls, and logprobs.  The usage block,
tool calls and logprobs are reported but not required: many production boots
refuse tools or logprobs, and a lane that sends no usage still serves (lanemon
then counts chunks and marks token figures as estimated).
"""

from __future__ import annotations

from typing import Any

from lanemon.config import LaneConfig, public_url
from lanemon.client.http import LaneClient
from lanemon.measure.metrics import RequestMetrics, request_metrics
from lanemon.measure.records import BURST
from lanemon.results.check import CheckItem, CheckResult
from lanemon.events import Clock, Event
from lanemon.workloads.toolcalls import ToolCall, call_problem, merge_tool_deltas

CHECK_PROMPT = "Name three colours of the sea, separated by commas."
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def first_choice(obj: Any) -> dict[str, Any] | None:
    """``obj["choices"][0]`` of a non-streaming answer when it is an object, else None (odd but valid
    JSON -- ``choices: [null]``, a list body, a string -- never raises)."""
    if not isinstance(obj, dict):
        return None
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return choices[0]


def check(name: str, passed: bool, required: bool, detail: str, ttft_s: float | None = None,
          tok_s: float | None = None) -> CheckItem:
    """One check's result."""
    return CheckItem(name=name, passed=passed, required=required, detail=detail, ttft_s=ttft_s, tok_s=tok_s)


def no_rate_reason(m: RequestMetrics) -> str:
    """Why a streamed reply that carried tokens has no decode rate (``request_metrics`` withholds it): its chunks
    came in a burst, it did not complete, or every token came in its first chunk (nothing to time after it)."""
    if BURST in m.flags:
        return "no decode rate (its chunks arrived in a burst: not the lane's speed)"
    if not m.ok:
        return f"no decode rate (the stream ended {m.outcome or 'unfinished'}, not complete)"
    return "no decode rate (every token came in its first chunk: no token after it to time)"


def report(lane: str, url: str, model: str | None, checks: list[CheckItem]) -> CheckResult:
    """The whole report: passed when every required check did."""
    return CheckResult(lane=lane, url=url, model=model, passed=all(c.passed for c in checks if c.required),
                       checks=checks)


def tool_check(calls: list[ToolCall]) -> CheckItem:
    """Passed only when a call came back and every call names the tool with arguments that parse as a
    JSON object fitting its schema (``"38"`` is not a call of ``get_weather(city)``)."""
    if not calls:
        return check("tools", False, False, "accepted, but no tool call came back")
    for call in calls:
        why = call_problem(call, [TOOL])
        if why:
            return check("tools", False, False, f"tool call returned, but unusable: {why}")
    return check("tools", True, False, f"{len(calls)} tool call(s) of get_weather, arguments match the schema")


async def run_check(lane: LaneConfig, *, max_tokens: int = 24) -> CheckResult:
    """Run every check on ``lane`` (a required one failing does not stop the others, except ``models``)."""
    events: list[Event] = []
    client = LaneClient(lane, clock=Clock(), emit=events.append, connect_timeout=5.0, stall_timeout=60.0)
    url = public_url(lane.url)  # never the credentials or the query
    checks: list[CheckItem] = []
    try:
        probe = await client.probe_models()
        if not probe.ok:
            checks.append(check("models", False, True, probe.message if probe.message is not None else "no answer"))
            return report(lane.name, url, client.model, checks)
        checks.append(check("models", True, True,
                                  f"{len(probe.models or ())} model(s), using {probe.model} "
                                  f"({(probe.latency_s or 0.0) * 1000:.0f} ms)"))
        # 1. non-streaming completion
        body = client.build_body("completions", prompt=CHECK_PROMPT, max_tokens=max_tokens,
                                 extra={"temperature": 0})
        body["stream"] = False
        body.pop("stream_options", None)
        status, obj, secs, err = await client.post_json("completions", body)
        text = None
        if err is None:
            text = (first_choice(obj) or {}).get("text")
            if not isinstance(text, str):
                err = "response has no choices[0].text string"
        checks.append(check("completion", err is None and bool(text), True,
                                  err or f"{len(text or '')} chars in {secs:.2f} s"))
        # 2/3. streaming completion and chat; 4. usage
        usage_seen = []
        for name, endpoint in (("stream_completion", "completions"), ("stream_chat", "chat")):
            body = client.build_body(endpoint, prompt=CHECK_PROMPT, max_tokens=max_tokens, extra={"temperature": 0})
            rec = await client.stream(endpoint, body, purpose="check")
            m = request_metrics(rec)
            if rec.error:
                checks.append(check(name, False, True, rec.error.message or "failed"))
            elif m.chunks == 0:
                checks.append(check(name, False, True, "stream carried no token"))
            else:
                rate = f", {m.decode_tok_s:.1f} tok/s" if m.decode_tok_s else f", {no_rate_reason(m)}"
                est = " (est.)" if m.tokens_estimated or m.reasoning_estimated else ""
                checks.append(check(name, True, True, f"{m.output_tokens} tokens{est}, "
                                          f"TTFT {m.ttft_s * 1000:.0f} ms{rate}", m.ttft_s, m.decode_tok_s))
            usage_seen.append(rec.completion_tokens is not None)
        # reported, not required: a lane without usage still serves; lanemon then counts chunks (estimated)
        checks.append(check("usage", all(usage_seen), False,
                                  "usage block in both streams" if all(usage_seen)
                                  else "no usage block with stream_options.include_usage (token counts will be estimated)"))
        # 5. tools (reported, not required)
        body = client.build_body("chat", prompt="What is the weather in Lisbon? Use the tool.", max_tokens=64,
                                 extra={"temperature": 0, "tools": [TOOL], "tool_choice": "required"})
        rec = await client.stream("chat", body, purpose="check")
        if rec.error:
            checks.append(check("tools", False, False, rec.error.message or "failed"))
        else:
            checks.append(tool_check(merge_tool_deltas(
                d for ev in events if ev.req == rec.req for d in (ev.data.get("tool_calls") or []))))
        # 6. logprobs (reported, not required)
        body = client.build_body("completions", prompt=CHECK_PROMPT, max_tokens=4, extra={"temperature": 0, "logprobs": 1})
        body["stream"] = False
        body.pop("stream_options", None)
        status, obj, secs, err = await client.post_json("completions", body)
        logprobs = (first_choice(obj) or {}).get("logprobs")
        ok = err is None and isinstance(logprobs, (dict, list)) and bool(logprobs)
        checks.append(check("logprobs", ok, False,
                                  "token logprobs returned" if ok else (err or "accepted, but no logprobs in the answer")))
        return report(lane.name, url, client.model, checks)
    finally:
        await client.aclose()
