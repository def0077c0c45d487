"""Run-scoped engine counters and energy of `bench load` reps (issue 27: each rep gets the difference of the engine's
counters between its edges, summed across data-parallel ranks with the imbalance; the load table shows them and
the energy and cost), a restarted engine named as a restart (never a negative delta), and a window in which no
request completed says so instead of "0.0 req/s" beside a token rate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec import to_builtins

from lanemon import events as schema
from lanemon.client.prom import map_engine, parse
from lanemon.events import Event
from lanemon.measure.counters import Accumulator, accumulate, counters_text, window_counters
from lanemon.results.common import to_json_obj
from lanemon.measure.views import attach_engine_views
from lanemon.reports.tables import load_table
from lanemon.results.common import LoadConfig, as_result, to_json_obj
from lanemon.results.load import LoadResult
from lanemon.results.counters import EngineCounters
from lanemon.workloads.bench.load import cell_result, load_headlines, load_results
from load_sweep_results import load_result

FIXTURES = Path(__file__).parent / "fixtures"
NS = 1_000_000_000


def mapped(name: str) -> dict:
    """A fixture's scrape as a recording holds it."""
    return to_builtins(map_engine(parse((FIXTURES / name).read_text())))


def mark(t_s: float, **data) -> Event:
    return Event(int(t_s * NS), schema.MARK, data.pop("lane", None), None, data)


def scrape(t_s: float, data: dict) -> Event:
    return Event(int(t_s * NS), schema.SERVER_METRICS, "A", None, {"ok": True, **data})


def load_events(between: list[Event]) -> list[Event]:
    """A one-rep `bench load` on lane A with the two-rank exposition scraped at the rep's edges."""
    cfg = {"load": {"arrival": "constant", "rate": 2.0, "requests": 4}}
    return [mark(0, label="bench", bench="load", phase="start", config=cfg),
            scrape(0.9, mapped("vllm_dp2_before.prom")),
            mark(1, label="cell", lane="A", bench="load", phase="start", cell="A:load:r0", part="load", rep=0,
                 requests=4, span_s=2.0),
            *between,
            mark(5, label="cell", lane="A", bench="load", phase="end", cell="A:load:r0", part="load", rep=0,
                 requests=4, errors=0),
            scrape(5.1, mapped("vllm_dp2_after.prom")),
            mark(5.2, label="bench", bench="load", phase="end")]


def test_a_load_rep_carries_the_engines_counters_summed_over_ranks_with_the_imbalance():
    events = load_events([])
    result = attach_engine_views(load_results(events), events)
    c = result.lanes["A"].reps[0].engine_counters  # typed (results/counters.py), not a bare object
    assert isinstance(c, EngineCounters)
    assert c.generation_tokens == 800 and c.requests == 8 and c.preemptions == 1
    assert c.ranks["0"].generation_tokens == 600 and c.ranks["1"].generation_tokens == 200
    assert c.rank_imbalance == 1.5 and c.prefix_hit_rate == 0.375 and c.restarts == 0
    assert c.spec_acceptance_rate == round(550 / 900, 4)
    t = load_table(result)
    assert t.labels()[-3:] == ["prefix hit", "preempt", "spec accept"]
    assert [c.text for c in t.rows[0][-3:]] == ["38 %", "1", "61 %"]
    assert any(n.startswith("A: the engine: ") and "2 ranks, max/mean 1.50" in n for n in t.notes)


def test_the_scrapes_inside_a_rep_add_up_and_a_restart_is_named_not_negative():
    before, after = mapped("vllm_dp2_before.prom"), mapped("vllm_dp2_after.prom")
    # the engine restarted mid-rep: its totals began again at 300 generated tokens, then reached `after`'s
    restarted = {**after, "generation_tokens_total": 300.0, "prompt_tokens_total": 500.0,
                 "by_engine": {"0": {"generation_tokens_total": 200.0}, "1": {"generation_tokens_total": 100.0}}}
    scr = [(0, before), (2 * NS, restarted), (4 * NS, after)]
    c = window_counters(scr, NS, 5 * NS)
    assert c is None  # nothing at or after the end
    c = to_json_obj(window_counters(scr, 0, 4 * NS))  # as a rep's JSON carries it
    assert c["restarts"] == 1 and c["restart_t"] == 2 * NS and c["excluded_s"] == 2.0
    # what the engine counted before the restart is gone: the rep's counters are withheld, the restart named
    assert "generation_tokens" not in c and "requests" not in c and "restarted" in c["withheld"]
    assert all(v is None or v >= 0 for k, v in c.items() if isinstance(v, (int, float)))
    assert "engine restarted" in counters_text(c) and "engine restarted" in counters_text(c, short=True)
    # a reader of the two edges alone would have taken the fall for a difference
    assert after["generation_tokens_total"] - before["generation_tokens_total"] == 800
    # the session (the report's line, the live row) adds up the intervals around the restart
    s = accumulate(scr)
    assert s.generation_tokens == after["generation_tokens_total"] - 300 and s.restarts == 1


