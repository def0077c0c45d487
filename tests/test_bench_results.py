"""The pure results functions on hand-made events: crossover, unstable, errors, cache hits, needles."""

from __future__ import annotations

import itertools

from lanemon import events as schema
from lanemon.events import Event
from lanemon.workloads.bench.run import spread
from lanemon.workloads.bench.decode import crossover_sentence, decode_results, requests_for_level
from lanemon.workloads.bench.needles import needle_results
from lanemon.workloads.bench.prefill import prefill_results

MS = 1_000_000
_ids = itertools.count(1)


class Ev:
    """Builds a plausible event stream by hand."""

    def __init__(self, bench: str, lanes=("A", "B"), config=None) -> None:
        self.bench = bench
        self.events: list[Event] = [Event(0, schema.LANE, n, None, {"name": n}) for n in lanes]
        self.mark(None, label="bench", phase="start", config={"lanes": list(lanes), **(config or {})})

    def mark(self, lane, t=0, **data):
        self.events.append(Event(t, schema.MARK, lane, None, {"bench": self.bench, **data}))

    def cell(self, lane, cell, t0, t1, requests=(), end=True, **keys):
        self.mark(lane, t0, label="cell", phase="start", cell=cell, **keys)
        for r in requests:
            self.request(lane, cell=cell, **{**keys, **r})
        if end:
            self.mark(lane, t1, label="cell", phase="end", cell=cell, **keys)

    def request(self, lane, sent, ttft, end=None, tokens=0, prompt_tokens=10, text="x", error=None,
                cached=None, **meta):
        req = f"{lane}-{next(_ids)}"
        add = self.events.append
        add(Event(sent, schema.REQUEST, lane, req, {"endpoint": "completions", "bench": self.bench, **meta}))
        if error:
            add(Event(sent + ttft, schema.ERROR, lane, req, {"cls": "http", "status": 400, "message": error}))
            return
        n = max(1, tokens)
        end = end if end is not None else sent + ttft
        for i in range(n):
            t = sent + ttft + (end - sent - ttft) * i // max(1, n - 1)
            add(Event(t, schema.TOKEN, lane, req, {"text": text if i == 0 else "y"}))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens or 1}
        if cached is not None:
            usage["cached_tokens"] = cached
        add(Event(end, schema.USAGE, lane, req, usage))
        add(Event(end, schema.DONE, lane, req, {"finish_reason": "stop"}))

    def end(self, interrupted=False):
        self.mark(None, label="bench", phase="end", interrupted=interrupted)
        return self.events


def _level(ev, lane, level, rep, tokens_per_s, t0, n=2, error=None):
    """n requests of 100 tokens over exactly one second -> aggregate = n*100 (tokens_per_s ignored)."""
    reqs = [dict(sent=t0, ttft=100 * MS, end=t0 + 1000 * MS, tokens=int(tokens_per_s), part="level",
                 level=level, rep=rep, category="coding")]
    reqs += [dict(sent=t0, ttft=100 * MS, end=t0 + 1000 * MS, tokens=int(tokens_per_s), part="level",
                  level=level, rep=rep, category="prose", error=error if i == 0 else None) for i in range(n - 1)]
    ev.cell(lane, f"{lane}/C{level}/r{rep}", t0, t0 + 1000 * MS, reqs, part="level", level=level, rep=rep)


def test_levels_are_level_times_categories():
    assert [requests_for_level(c, 8) for c in (1, 2, 6)] == [8, 16, 48]
    assert requests_for_level(3, 1) == 3


