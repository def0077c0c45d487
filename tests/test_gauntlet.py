"""The agent gauntlet: sandbox, scripted sim agent, the tool-call loop on real sims, JSON, CLI."""

from __future__ import annotations

import ast
import asyncio
import builtins
import io
import json
import random
import statistics
from pathlib import Path

import httpx
import orjson
import pytest

import lanemon.workloads.gauntlet.sandbox as sandbox_mod
from lanemon.cli.main import main as cli_main
from lanemon.cli.common import demo_lanes
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import Recording
from lanemon.reports.json_schema import validate
from lanemon.results.common import as_result, to_json_obj
from lanemon.results.gauntlet import GauntletResult, GauntletTool
from lanemon.sim.agent import TOOL_CALL_TOKENS
from lanemon.sim.server import SimThread
from lanemon.workloads.gauntlet import (READ_FILE_TOOL, GauntletConfig, GauntletRun, build_system_prompt, first_instruction, gauntlet_results, merge_tool_deltas, summary_sentence)
from lanemon.workloads.gauntlet.results import RepsSeen
from lanemon.workloads.gauntlet.sandbox import make_chain, next_file_named
from lanemon.workloads.harness import Harness

TS = 0.05


def run(lanes, config: GauntletConfig, recorder=None) -> tuple[dict, GauntletRun, Harness]:
    harness = Harness(lanes, recorder=recorder)

    async def go():
        await harness.connect()
        g = GauntletRun(harness, config)
        try:
            return await g.run(), g
        finally:
            await harness.aclose()

    result, g = asyncio.run(go())
    return result, g, harness


# ---------------------------------------------------------------- sandbox (pure)

def test_chain_links_every_file_and_hides_the_secret_at_the_end():
    sb, chain = make_chain(20, random.Random(7))
    assert len(sb.files) == 20 and chain.first == chain.names[0]
    name, seen = chain.first, []
    while True:
        res = sb.read(name)
        assert res.ok
        seen.append(name)
        nxt = next_file_named(res.text)
        if nxt is None:
            break
        name = nxt
    assert seen == list(chain.names)
    assert f"Secret answer: {chain.secret}" in sb.files[seen[-1]]
    assert chain.secret not in "".join(sb.files[n] for n in seen[:-1])
    sb2, chain2 = make_chain(20, random.Random(8))
    assert not set(sb2.files) & set(sb.files)  # fresh names per rep


@pytest.mark.parametrize(("path", "reason"), [
    ("../../etc/passwd", "traversal"),
    ("a/../b.txt", "traversal"),
    ("..", "traversal"),
    ("/etc/passwd", "absolute"),
    ("\\\\server\\share", "absolute"),
    ("C:\\Windows\\win.ini", "absolute"),
    ("~/.ssh/id_rsa", "absolute"),
    ("file:///etc/passwd", "absolute"),
    ("notes.txt\x00.png", "nul"),
    ("link -> /etc/passwd", "symlink"),
    ("shortcut@", "symlink"),
    ("/proc/self/environ", "symlink"),
    ("missing.txt", "unknown"),
    ("", "empty"),
])
def test_sandbox_refuses_everything_outside_the_chain(path, reason):
    sb, chain = make_chain(3, random.Random(1))
    res = sb.read(path)
    assert not res.ok and res.reason == reason
    assert res.text.startswith("error: ")
    assert sb.read(chain.first).ok
    assert not sb.read(chain.first.upper()).ok  # exact names only, no case folding
    assert not sb.read("./" + chain.first).ok


