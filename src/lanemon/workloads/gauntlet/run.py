"""The 20-hop agent gauntlet: lanemon plays an agent harness against each lane.

Per rep, a fresh agent session: a system prompt of realistic size (agent
instructions built to ``system_prompt_tokens``), one tool ``read_file(path)``
in OpenAI tools format, and a chain of ``hops`` virtual files with fresh
random names (:mod:`lanemon.workloads.gauntlet.sandbox`) where each file names
the next and the last holds a secret.  The first user message asks the agent
to follow the chain and report the secret.  lanemon executes every tool call
against the sandbox, appends the assistant's tool-call message and the tool
result, and loops until the model answers in text or the turn budget
(``max_turns``, default hops + 5) runs out.

Lanes run side by side (one task per lane), reps one after another.

Recording (see docs/GAUNTLET.md and docs/JSON.md):

* every request carries ``meta = {"bench": "gauntlet", "rep": r, "turn": t, "hops": N}``;
* MARK events (``data.bench == "gauntlet"``), by ``phase``: ``start`` (with
  ``config``), ``rep_start`` (lane, rep, first file), ``tool`` (one per
  executed call: name, path, ok, malformed, reason), ``rep_end`` (correct,
  tool_calls, malformed_calls, wall_s, turns, stopped, answer) and ``end``.

:func:`gauntlet_results` rebuilds the ``--json`` object from those events
alone, and the live run computes its result with the same function, so a
recording always reports what the run reported.  :class:`GauntletState` is
the pure fold the TUI renders.  Nothing here imports Textual.
"""

from __future__ import annotations

import asyncio
import json
import random
import secrets
from collections.abc import Callable
from typing import Any

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.workloads.gauntlet.config import (BENCH, READ_FILE_TOOL, STATUS, GauntletConfig, build_system_prompt,
                                               count_tokens, first_instruction)
from lanemon.workloads.gauntlet.results import gauntlet_results
from lanemon.workloads.gauntlet.sandbox import ToolResult, make_chain
from lanemon.workloads.harness import Harness
from lanemon.workloads.prompts import DEFAULT_TOKENS_PER_CHAR, usage_tokens_per_char
from lanemon.workloads.toolcalls import ToolCall, merge_tool_deltas

# ---------------------------------------------------------------------------
# Tool calls
# ---------------------------------------------------------------------------


def parse_path_argument(arguments: str) -> tuple[str | None, str | None]:
    """(path, None) or (None, why the arguments are malformed)."""
    try:
        obj = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(obj, dict):
        return None, "arguments must be a JSON object"
    path = obj.get("path")
    if not isinstance(path, str):
        return None, "arguments need a string 'path'"
    return path, None


# ---------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------




class RepEnd(msgspec.Struct, omit_defaults=True):
    """What a rep's ``rep_end`` mark says (these keys, in this order; ``error`` only when there was one)."""

    rep: int
    correct: bool
    tool_calls: int
    malformed_calls: int
    wall_s: float
    turns: int
    stopped: str
    """``answer``, ``budget`` (out of turns) or ``error``."""
    answer: str
    """The final answer, cut to 500 characters."""
    error: str | None = None


