"""Races: the workload on real simulated lanes, the pure results, the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import types

import pytest

from lanemon.measure import metrics
from lanemon.cli.common import demo_lanes
from lanemon.config import ProbeConfig
from lanemon.folds.race import RaceState
from lanemon.recording.reader import read_events
from lanemon.events import Event
from lanemon.sessions.sources import LiveSession
from lanemon.measure.records import assemble
from lanemon.workloads.harness import Harness
from lanemon.reports.format import ordinal
from lanemon.workloads.race import (BUILTIN_PROMPT, PromptCycle, RacePrompt, race_results, resolve_prompts, run_race, verdict)
from test_race_fixtures import MS, TEXT_A, TEXT_B, race_events, race_lane, typed_race

from lanemon.reports.json_schema import validate
from lanemon.results.common import to_json_obj
from lanemon.results.race import RaceError, RaceLeader, RaceResult

from lanemon.measure.energy import ENERGY_KEYS

LANE_KEYS = {"ttft_s", "ttfo_s", "decode_tok_s", "output_tokens", "reasoning_tokens", "reasoning_estimated",
             "tokens_estimated", "tokens_per_chunk", "chunk_counts_estimated", "total_s", "finish_rank", "error",
             "text", "reasoning_text", "outcome", "flags", "generated_tokens", *ENERGY_KEYS}
RACE_KEYS = {"race", "prompt", "prompt_id", "category", "endpoint", "max_tokens", "lanes", "winner", "margin",
             "winners", "verdict"}
TOP_LANE_KEYS = {"ttft_s", "ttfo_s", "decode_tok_s", "output_tokens", "reasoning_tokens", "tokens_per_chunk",
                 "total_s", "wins", "races_ok", "outcomes", "bursts", *ENERGY_KEYS}  # energy: docs/GPU.md


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lanemon", "race", *args], capture_output=True, text=True,
                          timeout=timeout)


def check_shape(result: dict | RaceResult, lanes=("A", "B"), races: int = 1) -> None:
    """The JSON ``race --json`` prints (or would print, for a typed result) has every key docs/JSON.md names."""
    if isinstance(result, RaceResult):
        result = to_json_obj(result)
    assert result["bench"] == "race"
    assert len(result["races"]) == races
    for race in result["races"]:
        assert set(race) == RACE_KEYS
        assert list(race["lanes"]) == list(lanes)
        for lane in race["lanes"].values():
            assert set(lane) - {"engine_counters", "behind_s", "behind_ratio"} == LANE_KEYS  # engine_counters: where
            # the lane has /metrics; behind_s / behind_ratio: a lane that finished after the winner
            first = race["lanes"].get(race["winner"]) if race["winner"] else None
            if first is not None and first["total_s"] and lane is not first and lane["total_s"] is not None:
                assert lane["behind_s"] == pytest.approx(lane["total_s"] - first["total_s"], abs=2e-4)
                assert lane["behind_ratio"] == pytest.approx(lane["total_s"] / first["total_s"], abs=2e-4)
            else:
                assert "behind_s" not in lane and "behind_ratio" not in lane
        assert set(race["margin"]) == {"runner_up", "total_s_delta", "total_s_ratio", "ttft_s_ratio"}
    assert list(result["lanes"]) == list(lanes)
    for lane in result["lanes"].values():
        assert set(lane) == TOP_LANE_KEYS


# -- the workload on real simulated lanes ------------------------------------------------


async def _race_on(lanes, prompts, endpoint="completions"):
    harness = Harness(lanes)
    try:
        await harness.connect()
        out = []
        for i, p in enumerate(prompts, 1):
            out.append(await run_race(harness, p, i, endpoint=endpoint, max_tokens=48))
    finally:
        await harness.aclose()
    return harness, out


def test_race_gives_one_result_per_lane_matching_request_metrics():
    with demo_lanes(0.05) as lanes:
        harness, [records] = asyncio.run(_race_on(lanes, [BUILTIN_PROMPT]))
    assert list(records) == ["A", "B"]
    result = race_results(harness.events)
    assert isinstance(result, RaceResult)
    check_shape(result)
    race = result.races[0]
    assert race.prompt == BUILTIN_PROMPT.text and race.prompt_id == BUILTIN_PROMPT.id
    assert race.endpoint == "completions" and race.max_tokens == 48
    # every figure is request_metrics of the recorded request
    recorded = {r.lane: r for r in assemble(harness.events) if r.meta.get("bench") == "race"}
    assert set(recorded) == {"A", "B"}
    for name, rec in recorded.items():
        assert rec.meta == {"bench": "race", "race": 1, "prompt_id": BUILTIN_PROMPT.id, "max_tokens": 48,
                            "temperature": 0, "prompt_chars": len(BUILTIN_PROMPT.text)}
        m = metrics.request_metrics(rec)
        lane = race.lanes[name]
        assert lane.error is None
        assert lane.ttft_s == pytest.approx(m.ttft_s, abs=1e-4)
        assert lane.decode_tok_s == pytest.approx(m.decode_tok_s, abs=0.01)
        assert lane.total_s == pytest.approx(m.e2e_s, abs=1e-4)
        assert lane.output_tokens == m.output_tokens == 48  # the sim sends usage; the budget is hit
        assert lane.tokens_estimated is False
        assert lane.text == rec.text and lane.text
        assert records[name].text == rec.text
    # both requests were started at the same instant; each TTFT starts when its own request was written
    # (the wait before that, a connection's set-up or the loop, is the record's queued_ms: lanemon's time)
    # The gap between the two starts is the event loop's (17 ms seen beside CPU hogs), so the test holds the
    # race to what it promises whatever the load: both were started before either had its first token -- a
    # race that ran the lanes one after the other would start the second after the first had ended.
    started = sorted(r.sent_ns - int((r.queued_ms or 0) * 1e6) for r in recorded.values())
    assert started[1] < min(r.token_ns[0] for r in recorded.values())
    assert all(r.queued_ms is not None and r.queued_ms >= 0 for r in recorded.values())
    # finish order follows end time; the winner and margin come from it
    order = sorted(recorded, key=lambda n: recorded[n].end_ns)
    assert [race.lanes[n].finish_rank for n in order] == [1, 2]
    assert race.winner == order[0] and race.margin.runner_up == order[1]
    w, r = race.lanes[order[0]], race.lanes[order[1]]
    assert race.margin.total_s_ratio == pytest.approx(r.total_s / w.total_s, rel=1e-3)
    assert race.margin.ttft_s_ratio == pytest.approx(r.ttft_s / w.ttft_s, rel=1e-3)
    # marks bracket the race
    marks = [e.data for e in harness.events if e.kind == "mark"]
    assert [(m["label"], m["phase"]) for m in marks] == [("race 1", "start"), ("race 1", "end")]
    assert marks[0]["bench"] == "race" and marks[0]["race"] == 1 and marks[0]["prompt"] == BUILTIN_PROMPT.text
    # a single race: the top-level lanes are that race's figures
    assert result.lanes_stat == "last race"
    for name in ("A", "B"):
        top, lane = result.lanes[name], race.lanes[name]
        assert (top.ttft_s, top.decode_tok_s, top.total_s) == (lane.ttft_s, lane.decode_tok_s, lane.total_s)


def test_live_session_race_is_recorded_with_the_session():
    async def scenario(lanes):
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=8), mode="demo")
        events: list[Event] = []
        session.bus.subscribe(events.append)
        runner = asyncio.create_task(session.run())
        try:
            first = await session.race("Write a Python function that merges two sorted lists.", max_tokens=24)
            second = await session.race(RacePrompt("Tell a very short story.", id="story"), endpoint="chat",
                                        max_tokens=16)
        finally:
            session.stop()
            await runner
        return events, first, second

    with demo_lanes(0.05) as lanes:
        events, first, second = asyncio.run(scenario(lanes))
    assert set(first) == set(second) == {"A", "B"}
    assert all(r.ok for r in [*first.values(), *second.values()])
    result = race_results(events)
    check_shape(result, races=2)
    assert [r.race for r in result.races] == [1, 2]
    assert result.races[1].endpoint == "chat" and result.races[1].prompt_id == "story"
    assert result.lanes_stat == "median of 2 races"
    # no probe request overlapped a race on its lanes
    recs = assemble(events)
    for race_rec in (r for r in recs if r.purpose == "race"):
        for probe in (r for r in recs if r.purpose == "probe"):
            assert probe.end_ns < race_rec.sent_ns or probe.sent_ns > race_rec.end_ns


# -- pure results from events -------------------------------------------------------------


def test_race_results_from_fixed_events():
    result = race_results(race_events(races=2, error_in_last=True))
    check_shape(result, races=2)
    first, second = result.races
    a, b = first.lanes["A"], first.lanes["B"]
    assert a.ttft_s == 0.175 and b.ttft_s == 0.22
    assert a.finish_rank == 1 and b.finish_rank == 2
    words = len(TEXT_A.split(" "))
    assert a.output_tokens == words + 4 and a.tokens_estimated is False  # usage wins over chunks
    assert b.output_tokens == len(TEXT_B.split(" ")) and b.tokens_estimated is True
    assert a.text == TEXT_A and b.text == TEXT_B
    assert first.winner == "A"
    assert first.margin.runner_up == "B"
    assert first.margin.total_s_delta == pytest.approx(b.total_s - a.total_s, abs=1e-4)
    assert first.margin.ttft_s_ratio == pytest.approx(0.22 / 0.175, rel=1e-3)
    assert first.margin.total_s_delta == pytest.approx(0.096)
    ratio = first.margin.total_s_ratio
    assert verdict(first).startswith(f"A finished first by 96 ms ({ratio:.2f}x sooner end to end), writing ")
    assert "; also faster per token (" in verdict(first) and verdict(first).endswith("; first token: A, 1.26x sooner")
    assert first.winners.decode.lane == "A" and first.winners.ttft.lane == "A"
    # the second race: B failed, A finished alone; the error is reported, never averaged in
    eb = second.lanes["B"]
    assert eb.error == RaceError(cls="http", message="HTTP 503: engine overloaded")
    assert eb.finish_rank is None and eb.total_s is None and eb.decode_tok_s is None
    assert second.winner == "A" and second.margin.runner_up is None
    assert verdict(second) == "A finished alone; B failed (http)"
    assert result.lanes["A"].wins == 2 and result.lanes["A"].races_ok == 2
    assert result.lanes["B"].races_ok == 1 and result.lanes["B"].ttft_s == 0.22
    assert result.lanes["A"].ttft_s == pytest.approx((0.175 + 0.18) / 2)  # median of two races


def test_race_state_streams_and_stopped_races_are_left_out():
    events = race_events(races=1)
    state = RaceState()
    cut = next(i for i, e in enumerate(events) if e.kind == "token" and e.lane == "B")
    for ev in events[: cut + 3]:
        state.apply(ev)
    view = state.latest
    assert view is not None and not view.complete and state.running
    assert view.lanes["A"].text and view.lanes["B"].text  # text so far
    live = view.lanes["B"].metrics(state.last_t)
    assert live is not None and live.ttft_s == pytest.approx(0.22)
    assert race_results(state).races == []  # not finished yet
    # a cancelled race: its end mark says stopped
    stopped = [e for e in events if not (e.kind == "mark" and e.data.get("phase") == "end")]
    stopped.append(Event(stopped[-1].t + 1, "mark", None, None,
                         {"label": "race 1", "bench": "race", "phase": "end", "race": 1, "stopped": True}))
    assert race_results(stopped).races == []
    # events of other benches and probes are ignored
    assert race_results([Event(1, "mark", None, None, {"bench": "decode", "race": 1})]).races == []


def test_verdict_and_ordinal_words():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
    race = typed_race("A", {"A": {}, "B": {}}, {"runner_up": "B", "total_s_delta": 0.42, "total_s_ratio": 1.18})
    assert verdict(race) == "A finished first by 0.42 s (1.18x sooner end to end)"
    race.margin.total_s_delta, race.margin.total_s_ratio = 0.016, 1.23
    assert verdict(race) == "A finished first by 16 ms (1.23x sooner end to end)"
    assert verdict(typed_race(None, {"A": {"error": {"cls": "connect"}}})) == "no lane completed; A failed (connect)"


# -- prompts ----------------------------------------------------------------------------


@pytest.fixture
def fake_prompt_set(monkeypatch):
    mod = types.ModuleType("lanemon.workloads.prompts")
    items = [
        types.SimpleNamespace(id="code-1", category="coding", max_tokens=300, text="Write a merge function."),
        types.SimpleNamespace(id="prose-1", category="prose", max_tokens=400, text="Describe a harbour."),
        types.SimpleNamespace(id="code-2", category="coding", max_tokens=None, text="Write a stack."),
    ]
    mod.load_prompt_set = lambda: items
    monkeypatch.setitem(sys.modules, "lanemon.workloads.prompts", mod)
    return items


def test_resolve_prompts(tmp_path, fake_prompt_set):
    assert resolve_prompts() == [BUILTIN_PROMPT]
    assert [p.text for p in resolve_prompts(prompts=["x", "y"], repeat=2)] == ["x", "y", "x", "y"]
    f = tmp_path / "long.txt"
    f.write_text("a long prompt\nover two lines\n")
    [p] = resolve_prompts(prompt_file=f)
    assert p.text == "a long prompt\nover two lines\n" and p.id == "long"
    coding = resolve_prompts(category="coding", repeat=3)
    assert [p.id for p in coding] == ["code-1", "code-2", "code-1"]
    assert coding[0].max_tokens == 300 and coding[1].max_tokens is None
    with pytest.raises(ValueError, match="categories: coding, prose"):
        resolve_prompts(category="poetry")
    for bad in ({"prompts": [" "]}, {"prompt_file": tmp_path / "missing.txt"}, {"repeat": 0},
                {"category": "coding", "prompts": ["x"]}):
        with pytest.raises(ValueError):
            resolve_prompts(**bad)
    cycle = PromptCycle()
    assert [cycle().id for _ in range(4)] == ["code-1", "prose-1", "code-2", "code-1"]
    assert cycle.peek().id == "prose-1"


def test_race_modules_import_without_textual():
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "textual" or name.startswith("textual."):
                    raise ImportError("blocked")
        sys.meta_path.insert(0, Block())
        import lanemon.folds.race, lanemon.workloads.race, lanemon.cli.race
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- the command --------------------------------------------------------------------------


def test_cli_json_equals_race_results_of_the_recording(tmp_path):
    path = tmp_path / "race.jsonl"
    out = run_cli("--demo", "--time-scale", "0.05", "--json", "--repeat", "2", "--max-tokens", "40",
                  "--record", str(path))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)  # exactly one JSON object on stdout
    check_shape(result, races=2)
    for race in result["races"]:
        for lane in race["lanes"].values():
            assert lane["error"] is None and lane["output_tokens"] == 40 and lane["text"]
            assert lane["finish_rank"] in (1, 2)
    assert result["lanes_stat"] == "median of 2 races"
    header, events, warnings = read_events(path)
    assert warnings == [] and header["command"] == "race"
    again = race_results(events)  # the typed result; what --json printed decodes strictly into it and equals it
    assert isinstance(again, RaceResult) and to_json_obj(again) == result
    assert validate("race", result) == again
    assert "recording saved" in out.stderr


def test_cli_headless_prints_table_and_verdict():
    out = run_cli("--demo", "--time-scale", "0.05", "--headless", "--no-record", "--chat",
                  "--prompt", "Tell a very short story about a lighthouse keeper.", "--max-tokens", "32")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for word in ("TTFT", "per-stream tok/s", "output tok", "E2E", "rank", "1st", "2nd", "chat"):  # catalogue labels
        assert word in text, text
    # a rate per lane, unless the simulator (50x speed, a busy machine) wrote the reply in one burst
    assert text.count("tok/s") + text.count("one burst") >= 2, text
    # who finished first end to end, in one of its three honest forms (beside CPU hogs B's request may be sent
    # late enough that A ends first on the clock while B took less time, or the two end within 1 ms)
    assert ((" finished first by " in text and "sooner end to end" in text) or " finished first on the clock, but "
            in text or " finished together " in text), text
    assert "first token: " in text, text
    assert "lanemon: race 1/1" in out.stderr


@pytest.mark.parametrize("args", [
    ["--prompt", "", "--demo"],
    ["--prompt-file", "/nonexistent/prompt.txt", "--demo"],
    ["--repeat", "0", "--demo"],
    ["--max-tokens", "many", "--demo"],
    ["--category", "prose", "--prompt", "x", "--demo"],
    ["--json", "--headless", "--demo"],
    ["--lane", "A=notaurl", "--headless"],
    ["--headless"],  # no lanes at all
])
def test_cli_bad_input_is_one_line_exit_2(args):
    out = run_cli(*args, "--no-record")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stdout == ""
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines and "Traceback" not in out.stderr
    assert len(lines) == 1 or lines[0].startswith("usage:")


def test_cli_lane_down_is_one_line_exit_1(tmp_path):
    out = run_cli("--lane", "A=http://127.0.0.1:9/v1", "--json", "--record", str(tmp_path / "r.jsonl"))
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.strip().count("\n") == 0 and "lane A" in out.stderr
    assert not (tmp_path / "r.jsonl").exists()  # nothing ran, nothing recorded


# -- outcomes and the verdict (issue 16) -------------------------------------------------


def _one_lane(lane, race, start, ttft_ms, tokens, step_ms, finish="stop", usage=True, step_us=None):
    req = f"{lane}-r{race}"
    meta = {"endpoint": "completions", "purpose": "race", "bench": "race", "race": race, "prompt_id": "p"}
    evs = [Event(start, "request", lane, req, meta), Event(start + 1 * MS, "first_byte", lane, req, {"status": 200})]
    t = start + ttft_ms * MS
    for _ in range(tokens):
        evs.append(Event(t, "token", lane, req, {"text": "w "}))
        t += int(step_us * 1000 if step_us is not None else step_ms * MS)
    if usage:
        evs.append(Event(t, "usage", lane, req, {"prompt_tokens": 9, "completion_tokens": tokens}))
    evs.append(Event(t, "done", lane, req, {"finish_reason": finish}))
    return evs


def _race(*lanes):
    """One race; each lane ``(name, ttft_ms, tokens, step_ms, finish, kw)``."""
    evs = [Event(0, "mark", None, None, {"label": "race 1", "bench": "race", "phase": "start", "race": 1,
                                         "prompt": "p", "lanes": [lane[0] for lane in lanes]})]
    for name, ttft, tokens, step, finish, kw in lanes:
        evs += _one_lane(name, 1, 1 * MS, ttft, tokens, step, finish, **kw)
    evs.sort(key=lambda e: e.t)
    evs.append(Event(evs[-1].t + MS, "mark", None, None, {"label": "race 1", "bench": "race", "phase": "end",
                                                           "race": 1}))
    return race_results(evs)


def test_verdict_names_the_end_to_end_the_per_token_and_the_first_token_winners_apart():
    # the race: B wrote 105 tokens to A's 174 and finished first, but A was faster per token
    result = _race(("A", 200, 174, 1000 / 88.0, "stop", {}), ("B", 220, 105, 1000 / 74.2, "length", {}))
    race = result.races[0]
    a, b = race.lanes["A"], race.lanes["B"]
    assert race.winner == "B" and a.decode_tok_s == pytest.approx(88.0, abs=0.05)
    assert race.winners.end_to_end.lane == "B" and race.winners.decode.lane == "A"
    assert race.winners.ttft.lane == "A" and race.winners.tokens == {"A": 174, "B": 105}
    ratio = race.margin.total_s_ratio
    assert race.verdict == verdict(race) == (f"B finished first by {race.margin.total_s_delta:.2f} s ({ratio:.2f}x sooner "
                             "end to end), writing 40 % fewer tokens (105 vs 174); per token A was 1.19x faster "
                             "(88.0 vs 74.2 tok/s); first token: A, 1.10x sooner")


@pytest.mark.parametrize("finish, tokens, outcome, words", [
    (None, 20, "truncated", "B was truncated (no finish_reason)"),
    ("stop", 0, "empty", "B sent an empty reply"),
])
def test_a_truncated_or_empty_reply_never_wins_and_gives_no_figures(finish, tokens, outcome, words):
    # B "finishes" first by far, but without a finish_reason (an interrupted stream) or without a token
    result = _race(("A", 200, 50, 10, "stop", {}), ("B", 100, tokens, 1, finish, {}))
    race = result.races[0]
    b = race.lanes["B"]
    assert race.winner == "A" and b.finish_rank is None and b.outcome == outcome
    assert b.error is not None and b.error.cls == outcome and b.ttft_s is None and b.decode_tok_s is None
    assert b.total_s is None and b.output_tokens is None
    assert verdict(race) == f"A finished alone; {words}"
    assert result.lanes["B"].wins == 0 and result.lanes["B"].races_ok == 0
    assert result.lanes["B"].outcomes[outcome] == 1 and result.lanes["B"].ttft_s is None
    assert result.lanes["A"].outcomes == {"complete": 1, "truncated": 0, "empty": 0, "error": 0}


def test_a_burst_lane_keeps_its_win_but_shows_no_per_token_rate():
    # B's 40 tokens were read in one go (10 us apart): complete, first to finish, but no decode rate from it
    result = _race(("A", 200, 40, 10, "stop", {}), ("B", 300, 40, 0, "stop", {"step_us": 10}))
    race = result.races[0]
    b = race.lanes["B"]
    assert race.winner == "B" and b.flags == ["burst"] and b.decode_tok_s is None
    assert b.ttft_s == pytest.approx(0.3) and race.winners.decode == RaceLeader(lane="A", runner_up=None, ratio=None)
    assert result.lanes["B"].bursts == 1 and result.lanes["B"].decode_tok_s is None
    assert verdict(race).endswith("; first token: A, 1.50x sooner; B arrived in one burst (no per-token rate)")


@pytest.mark.parametrize("b_start_us, b_ttft_ms, b_step_us, words", [
    (1700, 50, 5000, "A and B finished together (end to end within 1 ms; A's end was read first)"),  # 0 ms
    (1700, 50, 4970, "A and B finished together (end to end within 1 ms; A's end was read first)"),  # -0.3 ms
    (4000, 48, 5000, "A finished first on the clock, but B's request took 2 ms less end to end (sent later)"),
])
def test_a_tie_or_a_later_send_never_reads_won_by_zero_or_minus(b_start_us, b_ttft_ms, b_step_us, words):
    """Scripted: A is sent at 1 ms and ends at 101 ms (100 ms end to end); B is sent later and its end is read
    after A's, taking as long (a tie), 0.3 ms less (which printed "by -0 ms") or 2 ms less ("by -2 ms")."""
    evs = [Event(0, "mark", None, None, {"label": "race 1", "bench": "race", "phase": "start", "race": 1,
                                         "prompt": "p", "lanes": ["A", "B"]})]
    evs += _one_lane("A", 1, 1 * MS, 50, 10, 5)
    evs += _one_lane("B", 1, b_start_us * 1000, b_ttft_ms, 10, None, step_us=b_step_us)
    evs.sort(key=lambda e: e.t)
    evs.append(Event(evs[-1].t + MS, "mark", None, None, {"label": "race 1", "bench": "race", "phase": "end",
                                                           "race": 1}))
    race = race_results(evs).races[0]
    assert race.winner == "A" and race.margin.total_s_delta <= 0
    assert race.verdict == verdict(race)
    assert race.verdict.startswith(words)
    assert "-0" not in race.verdict and "by -" not in race.verdict and "by 0 ms" not in race.verdict