def test_sandbox_module_has_no_path_to_the_filesystem():
    tree = ast.parse(Path(sandbox_mod.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("open", "exec", "eval", "__import__"), node.func.id
        elif isinstance(node, ast.Attribute):
            assert node.attr not in ("read_text", "read_bytes", "open"), node.attr
    assert imported <= {"__future__", "random", "re", "dataclasses"}, imported


def test_system_prompt_is_built_to_size_and_tool_deltas_merge():
    for n in (1000, 2000, 6000):
        for tpc in (0.25, 0.4):  # sized in the lane's tokens: the ratio its usage showed
            assert n - 40 <= len(build_system_prompt(n, tokens_per_char=tpc)) * tpc <= n
    calls = merge_tool_deltas([
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"pa'}},
        {"index": 0, "function": {"arguments": 'th": "x.txt"}'}},
    ])
    assert [(c.id, c.name, c.arguments) for c in calls] == [("call_1", "read_file", '{"path": "x.txt"}')]


def test_summary_sentence_shapes():
    lanes = {"A": RepsSeen(reps=3, correct=3, median_wall_s=30.4, tool_calls=[20, 20, 20]),
             "B": RepsSeen(reps=3, correct=3, median_wall_s=22.4, tool_calls=[20, 20, 20])}
    assert summary_sentence(lanes, 20) == ("B finished the 20-hop chain in 22.4 s vs A 30.4 s (median of 3); "
                                           "both 3/3 correct with 20 tool calls")
    lanes["A"] = RepsSeen(reps=3, correct=2, median_wall_s=30.4, tool_calls=[20, 25, 20])
    assert summary_sentence(lanes, 20).endswith("; B 3/3 correct (20 tool calls), A 2/3 correct (20–25 tool calls)")


# ---------------------------------------------------------------- the sim agent over HTTP

def test_sim_streams_the_agent_tool_call_in_pieces_like_real_servers():
    sb, chain = make_chain(2, random.Random(3))
    messages = [{"role": "system", "content": build_system_prompt(800)},
                {"role": "user", "content": first_instruction(chain.first, 2)}]
    body = {"model": "deepseek-v4.1-flash", "messages": messages, "tools": [READ_FILE_TOOL], "stream": True,
            "temperature": 0, "stream_options": {"include_usage": True}}
    with SimThread("sglang-native", time_scale=0.02) as sim:
        with httpx.stream("POST", sim.base_url + "/chat/completions", json=body, timeout=30) as resp:
            chunks = [orjson.loads(line[5:]) for line in resp.iter_lines()
                      if line.startswith("data:") and line[5:].strip() != "[DONE]"]
        deltas = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks
                  if c["choices"] and c["choices"][0]["delta"].get("tool_calls")]
        assert deltas[0] == {"index": 0, "id": deltas[0]["id"], "type": "function",
                             "function": {"name": "read_file", "arguments": ""}}
        assert len(deltas) >= 3 and all(set(d) == {"index", "function"} for d in deltas[1:])
        assert json.loads("".join(d["function"]["arguments"] for d in deltas)) == {"path": chain.first}
        assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"
        assert chunks[-1]["usage"]["completion_tokens"] == TOOL_CALL_TOKENS
        # the tool result holds the secret: the agent answers in text
        messages += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": sb.files[chain.names[-1]]}]
        reply = httpx.post(sim.base_url + "/chat/completions", timeout=30,
                           json={**body, "messages": messages, "stream": False}).json()
        assert chain.secret in reply["choices"][0]["message"]["content"]
        assert reply["choices"][0]["finish_reason"] == "stop"
        # without the gauntlet sentence the generic tool rule still applies (no read_file call)
        plain = httpx.post(sim.base_url + "/chat/completions", timeout=30, json={
            **body, "stream": False, "messages": [{"role": "user", "content": "hello there"}]}).json()
        assert plain["choices"][0]["finish_reason"] != "tool_calls"


# ---------------------------------------------------------------- the loop on real sims

def server_rep_seconds(lane_url: str, *, reps: int, turns: int) -> list[float]:
    """Per rep, the simulator's own time on that rep's chain turns (sum of each request's e2e in its trace)."""
    trace = httpx.get(lane_url.removesuffix("/v1") + "/sim/trace", timeout=30).json()["requests"]
    chat = [r for r in trace if r["endpoint"] == "chat.completions" and r["status"] == "ok"]
    chain = chat[-reps * turns:]  # the calibration requests come first
    assert len(chain) == reps * turns, len(chat)
    return [sum(r["e2e_s"] for r in chain[i * turns:(i + 1) * turns]) for i in range(reps)]


def test_demo_gauntlet_calibration_and_results_from_the_recording(tmp_path):
    path = tmp_path / "g.jsonl"
    with demo_lanes(TS) as lanes:
        recorder = Recorder(path, make_header("gauntlet", [lane.public() for lane in lanes]))
        result, _, harness = run(lanes, GauntletConfig(reps=3, seed=11, time_scale=TS), recorder)
        recorder.close()
        # the simulators' own account of the same requests: each rep's 21 turns, server time only
        server = {lane.name: server_rep_seconds(lane.url, reps=3, turns=21) for lane in lanes}
    assert isinstance(result, GauntletResult)
    a, b = result.lanes["A"], result.lanes["B"]
    for lane in (a, b):
        assert lane.correct == 3 and lane.reps == 3
        assert lane.tool_calls == [20, 20, 20] and lane.malformed_calls == [0, 0, 0]
        assert [len(t) for t in lane.turns] == [21, 21, 21]
        first = lane.turns[0]
        assert [t.turn for t in first] == list(range(21))
        assert all(t.completion_tokens == 50 for t in first[:20]) and first[20].tool is None
        assert first[0].prompt_tokens < first[-1].prompt_tokens  # the transcript grows
    assert a.turns[0][5].cached_tokens == 0 and b.turns[0][5].cached_tokens > 0
    # the simulator models the write-up's 30.4 s against 22.4 s (1.36x): judged on its own trace, so a busy
    # machine adding the same client time to every turn of both lanes cannot move it
    ratio = statistics.median(server["A"]) / statistics.median(server["B"])
    assert 1.2 <= ratio <= 1.55, server
    # lanemon's walls hold all of the server's time (a chain cannot finish faster than its turns took the
    # server) and order the lanes the same way
    for name, lane in (("A", a), ("B", b)):
        assert all(w >= s - 0.005 for w, s in zip(lane.wall_s, server[name])), (name, lane.wall_s, server[name])
    assert b.median_wall_s < a.median_wall_s, (a.wall_s, b.wall_s, server)
    assert result.summary.startswith("B finished the 20-hop chain in")
    assert result.summary.endswith("both 3/3 correct with 20 tool calls")
    # the recording alone gives the same result, and its JSON reads back as the same result
    rebuilt = gauntlet_results(list(Recording(path).events()))
    assert rebuilt == result
    assert as_result(orjson.loads(orjson.dumps(to_json_obj(rebuilt))), GauntletResult) == result


def test_hostile_agent_gets_tool_errors_and_nothing_outside_the_sandbox_is_read(monkeypatch):
    touched: list[str] = []
    real_open = builtins.open

    def spy(file, *a, **kw):
        if "passwd" in str(file):
            touched.append(str(file))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    with demo_lanes(TS, agent="traversal") as lanes:
        result, g, _ = run(lanes, GauntletConfig(hops=3, reps=1, seed=5, time_scale=TS))
    assert touched == []
    for name, lane in result.lanes.items():
        assert lane.correct == 0 and lane.tool_calls == [2] and lane.stopped == ["answer"]
        tools = [t.tool for t in lane.turns[0] if t.tool]
        assert tools == [GauntletTool(name="read_file", path="../../etc/passwd", ok=False),
                         GauntletTool(name="read_file", path="/etc/passwd", ok=False)]
        seen = [m["content"] for m in g.transcripts[(name, 0)] if m["role"] == "tool"]
        assert seen == ["error: path traversal ('..') is not allowed ('../../etc/passwd')",
                        "error: absolute path '/etc/passwd' is outside the sandbox; use a name from the chain"]
        assert "root:" not in json.dumps(g.transcripts[(name, 0)])
        assert g.transcripts[(name, 0)][-1]["content"].startswith("I cannot continue the file chain")


def test_malformed_arguments_are_reported_to_the_model_and_counted():
    with demo_lanes(TS, agent="malformed") as lanes:
        result, g, _ = run(lanes, GauntletConfig(hops=3, reps=1, seed=2, time_scale=TS))
    for name, lane in result.lanes.items():
        assert lane.malformed_calls == [1]
        assert lane.tool_calls == [4] and lane.correct == 1
        first_result = next(m for m in g.transcripts[(name, 0)] if m["role"] == "tool")["content"]
        assert first_result.startswith("error: malformed arguments for read_file: arguments are not valid JSON")


def test_turn_budget_stops_a_looping_agent():
    with demo_lanes(TS, agent="loop") as lanes:
        result, _, _ = run(lanes, GauntletConfig(hops=3, reps=2, max_turns=4, seed=3, time_scale=TS))
    for lane in result.lanes.values():
        assert lane.stopped == ["budget", "budget"] and lane.correct == 0
        assert lane.tool_calls == [4, 4] and [len(t) for t in lane.turns] == [4, 4]
    assert result.config.max_turns == 4


def test_a_lane_whose_usage_no_tokenizer_gives_keeps_the_estimate_and_a_bounded_prompt():
    """A lane that says 5 prompt tokens whatever it is sent (the hostile lanes of the security tests) made the
    ratio 5/7,800 then 5/3,000,000 tokens per character: the first turn's system prompt was to be ~10^9
    characters (the gauntlet step of test_hostile_fullrun spun until its timeout)."""
    from hostile_server import HostileLane, HostileServer

    from lanemon.config import LaneConfig
    from lanemon.measure.bounds import TOKENS_PER_CHAR
    from lanemon.workloads.prompts import usage_tokens_per_char

    assert usage_tokens_per_char(2000, 8000) == 0.25
    assert usage_tokens_per_char(5, 8000) is None and usage_tokens_per_char(40_000, 8000) is None
    assert usage_tokens_per_char(True, 4) is None and usage_tokens_per_char(10**400, 8000) is None
    assert usage_tokens_per_char(0, 8000) is None and usage_tokens_per_char(5, 0) is None
    lane = HostileLane("s", unauthorized_every=0, stream_error_every=0, escapes=False)
    with HostileServer(lane) as srv:
        harness = Harness([LaneConfig("A", f"http://127.0.0.1:{srv.port}/v1")])
        g = GauntletRun(harness, GauntletConfig(hops=2, reps=1, max_turns=2, seed=1))

        async def go():
            await harness.connect()
            try:
                await g.calibrate("A")
                # checked before a turn is built: the old ratio made the first turn's prompt take for ever
                assert g.tokens_per_char.get("A") is None, g.tokens_per_char  # the typical ratio stayed
                return await g.run()
            finally:
                await harness.aclose()

        result = asyncio.run(go())
        sent = [len(r.body) for r in srv.requests if r.path.endswith("/chat/completions")]
    cal = [e.data for e in harness.events if e.data.get("phase") == "calibrate"]
    assert cal[0]["tokens_per_char"] == 0.25
    assert "5 prompt tokens for" in cal[0]["counted_from"] and "not a possible ratio" in cal[0]["counted_from"]
    # every request: the 1,950-token prompt at 4 characters per token plus the transcript, not megabytes
    assert len(sent) == 2 + 2 and max(sent) < 20_000, sent  # calibrate() called twice: by hand, then by run()
    assert TOKENS_PER_CHAR[0] <= 0.25 <= TOKENS_PER_CHAR[1]
    assert result.lanes["A"].reps == 1 and result.lanes["A"].tool_calls == [2]


# ---------------------------------------------------------------- CLI

def test_cli_json_is_one_object_and_bad_input_exits_2(tmp_path, capsys):
    rec = tmp_path / "cli.jsonl"
    code = cli_main(["gauntlet", "--demo", "--json", "--time-scale", str(TS), "--hops", "3", "--reps", "2",
                     "--record", str(rec), "--seed", "4"])
    out = capsys.readouterr()
    assert code == 0
    result = json.loads(out.out)
    assert result["bench"] == "gauntlet" and set(result["lanes"]) == {"A", "B"}
    assert all(lane["correct"] == 2 and lane["tool_calls"] == [3, 3] for lane in result["lanes"].values())
    assert result["config"]["hops"] == 3 and result["config"]["time_scale"] == TS
    # the printed JSON is the published contract (strictly), and what the recording of the same run gives
    validate("gauntlet", result)
    rebuilt = gauntlet_results(Recording(rec).events())
    assert isinstance(rebuilt, GauntletResult) and to_json_obj(rebuilt) == result
    for bad in (["--system-prompt-tokens", "10"], ["--hops", "100000"]):
        assert cli_main(["gauntlet", "--demo", "--json", *bad]) == 2
    for bad in (["--hops", "0"], ["--reps", "x"], ["--max-turns", "-1"]):
        with pytest.raises(SystemExit) as exc:
            cli_main(["gauntlet", "--demo", "--json", *bad])
        assert exc.value.code == 2
    assert cli_main(["gauntlet", "--json", "--lane", "A=http://127.0.0.1:9/v1", "--lanes", "Z"]) == 2
    err = capsys.readouterr().err
    assert "--lanes: unknown lane(s) Z" in err


def test_a_lanes_rep_figures_are_the_results_own():
    """workloads/gauntlet/results.py rep_figures: per rep its turns, ΣTTFT and Σdecode (a turn without one adds
    nothing), the first and last prompt tokens that are known; the medians over reps of the sums and the TTFT
    share of them; per turn the median over the reps that reached it."""
    from lanemon.results.gauntlet import GauntletTurn
    from lanemon.workloads.gauntlet.results import rep_figures

    def turn(i, ttft, dec, prompt, out=10, calls=1):
        return GauntletTurn(turn=i, prompt_tokens=prompt, cached_tokens=None, ttft_s=ttft, decode_s=dec,
                            completion_tokens=out, tool=None, calls=calls)

    reps = [[turn(0, 0.5, 0.25, None), turn(1, 1.0, 0.25, 200), turn(2, None, None, 300, calls=0)],
            [turn(0, 1.5, 0.75, 100), turn(1, 2.0, 0.25, 250, out=30)],
            [turn(0, 0.5, 0.5, 100)]]
    got = rep_figures(reps)
    assert got["turn_count"] == [3, 2, 1]
    assert got["ttft_sum_s"] == [1.5, 3.5, 0.5] and got["decode_sum_s"] == [0.5, 1.0, 0.5]
    assert got["first_prompt_tokens"] == [200, 100, 100] and got["last_prompt_tokens"] == [300, 250, 100]
    assert (got["median_ttft_sum_s"], got["median_decode_sum_s"]) == (1.5, 0.5)
    assert got["ttft_share"] == 0.75
    by_turn = {c.turn: c for c in got["by_turn"]}
    assert sorted(by_turn) == [0, 1, 2]
    assert (by_turn[0].ttft_s, by_turn[0].decode_s, by_turn[0].prompt_tokens) == (0.5, 0.5, 100.0)
    assert (by_turn[1].ttft_s, by_turn[1].completion_tokens, by_turn[1].tool) == (1.5, 20.0, True)
    assert (by_turn[2].ttft_s, by_turn[2].prompt_tokens, by_turn[2].tool) == (None, 300.0, False)
    empty = rep_figures([])
    assert empty["median_ttft_sum_s"] is None and empty["ttft_share"] is None and empty["by_turn"] == []



def test_the_lanes_reps_seen_are_one_definition_for_the_result_and_the_screen():
    """workloads/gauntlet/results.py reps_seen: the result's lane and the gauntlet screen's fold (lanes_seen) both
    count reps and correct ones and take the median wall over the walls as wall_s holds them (4 places)."""
    from lanemon.folds.gauntlet import GauntletState, RepEnd
    from lanemon.ui.screens.gauntlet import lanes_seen
    from lanemon.workloads.gauntlet.results import reps_seen

    seen = reps_seen([30.123456, 29.0, 31.0], [True, False, True], [20, 20, 21])
    assert (seen.reps, seen.correct, seen.median_wall_s, seen.tool_calls) == (3, 2, 30.1235, [20, 20, 21])
    assert reps_seen([], [], []).median_wall_s is None
    state = GauntletState(["A", "B"])
    state.lane("A").results += [RepEnd.of({"correct": True, "wall_s": 30.123456, "tool_calls": 20}),
                                RepEnd.of({"correct": False, "wall_s": 29.0, "tool_calls": 20})]
    assert lanes_seen(state) == {"A": reps_seen([30.123456, 29.0], [True, False], [20, 20])}  # B: no rep yet