def test_the_live_accumulator_is_the_sum_of_its_steps():
    acc = Accumulator()
    assert acc.result() is None
    for t, gen in ((0, 100), (1, 150), (2, 150), (3, 40), (4, 90)):  # restart between 2 and 3
        acc.add(t * NS, {"engine": "vllm", "generation_tokens_total": float(gen)})
    r = acc.result()
    assert r.generation_tokens == 50 + 0 + 50 and r.restarts == 1 and r.between_s == 4.0  # 2 -> 3 not used
    assert r.excluded_s == 1.0 and r.restart_reason == "generation_tokens_total fell"
    assert accumulate([(0, {"generation_tokens_total": 5.0}), (NS, {"generation_tokens_total": 9.0})]).restarts == 0
    # a scrape that lacks a counter does not count it again from zero on the next one
    acc = Accumulator()
    for d in ({"generation_tokens_total": 100.0}, {}, {"generation_tokens_total": 110.0}):
        acc.add(0, d)
    assert acc.result().generation_tokens == 10


def test_no_completion_in_the_window_is_said_not_zero_req_s_beside_tokens():
    from lanemon.measure.records import RequestRecord

    r = RequestRecord(lane="A", req="r0")
    r.sent_ns, r.token_ns = 0, [int(0.1 * NS) + k * NS // 10 for k in range(30)]
    r.chunk_tokens, r.completion_tokens, r.end_ns, r.finish_reason = [1] * 30, 30, 3 * NS + 1, "stop"
    r.first_content_ns = r.token_ns[0]
    r.meta = {"phase": "measure", "scheduled_s": 0.0, "send_lag_s": 0.0}
    res = cell_result([r], 1.0, LoadConfig(arrival="constant", rate=1.0))
    assert res.output_tok_s and res.output_tok_s > 0  # tokens arrived in the 1 s window ...
    assert res.completed_rate_rps is None  # ... but nothing completed: no "0.0 req/s" beside them
    assert res.completed_rate_reason == "no request completed in the measured window"
    t = load_table(load_result({"A": [to_json_obj(res)]}, {}))
    served = t.labels().index("served req/s")
    assert t.rows[0][served].text == "none"
    assert any("no request completed in the measured window" in n for n in t.notes)
    res.lane_behind = True
    line = load_headlines({"A": [res]})[0]
    assert "0.0 req/s" not in line and "no request completed in the measured window" in line


def has_energy(result) -> bool:
    """Whether some rep of the fixture's run has an energy figure: its 0.75 s windows of 10 ms requests between 1 s
    GPU readings are often known only to more than 10 %, and then withheld with the reason (docs/GPU.md "The
    exporter's cadence"; tests/test_energy_cadence.py tests the figures themselves)."""
    return any(r.get("energy_j") is not None for d in result["lanes"].values() for r in d.get("reps") or [])


@pytest.fixture(scope="module")
def load_run(tmp_path_factory):
    """One `bench load` on the simulated lanes, recorded: (its --json result, the recording)."""
    rec = tmp_path_factory.mktemp("load") / "load.jsonl"
    out = subprocess.run([sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--time-scale", "0.05",
                          "--arrival", "constant", "--rate", "4", "--requests", "4", "--turns", "3",
                          "--output-len", "fixed:16", "--workers", "1", "--cost", "A=3.5", "--json",
                          "--record", str(rec)], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), rec


def test_bench_load_on_the_simulator_gives_each_rep_its_counters_and_the_table_its_energy(load_run):
    """Lane A of the demo speaks vLLM's names, B SGLang's: each rep's counters are its own requests and tokens
    (three-turn conversations: 12 requests); the table shows tok/J and $/1M per rep."""
    result, rec = load_run
    for lane in ("A", "B"):
        rep = result["lanes"][lane]["reps"][0]
        c = rep["engine_counters"]
        assert c is not None and c["requests"] == rep["requests"] == 12 and c["restarts"] == 0, (lane, c)
        assert c["generation_tokens"] == 12 * 16
        # a 0.75 s window of 10 ms requests between 1 s GPU readings: a figure, or withheld with its uncertainty
        # (docs/GPU.md "The exporter's cadence"), never a guess
        assert (rep["energy_j"] > 0 and rep["tokens_per_joule"] > 0) if rep["energy_j"] is not None \
            else rep["energy_reason"] and rep["energy_update_s"] is not None, rep
    energy = has_energy(result)
    assert result["lanes"]["A"]["reps"][0]["usd_per_1m_output_tokens"] > 0
    assert result["lanes"]["B"]["reps"][0]["usd_per_1m_output_tokens"] is None
    b = result["lanes"]["B"]["reps"][0]["engine_counters"]  # SGLang: prefix queries are its prompt tokens
    assert b["prefix_queries"] == b["prompt_tokens"] > 0 and b["prefix_hit_rate"] is not None
    t = load_table(as_result(result, LoadResult))  # the --json read back
    assert {"$/1M tok", "prefix hit"} | ({"tok/J", "GPU W"} if energy else set()) <= set(t.labels())
    assert any(n.startswith("B: ") and "no cost_per_hour" in n for n in t.notes)
    withheld = [r["energy_reason"] for d in result["lanes"].values() for r in d["reps"] if r["energy_j"] is None]
    assert all(any(why in n for n in t.notes) for why in withheld), t.notes  # a withheld figure says why
    # the report's load section is the same model, and its efficiency view has the reps
    md = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "md"],
                        capture_output=True, text=True, timeout=120)
    assert md.returncode == 0, md.stderr
    assert ("tok/J" in md.stdout or not energy) and "prefix hit" in md.stdout
    assert "Efficiency" in md.stdout