def test_identical_lanes_tie_per_token_and_on_the_first_token():
    """Six lanes from two identical simulators: the replay's verdict said "per token E was 1.00x faster (164.8
    vs 164.8 tok/s); first token: A, 1.00x sooner" -- a lead nobody had.  Equal lanes tie and are named."""
    result = _race(("A", 175, 31, 6, "stop", {}), ("B", 220, 30, 8, "stop", {}), ("C", 175, 31, 6, "stop", {}),
                   ("D", 220, 30, 8, "stop", {}), ("E", 175, 31, 6, "stop", {}))
    text = result.races[0].verdict
    assert "1.00x" not in text and text.startswith("A, C and E finished together"), text
    assert "per token A, C and E tie (" in text and "first token: A, C and E together (175 ms)" in text, text
    # a real lead is still a lead
    result = _race(("A", 175, 31, 6, "stop", {}), ("B", 220, 30, 8, "stop", {}))
    text = result.races[0].verdict
    assert "also faster per token (1.33x" in text and "first token: A, 1.26x sooner" in text, text


def test_the_tokens_clause_says_about_as_many_unless_equal():
    """Issue 40 item 5: `writing as many tokens (256 vs 245)` -- 256 is not as many as 245."""
    from lanemon.workloads.race import _tokens_clause

    assert _tokens_clause(race_lane(generated_tokens=256), race_lane(generated_tokens=245)) == \
        ", writing about as many tokens (256 vs 245)"
    assert _tokens_clause(race_lane(generated_tokens=128), race_lane(generated_tokens=128)) == \
        ", writing as many tokens (128 each)"
    assert _tokens_clause(race_lane(generated_tokens=105), race_lane(generated_tokens=174)) == \
        ", writing 40 % fewer tokens (105 vs 174)"
