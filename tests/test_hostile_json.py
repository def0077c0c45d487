"""Issue 11 item 7: odd but valid JSON from a server is a failed check or an ignored chunk, never a
traceback: non-string ``content`` in a stream (race), ``text: 123`` and ``choices: [null]`` (check)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hostile_server import HostileServer, head, response, sse

MODELS = {"object": "list", "data": [{"id": "m", "object": "model"}]}
ODD_CHUNKS = [
    {"choices": [{"index": 0, "delta": {"content": 123}}]},
    {"choices": [{"index": 0, "delta": {"content": ["a", "b"]}}]},
    {"choices": [{"index": 0, "delta": {"content": {"text": "x"}}}]},
    {"choices": [{"index": 0, "delta": {"reasoning_content": 7, "content": True}}]},
    {"choices": [{"index": 0, "text": 42, "delta": {"content": "ok"}}]},
    {"choices": [{"index": 0, "delta": {"content": " fine"}, "finish_reason": {"odd": 1}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": "not a list"}}]},
    {"choices": [None, 5]},
    {"choices": [{"index": 0, "text": ["x"]}]},
    {"choices": [{"index": 0, "text": " done"}]},
]


def odd_stream(req):
    if req.path.endswith("/models"):
        return response(200, MODELS)
    parts = [head(200, "text/event-stream")] + [sse(c) for c in ODD_CHUNKS]
    parts += [sse({"choices": [{"index": 0, "delta": {}, "text": "", "finish_reason": "stop"}]}), b"data: [DONE]\n\n"]
    return parts


def lanemon(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
def test_race_survives_non_string_content(chat, tmp_path):
    with HostileServer(odd_stream) as srv:
        out = lanemon("race", "--lane", f"A={srv.url}", "--prompt", "hi", "--max-tokens", "16", "--json",
                      "--record", str(tmp_path / "race.jsonl"), *(["--chat"] if chat else []))
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    lane = result["races"][0]["lanes"]["A"]
    assert lane["error"] is None
    rows = [json.loads(line) for line in (tmp_path / "race.jsonl").read_text().splitlines()[1:]]
    texts = [r["data"]["text"] for r in rows if r["kind"] == "token"]
    assert texts and set(texts) <= {"ok", " fine", " done"}  # only string text was taken


@pytest.mark.parametrize("answer", [
    {"choices": [{"index": 0, "text": 123, "logprobs": None}]},
    {"choices": [None]},
    {"choices": "none"},
    [1, 2, 3],
    b'"just a string"',
    {"choices": [{"index": 0, "text": None, "logprobs": 5}]},
], ids=["text-123", "choices-null", "choices-string", "a-list", "a-string", "text-null"])
def test_check_survives_odd_non_streaming_answers(answer):
    def script(req):
        if req.path.endswith("/models"):
            return response(200, MODELS)
        body = req.json() or {}
        if body.get("stream"):
            return odd_stream(req)
        return response(200, answer)
    with HostileServer(script) as srv:
        out = lanemon("check", srv.url, "--json")
    assert "Traceback" not in out.stderr, out.stderr
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert checks["completion"]["passed"] is False and "choices[0].text" in checks["completion"]["detail"]
    assert checks["logprobs"]["passed"] is False
    assert out.returncode == 1