def test_the_dashboard_shows_the_engines_counters_since_the_session_began_and_names_a_restart():
    """The live fold (folds/dashboard.py) keeps the counters' increases since the session's first scrape, not the
    totals since the server started; a restart is named and its interval not used, never a negative delta
    (ui/widgets/server_gauges.py)."""
    from lanemon.folds.dashboard import SessionState
    from lanemon.ui.widgets.server_gauges import session_markup

    before, after = mapped("vllm_dp2_before.prom"), mapped("vllm_dp2_after.prom")
    st = SessionState([("A", "http://a", None)])
    st.apply(scrape(1, before))
    assert st.lanes["A"].server.session_counters() is None  # one scrape: nothing since it yet
    st.apply(scrape(2, after))
    c = st.lanes["A"].server.session_counters()
    assert c.requests == 8 and c.generation_tokens == 800 and c.restarts == 0  # not the 2,700 total
    text = session_markup(c)
    assert "8 req" in text and "prefix hit 38%" in text and "1 preempt" in text and "spec 61%" in text
    assert "restarted" not in text
    # the engine restarted: its totals begin again (20 requests since the server started become 2)
    fresh = {"engine": "vllm", "requests_success_total": 2.0, "generation_tokens_total": 64.0,
             "prefix_queries_total": 100.0, "prefix_hits_total": 0.0, "preemptions_total": 0.0}
    st.apply(scrape(3, fresh))
    c = st.lanes["A"].server.session_counters()
    # the interval of the restart is not used (what was counted before the restart in it is gone): nothing added
    assert c.restarts == 1 and c.requests == 8 and c.generation_tokens == 800 and c.excluded_s == 1.0
    assert all(v >= 0 for k, v in to_json_obj(c).items() if isinstance(v, (int, float)) and not isinstance(v, bool))
    assert "engine restarted" in session_markup(c)


async def test_replaying_a_load_recording_shows_the_load_table_fitted_with_its_energy(load_run):
    """The TUI's load table is the CLI's model (reports/tables.py), fitted to the screen: a `bench load` replay
    opens the result screen with tok/J in the table (columns hidden by rank are named) and the efficiency view."""
    from textual.widgets import DataTable, Static

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    result, rec = load_run
    energy = has_energy(result)
    app = make_app(ReplaySession(rec, speed=float("inf")))
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):  # the analysis runs in a thread
            await pilot.pause(0.05)
            if app.screen.query(DataTable):
                break
        assert app.screen_name() == "result"
        tables = list(app.screen.query(DataTable))
        load = tables[0]
        labels = [str(c.label) for c in load.columns.values()]
        assert labels[0] == "lane" and ("tok/J" in labels or not energy) and "served/s" in labels
        assert len(tables) >= 2 and ("tok/J" in [str(c.label) for c in tables[1].columns.values()] or not energy)
        notes = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "hidden at this width" in notes
        # the unit `served/s` leaves out, right under the table (it came last, under ten lines of notes)
        first = str(app.screen.query(".result-notes").first().render()).split("\n")[0]
        assert first.startswith("served/s") and "in req/s" in first, first
        await pilot.press("q")


async def test_a_running_bench_load_in_the_tui_shows_its_load_table_as_reps_end(load_run):
    """Live (no recording yet): the TUI of `bench load` opens the result screen on the run's own events, and
    shows the load table with tok/J as reps end (before, it opened the dashboard and showed no table)."""
    from textual.widgets import DataTable, Static

    from lanemon.recording.reader import read_events
    from lanemon.ui.app import make_app
    from lanemon.ui.sample import ScriptedSource

    _, rec = load_run
    _, events, _ = read_events(rec)
    source = ScriptedSource(list(events), mode="bench", hold=True)
    source.kind = "load"
    app = make_app(source)
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.screen.query(DataTable):
                break
        assert app.screen_name() == "result"
        labels = [str(c.label) for c in app.screen.query(DataTable).first().columns.values()]
        assert ("tok/J" in labels or not has_energy(load_run[0])) and ("$/1M tok" in labels or "$/1M" in labels)
        title = str(app.screen.query_one("#result-title", Static).render())
        assert "running" in title
        await pilot.press("q")