def test_decode_crossover_detected_between_the_right_levels():
    ev = Ev("decode", config={"levels": [1, 2, 3, 4]})
    for level, (a, b) in zip((1, 2, 3, 4), ((100, 80), (150, 130), (180, 170), (190, 210))):
        _level(ev, "A", level, 0, a, level * 10_000 * MS)
        _level(ev, "B", level, 0, b, level * 10_000 * MS)
    res = decode_results(ev.end())
    assert res.bench == "decode" and res.interrupted is False and res.cut == []
    lv = res.lanes["A"].levels
    assert set(lv) == {"1", "2", "3", "4"}
    assert lv["1"].aggregate_tok_s == 200.0  # 2 x 100 tokens in 1 s
    assert lv["1"].requests == 2 and lv["1"].errors == 0 and lv["1"].output_tokens == 200
    assert abs(lv["1"].ttft_p50_s - 0.1) < 1e-9
    # the catalogue's TPOT, computed once here (sweep's table shows it): decode span / (tokens - the first's)
    assert lv["1"].tpot_p50_s == round(0.9 / 99, 4) and lv["4"].tpot_p50_s == round(0.9 / 189, 4)
    x = res.crossover
    assert (x.leader_before, x.leader_after, x.between) == ("A", "B", [3, 4])
    assert crossover_sentence(res) == ("B overtakes A between C3 and C4 [C3 B -5.6 % vs A (band 5.0 % default); "
                                       "C4 B +10.5 % vs A (band 5.0 % default)]")  # with the gaps and the band


def test_no_crossover_is_null_and_said_so():
    ev = Ev("decode")
    for level in (1, 2):
        _level(ev, "A", level, 0, 100, level * 10_000 * MS)
        _level(ev, "B", level, 0, 90, level * 10_000 * MS)
    res = decode_results(ev.end())
    assert res.crossover is None
    assert crossover_sentence(res) == "no crossover: A leads at every measured level (B vs A -10.0 % to -10.0 %)"


def test_errored_cell_has_no_throughput_figure():
    ev = Ev("decode")
    _level(ev, "A", 1, 0, 100, 0, n=2, error="HTTP 500: boom")
    res = decode_results(ev.end())
    c = res.lanes["A"].levels["1"]
    assert c.errors == 1 and c.requests == 2
    assert c.aggregate_tok_s is None and c.reps == [None]  # never a fast/slow result
    assert c.error == "HTTP 500: boom"


def test_reps_spread_and_unstable_flag():
    s = spread([1791, 2648, 3029])  # the write-up's 300K runs on B
    assert s.median == 2648 and s.min == 1791 and s.max == 3029 and s.unstable is True
    assert spread([100, 104, 110]).unstable is False
    assert spread([100]).unstable is False
    assert spread([None, 100]).reps == [None, 100]
    ev = Ev("decode")
    for rep, n in enumerate((2, 3, 2)):
        _level(ev, "A", 1, rep, 100, rep * 10_000 * MS, n=n)
    c = decode_results(ev.end()).lanes["A"].levels["1"]
    assert c.reps == [200.0, 300.0, 200.0] and c.median == 200.0 and c.unstable is True


def test_interrupted_run_keeps_finished_cells_and_lists_cut_ones():
    ev = Ev("decode")
    _level(ev, "A", 1, 0, 100, 0)
    ev.cell("A", "A/C2/r0", 5000 * MS, None, [dict(sent=5000 * MS, ttft=5 * MS, error="cancelled", part="level",
                                                     level=2, rep=0)], end=False, part="level", level=2, rep=0)
    events = ev.end(interrupted=True)
    res = decode_results(events)
    assert res.interrupted is True
    assert list(res.lanes["A"].levels) == ["1"]
    assert res.cut == [{"cell": "A/C2/r0", "lane": "A", "part": "level", "level": 2, "rep": 0}]
    # a recording that just stops (no end mark) is interrupted too; a live one is "running"
    assert decode_results(events[:-1]).interrupted is True
    live = decode_results(events[:-1], in_progress=True)
    assert live.interrupted is False and live.running[0]["cell"] == "A/C2/r0"