class GauntletRun:
    """One gauntlet over a harness's lanes; ``await run()`` returns the results dict."""

    def __init__(self, harness: Harness, config: GauntletConfig,
                 progress: Callable[[str], None] | None = None) -> None:
        self.harness = harness
        self.config = config
        self.progress = progress
        seed = config.seed if config.seed is not None else secrets.randbits(32)
        self.seed = seed
        self._watch: dict[str, list[Any]] = {}
        self._unsubscribe = harness.bus.subscribe(self._collect)
        self._prompt_cache: dict[str, str] = {}
        self.tokens_per_char: dict[str, float] = {}
        """Each lane's tokens per character of the instructions, measured by :meth:`calibrate`."""
        self.transcripts: dict[tuple[str, int], list[dict[str, Any]]] = {}
        """The messages of every rep as last sent plus the final reply (for tests and debugging)."""

    def _collect(self, ev: Event) -> None:
        if ev.kind == schema.TOKEN and ev.req in self._watch:
            tools = ev.data.get("tool_calls")
            if isinstance(tools, list):
                self._watch[ev.req].extend(tools)

    def _mark(self, phase: str, lane: str | None = None, **data: Any) -> None:
        self.harness.mark(BENCH, lane, bench=BENCH, phase=phase, **data)

    def _say(self, line: str) -> None:
        if self.progress is not None:
            self.progress(line)

    def system_prompt(self, session: str, turn: int, calls: int, lane: str | None = None) -> str:
        cfg = self.config
        tpc = self.tokens_per_char.get(lane or "", DEFAULT_TOKENS_PER_CHAR)
        if cfg.stable_prompt:
            key = f"stable:{tpc}"
            if key not in self._prompt_cache:
                self._prompt_cache[key] = build_system_prompt(cfg.system_prompt_tokens, tokens_per_char=tpc)
            return self._prompt_cache[key]
        status = STATUS.format(session=session, turn=turn + 1, budget=cfg.turn_budget, calls=calls)
        reserve = count_tokens(STATUS.format(session=session, turn=cfg.turn_budget, budget=cfg.turn_budget,
                                             calls=cfg.turn_budget), tpc)
        return build_system_prompt(cfg.system_prompt_tokens, status=status, status_tokens=reserve, tokens_per_char=tpc)

    async def calibrate(self, lane: str) -> None:
        """Measure the lane's tokens per character of the instructions (one recorded 1-token request;
        a ``gauntlet`` mark with phase ``calibrate`` says what was found), so its system prompt is
        ``system_prompt_tokens`` of *its* tokens.  Without usage, or with a usage no tokenizer gives
        (:func:`usage_tokens_per_char`), the last good ratio, else the typical one, stays (said so)."""
        client = self.harness.clients[lane]
        pt = None
        counted_from = "estimate (the lane reported no usage)"
        for attempt in range(2):  # twice: the ratio of the prompt as first built, then of the prompt it gives
            tpc = self.tokens_per_char.get(lane, DEFAULT_TOKENS_PER_CHAR)
            text = build_system_prompt(self.config.system_prompt_tokens, tokens_per_char=tpc)
            body = client.build_body("chat", messages=[{"role": "system", "content": text},
                                                       {"role": "user", "content": "ok"}],
                                     max_tokens=1, extra={"temperature": 0})
            rec = await client.stream("chat", body, purpose="calibrate",
                                      meta={"gauntlet": "calibrate", "chars": len(text), "attempt": attempt})
            pt = rec.prompt_tokens if rec.ok else None
            if not pt:
                break
            ratio = usage_tokens_per_char(pt, len(text))
            if ratio is None:
                counted_from = (f"{'usage of the first request' if attempt else 'estimate'} (the lane said {pt} "
                                f"prompt tokens for {len(text)} characters: not a possible ratio)")
                break
            self.tokens_per_char[lane] = ratio
            counted_from = "usage"
        self._mark("calibrate", lane, chars=len(text), prompt_tokens=pt,
                   tokens_per_char=round(self.tokens_per_char.get(lane, DEFAULT_TOKENS_PER_CHAR), 6),
                   counted_from=counted_from)

    async def run(self) -> GauntletResult:
        cfg = self.config
        h = self.harness
        config = cfg.public(h.names)
        config["seed"] = self.seed
        self._mark("start", config=config, lanes=h.public_lanes())
        try:
            await asyncio.gather(*(self._lane(name) for name in h.names))
        finally:
            self._unsubscribe()
        self._mark("end")
        return gauntlet_results(h.events)

    async def _lane(self, lane: str) -> None:
        await self.calibrate(lane)
        for rep in range(self.config.reps):
            await self._rep(lane, rep)

    async def _rep(self, lane: str, rep: int) -> None:
        cfg = self.config
        client = self.harness.clients[lane]
        rng = random.Random(f"{self.seed}:{rep}")  # same chain on every lane for a rep
        sandbox, chain = make_chain(cfg.hops, rng)
        session = f"{rng.randrange(16**8):08x}"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": ""},
            {"role": "user", "content": first_instruction(chain.first, cfg.hops)},
        ]
        clock = self.harness.clock
        t0 = clock.now()
        self._mark("rep_start", lane, rep=rep, first=chain.first, hops=cfg.hops)
        tool_calls = malformed = 0
        stopped, answer, error = "budget", "", None
        turns = 0
        for turn in range(cfg.turn_budget):
            turns = turn + 1
            messages[0]["content"] = self.system_prompt(session, turn, tool_calls, lane)
            req = client.new_request_id()
            self._watch[req] = []
            body = client.build_body("chat", messages=messages, max_tokens=cfg.max_tokens,
                                     extra={"tools": [READ_FILE_TOOL], "tool_choice": "auto", "temperature": 0})
            try:
                rec = await client.stream("chat", body, purpose=BENCH, req_id=req,
                                          meta={"bench": BENCH, "rep": rep, "turn": turn, "hops": cfg.hops})
            finally:
                deltas = self._watch.pop(req, [])
            if not rec.ok:
                stopped, error = "error", (rec.error.message if rec.error is not None else None) or "request failed"
                break
            calls = merge_tool_deltas(deltas)
            if not calls:
                stopped, answer = "answer", rec.text
                break
            messages.append({
                "role": "assistant", "content": rec.text or None,
                "tool_calls": [{"id": c.id or f"call_{turn}_{i}", "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments}}
                               for i, c in enumerate(calls)],
            })
            for i, c in enumerate(calls):
                tool_calls += 1
                result, is_malformed, path = self._execute(sandbox, c)
                malformed += is_malformed
                self._mark("tool", lane, rep=rep, turn=turn, name=c.name, path=path, ok=result.ok,
                           malformed=is_malformed, reason=result.reason, calls=tool_calls)
                messages.append({"role": "tool", "tool_call_id": c.id or f"call_{turn}_{i}", "content": result.text})
        wall = (clock.now() - t0) / 1e9
        self.transcripts[(lane, rep)] = messages + ([{"role": "assistant", "content": answer}] if answer else [])
        correct = stopped == "answer" and chain.secret in answer
        end = RepEnd(rep=rep, correct=correct, tool_calls=tool_calls, malformed_calls=malformed,
                     wall_s=round(wall, 6), turns=turns, stopped=stopped, answer=answer[:500], error=error or None)
        self._mark("rep_end", lane, **msgspec.to_builtins(end))
        verdict = "correct" if correct else f"FAILED ({stopped})"
        self._say(f"{lane} rep {rep + 1}/{cfg.reps}: {verdict}, {tool_calls} tool calls, {wall:.2f} s")

    @staticmethod
    def _execute(sandbox: Any, call: ToolCall) -> tuple[ToolResult, bool, str | None]:
        """Run one call against the sandbox: (result, malformed?, path asked for)."""
        if call.name != "read_file":
            return ToolResult(False, f"error: unknown tool {call.name!r}; the only tool is read_file",
                              "unknown_tool"), False, None
        path, why = parse_path_argument(call.arguments)
        if path is None:
            return ToolResult(False, f"error: malformed arguments for read_file: {why}; "
                                     'send a JSON object like {"path": "name.txt"}', "malformed"), True, None
        return sandbox.read(path), False, path


async def run_gauntlet(harness: Harness, config: GauntletConfig,
                       progress: Callable[[str], None] | None = None) -> GauntletResult:
    """Probe the lanes (LaneDown if one is down), run the gauntlet, return its result."""
    await harness.connect()
    return await GauntletRun(harness, config, progress).run()


