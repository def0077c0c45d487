"""The simulator's scripted agent: it walks the gauntlet's file chain.

:func:`agent_reply` is consulted by :func:`decide_reply` (below)
before the generic tool rule.  It acts only on a *gauntlet session*: the
request offers a tool named ``read_file`` and a user message says
``The first file is `NAME` `` (the sentence ``lanemon gauntlet`` writes; see
docs/GAUNTLET.md).  Anything else returns ``None`` and the generic rule in
:mod:`lanemon.sim.tools` applies.

Policies (``create_app(..., agent=NAME)``, ``SimThread(agent=)``, ``--agent``):

``chain`` (default) -- reads the conversation's last message:

* the user's instruction → ``read_file`` on the first file it names;
* a tool result with ``Next file: NAME`` → ``read_file(NAME)``;
* a tool result with ``Secret answer: S`` → a text answer containing S;
* a tool error (``error: ...``) or a result naming nothing → a text answer
  saying it cannot continue (and quoting the tool's message).

``traversal`` -- a hostile agent: asks for ``../../etc/passwd``, then for
``/etc/passwd``, then answers in text that it could not read them.

``malformed`` -- its first call carries broken JSON arguments
(``{"path": "NAME"`` without the closing brace); after the harness reports
the error it starts over properly and behaves like ``chain``.

``loop`` -- never answers: it re-reads the first file forever (for turn
budgets).

Every tool call is ``TOOL_CALL_TOKENS`` (50) completion tokens, as the
write-up's "tool calls are about 50 tokens": the name chunk, the JSON
arguments streamed in up to five pieces, and the model's closing tool-call
markup, which a server's tool parser decodes but never streams (so it costs
decode time after the last argument chunk).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from .tokenizer import tokenize
from .tools import ToolCall, decide_tool_call

__all__ = ["AGENTS", "TOOL_CALL_TOKENS", "agent_reply", "decide_reply", "is_gauntlet_session"]

AGENTS = ("chain", "traversal", "malformed", "loop")
TOOL_NAME = "read_file"
TOOL_CALL_TOKENS = 50

FIRST_FILE_RE = re.compile(r"The first file is `([^`\n]+)`")
NEXT_FILE_RE = re.compile(r"^Next file: (\S+)\s*$", re.MULTILINE)
SECRET_RE = re.compile(r"^Secret answer: (\S+)\s*$", re.MULTILINE)
HOSTILE_PATHS = ("../../etc/passwd", "/etc/passwd")


def _tool_names(tools: Any) -> set[str]:
    out = set()
    for t in tools or ():
        if isinstance(t, dict) and isinstance(t.get("function"), dict):
            name = t["function"].get("name")
            if isinstance(name, str):
                out.add(name)
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return ""


def first_file(messages: list[dict]) -> str | None:
    """The first file named by a user message of the conversation (None: not a gauntlet)."""
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user":
            found = FIRST_FILE_RE.search(_text(m.get("content")))
            if found:
                return found.group(1)
    return None


def is_gauntlet_session(messages: list[dict], tools: Any) -> bool:
    return TOOL_NAME in _tool_names(tools) and first_file(messages) is not None


def _calls_so_far(messages: list[dict]) -> int:
    return sum(len(m.get("tool_calls") or ()) for m in messages
               if isinstance(m, dict) and m.get("role") == "assistant")


def _call(path: str, rng: random.Random, *, broken: bool = False) -> ToolCall:
    args = json.dumps({"path": path})
    if broken:
        args = args[:-1]  # the closing brace never comes
    call_id = "call_" + "".join(rng.choice("0123456789abcdef") for _ in range(24))
    used = max(1, len(tokenize(TOOL_NAME))) + len(tokenize(args))
    return ToolCall(id=call_id, name=TOOL_NAME, arguments=args, tail_tokens=max(0, TOOL_CALL_TOKENS - used))


def _cannot(reason: str) -> str:
    return f"I cannot continue the file chain: {reason.strip()[:200]}"


def _follow(last: dict, rng: random.Random) -> ToolCall | str:
    """The ``chain`` step after a tool result."""
    content = _text(last.get("content"))
    if content.startswith("error"):
        return _cannot(f"the tool said {content!r}")
    secret = SECRET_RE.search(content)
    if secret:
        return f"I followed the chain to its last file. The secret answer is {secret.group(1)}."
    nxt = NEXT_FILE_RE.search(content)
    if nxt:
        return _call(nxt.group(1), rng)
    return _cannot("the last file names no next file and holds no secret")


def agent_reply(messages: list[dict], tools: Any, tool_choice: Any, rng: random.Random,
                agent: str = "chain") -> ToolCall | str | None:
    """The scripted agent's reply (a tool call or a text answer), or None if this is not its session."""
    if tool_choice == "none" or not isinstance(messages, list) or not messages:
        return None
    if not is_gauntlet_session(messages, tools):
        return None
    first = first_file(messages)
    assert first is not None
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    role = last.get("role")
    calls = _calls_so_far(messages)
    if agent == "loop":
        return _call(first, rng)
    if agent == "traversal":
        if calls < len(HOSTILE_PATHS):
            return _call(HOSTILE_PATHS[calls], rng)
        return _cannot(f"reading outside the sandbox was refused ({_text(last.get('content'))!r})")
    if agent == "malformed":
        if calls == 0:
            return _call(first, rng, broken=True)
        if calls == 1 and role == "tool":  # the error about the broken call: start over properly
            return _call(first, rng)
    if role == "user":
        return _call(first, rng)
    if role == "tool":
        return _follow(last, rng)
    return None


def decide_reply(
    messages: list[dict],
    tools: list[dict] | None,
    tool_choice: Any,
    rng: random.Random,
    last_user_text: str = "",
    agent: str = "chain",
) -> ToolCall | str | None:
    """The reply decided by policy: a tool call, a scripted text answer, or None (generate text).

    The gauntlet agent (:func:`agent_reply`, policy *agent*)
    gets the first word; otherwise :func:`decide_tool_call` applies.
    """
    reply = agent_reply(messages, tools, tool_choice, rng, agent)
    if reply is not None:
        return reply
    return decide_tool_call(messages, tools, tool_choice, rng, last_user_text)