def test_per_category_rates():
    ev = Ev("decode", lanes=("A",))
    reqs = [dict(sent=0, ttft=100 * MS, end=1100 * MS, tokens=149, part="category", category="coding", level=1,
                 rep=0)]
    ev.cell("A", "A/cat:coding/r0", 0, 1100 * MS, reqs, part="category", category="coding", level=1, rep=0)
    res = decode_results(ev.end())
    c = res.lanes["A"].categories["coding"]
    assert abs(c.per_stream_tok_s - 148.0) < 1e-6  # (149 - 1) / 1 s
    assert c.requests == 1 and c.errors == 0


def _prefill_cell(ev, lane, length, rep, cold_ttft_ms, repeat_ttft_ms=None, t0=0, error=None, cached=None):
    reqs = [dict(sent=t0, ttft=cold_ttft_ms * MS, prompt_tokens=length, tokens=1, run="cold", part="length",
                 length=length, rep=rep, error=error)]
    if repeat_ttft_ms is not None:
        reqs.append(dict(sent=t0 + 10_000 * MS, ttft=repeat_ttft_ms * MS, prompt_tokens=length, tokens=1,
                         run="repeat", part="length", length=length, rep=rep, cached=cached))
    ev.cell(lane, f"{lane}/{length}/r{rep}", t0, t0 + 20_000 * MS, reqs, part="length", length=length, rep=rep)


def test_prefill_cache_hit_threshold():
    ev = Ev("prefill")
    _prefill_cell(ev, "A", 2950, 0, 1135, 1130)  # ~2.6K both times: no cache
    _prefill_cell(ev, "B", 2950, 0, 807, 235)  # 3,654 cold, 12.5K repeat: a hit
    _prefill_cell(ev, "B", 8000, 0, 2000, 1100)  # 1.8x faster: not a hit (threshold 2x)
    res = prefill_results(ev.end())
    a, b = res.lanes["A"].lengths, res.lanes["B"].lengths
    assert a["2950"].cache_hit_tok_s is None and round(a["2950"].prefill_tok_s) == 2599
    assert round(b["2950"].prefill_tok_s) == 3656  # the cold run, never the cached one
    assert 12_000 < b["2950"].cache_hit_tok_s < 13_000
    assert b["8000"].cache_hit_tok_s is None and b["8000"].repeat_tok_s is not None
    assert abs(res.ratios.by_length["2950"] - 3656 / 2599) < 0.01
    assert b["2950"].cache_hit_source == "timing" and a["2950"].cache_hit_source == "timing"


def test_prefill_cache_hit_from_the_servers_cached_tokens():
    ev = Ev("prefill")
    _prefill_cell(ev, "V", 500, 0, 100, 70, cached=384)  # only 1.4x faster, but the server says 384 cached
    _prefill_cell(ev, "V", 1000, 0, 200, 80, cached=0)  # 2.5x faster, but the server says nothing was cached
    cells = prefill_results(ev.end()).lanes["V"].lengths
    assert cells["500"].cache_hit_source == "cached_tokens" and cells["500"].repeat_cached_tokens == 384
    assert cells["500"].cache_hit_tok_s == cells["500"].repeat_tok_s == round(500 / 0.07, 4)
    assert cells["1000"].cache_hit_source == "cached_tokens" and cells["1000"].cache_hit_tok_s is None


def test_prefill_reps_unstable_and_errors():
    ev = Ev("prefill", lanes=("B",))
    for rep, ttft in enumerate((300000 / 1791 * 1000, 300000 / 2648 * 1000, 300000 / 3029 * 1000)):
        _prefill_cell(ev, "B", 300000, rep, ttft, t0=rep * 1000_000 * MS)
    _prefill_cell(ev, "B", 1_200_000, 0, 5, error="HTTP 400: This model's maximum context length is 1048576 tokens")
    res = prefill_results(ev.end())
    c = res.lanes["B"].lengths["300000"]
    assert [round(v) for v in c.reps] == [1791, 2648, 3029]
    assert round(c.prefill_tok_s) == 2648 and c.unstable is True
    e = res.lanes["B"].lengths["1200000"]
    assert e.prefill_tok_s is None and e.errors == 1 and "maximum context length" in e.error


def test_needles_found_not_found_and_error():
    ev = Ev("needles", lanes=("A",))
    def needle(length, answer, error=None, t0=0):
        ev.cell("A", f"A/{length}/r0", t0, t0 + 1, [dict(sent=t0, ttft=500 * MS, prompt_tokens=length, tokens=5,
                                                         text=answer, run="needle", key="K3Y9ABCD", depth=0.42,
                                                         part="length", length=length, rep=0, error=error)],
                part="length", length=length, rep=0)
    needle(20000, "The pass key is K3Y9ABCD.")
    needle(131072, "The pass key is L4Z0BCDE.")
    needle(2000000, "", error="HTTP 400: This model's maximum context length is 1048576 tokens")
    res = needle_results(ev.end())
    lens = res.lanes["A"].lengths
    assert lens["20000"].found is True and lens["20000"].key == "K3Y9ABCD" and lens["20000"].depth == 0.42
    assert lens["20000"].prefill_tok_s == 40000.0 and lens["20000"].ttft_s == 0.5
    assert lens["131072"].found is False and "L4Z0BCDE" in lens["131072"].answer
    assert lens["2000000"].found is None and "maximum context length" in lens["2000000"].error


def test_client_bound_figures_mark_cells_run_while_lanemon_starved():
    """Shared by decode, prefill and needles cells: a request overlapping a starved window is counted, and
    its cell is unreliable when lanemon was held up for 2 % of the cell's span or more (issue 16 item 4)."""
    from lanemon.events import Event
    from lanemon.measure.load import client_load
    from lanemon.measure.records import RequestRecord
    from lanemon.workloads.bench.run import client_bound_figures

    def rec(req, start, end):
        r = RequestRecord(lane="A", req=req)
        r.sent_ns, r.end_ns = start, end
        return r

    starved = Event(2_000_000_000, "client_load", None, None,
                    {"t0": 1_500_000_000, "lag_ms": 80.0, "bound": True, "window_s": 0.5})
    quiet = Event(3_000_000_000, "client_load", None, None,
                  {"t0": 2_500_000_000, "lag_ms": 1.0, "bound": False, "window_s": 0.5})
    load = client_load([starved, quiet])
    assert client_bound_figures([rec("a", 0, 1_000_000_000)], load)._asdict() == {
        "client_bound": 0, "starved_s": 0.0, "starved_share": 0.0, "unreliable": False}
    # 80 ms held up in a 1.9 s cell: 4.2 %, over the 2 % share
    assert client_bound_figures([rec("a", 0, 1_000_000_000), rec("b", 1_600_000_000, 1_900_000_000)],
                                load)._asdict() == {"client_bound": 1, "starved_s": 0.08, "starved_share": 0.0421,
                                          "unreliable": True}
    # the same hiccup in a 10 s cell (0.8 %) is counted on its request, and the cell stands
    long = client_bound_figures([rec("a", 0, 10_000_000_000), rec("b", 1_600_000_000, 1_900_000_000)], load)
    assert long._asdict() == {"client_bound": 2, "starved_s": 0.08, "starved_share": 0.008, "unreliable": False}
    assert client_bound_figures([rec("b", 1_600_000_000, 1_900_000_000)], None).unreliable is False
    # a starved window longer than the cell itself (a 1.2 s stall over a 0.3 s cell): held up for the whole
    # cell at most, a share of 1, never more (it read 1.54 on a demo prefill cell)
    stall = client_load([Event(3_000_000_000, "client_load", None, None,
                               {"t0": 1_000_000_000, "lag_ms": 1200.0, "bound": True, "window_s": 2.0})])
    whole = client_bound_figures([rec("c", 1_600_000_000, 1_900_000_000)], stall)
    assert whole.client_bound == 1 and whole.starved_s == 0.3 and whole.starved_share == 1.0 and whole.unreliable
