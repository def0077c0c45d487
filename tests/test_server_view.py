"""Where the time goes: vLLM/SGLang histograms mapped, and two scrapes turned into the server's view."""

from __future__ import annotations

import pytest
from msgspec import to_builtins

from lanemon import events as schema
from lanemon.client.prom import map_engine, parse
from lanemon.events import Event
from lanemon.measure.server import server_timings, server_view


def vllm_text(n: int, ttft: float, e2e: float, computed: int, hit: int) -> str:
    lab = 'engine="0",model_name="m"'
    return "\n".join([
        "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{lab}}} 0",
        "# TYPE vllm:prompt_tokens_total counter", f"vllm:prompt_tokens_total{{{lab}}} {computed + hit}",
        "# TYPE vllm:generation_tokens_total counter", f"vllm:generation_tokens_total{{{lab}}} {n * 10}",
        "# TYPE vllm:prompt_tokens_by_source_total counter",
        f'vllm:prompt_tokens_by_source_total{{{lab},source="local_compute"}} {computed}',
        f'vllm:prompt_tokens_by_source_total{{{lab},source="local_cache_hit"}} {hit}',
        "# TYPE vllm:request_success_total counter",
        f'vllm:request_success_total{{{lab},finished_reason="length"}} {n - 1}',
        f'vllm:request_success_total{{{lab},finished_reason="stop"}} 1',
        "# TYPE vllm:num_preemptions_total counter", f"vllm:num_preemptions_total{{{lab}}} 0",
        "# TYPE vllm:time_to_first_token_seconds histogram",
        f'vllm:time_to_first_token_seconds_bucket{{{lab},le="+Inf"}} {n}',
        f"vllm:time_to_first_token_seconds_count{{{lab}}} {n}", f"vllm:time_to_first_token_seconds_sum{{{lab}}} {ttft}",
        "# TYPE vllm:e2e_request_latency_seconds histogram",
        f'vllm:e2e_request_latency_seconds_bucket{{{lab},le="+Inf"}} {n}',
        f"vllm:e2e_request_latency_seconds_count{{{lab}}} {n}", f"vllm:e2e_request_latency_seconds_sum{{{lab}}} {e2e}",
        "# TYPE vllm:cache_config_info gauge",
        'vllm:cache_config_info{block_size="128",engine="0",enable_prefix_caching="True",num_gpu_blocks="4096",'
        'num_gpu_blocks_override="64"} 1.0',
        "",
    ])


def test_vllm_names_mapped():
    m = map_engine(parse(vllm_text(10, 0.5, 2.0, 900, 100)))
    assert m.engine == "vllm" and m.ttft_count == 10 and m.ttft_sum == 0.5
    assert m.prompt_tokens_computed_total == 900 and m.prompt_tokens_hit_total == 100
    assert m.requests_by_finish == {"length": 9.0, "stop": 1.0} and m.requests_success_total == 10
    assert (m.block_size, m.kv_blocks, m.kv_capacity_tokens) == (128, 64, 8192)  # the override wins


def test_server_timings_are_deltas_and_survive_a_reset():
    before = map_engine(parse(vllm_text(10, 0.5, 2.0, 900, 100)))
    after = map_engine(parse(vllm_text(14, 0.9, 3.0, 1300, 300)))
    t = server_timings(before, after)
    assert t.requests == 4 and t.ttft_s == pytest.approx(0.1) and t.e2e_s == pytest.approx(0.25)
    assert t.prompt_tokens_computed == 400 and t.prompt_tokens_hit == 200 and t.itl_s is None
    reset = server_timings(after, map_engine(parse(vllm_text(2, 0.2, 0.6, 100, 0))))  # the server restarted
    assert reset.requests == 2 and reset.ttft_s == pytest.approx(0.1)


def _request(lane, req, t0, ttft, end, usage=(5, 3)):
    return [Event(t0, schema.REQUEST, lane, req, {"endpoint": "completions"}),
            Event(t0 + 1, schema.FIRST_BYTE, lane, req, {"status": 200}),
            Event(t0 + ttft, schema.TOKEN, lane, req, {"text": "a"}),
            Event(t0 + ttft + 2_000_000, schema.TOKEN, lane, req, {"text": "b"}),
            Event(t0 + ttft + 4_000_000, schema.TOKEN, lane, req, {"text": "c"}),
            Event(end - 1, schema.USAGE, lane, req, {"prompt_tokens": usage[0], "completion_tokens": usage[1]}),
            Event(end, schema.DONE, lane, req, {"finish_reason": "length"})]


def test_server_view_pairs_the_same_interval():
    ms = 1_000_000
    scrape = lambda t, text: Event(t, schema.SERVER_METRICS, "V", None,  # noqa: E731
                                   {"ok": True, **to_builtins(map_engine(parse(text)))})
    events = [scrape(0, vllm_text(10, 0.5, 2.0, 900, 100))]
    events += _request("V", "V-1", 10 * ms, 30 * ms, 60 * ms)
    events += _request("V", "V-2", 70 * ms, 50 * ms, 100 * ms)
    events += _request("W", "W-1", 70 * ms, 50 * ms, 100 * ms)  # another lane: not counted
    events.append(scrape(200 * ms, vllm_text(12, 0.56, 2.1, 910, 100)))
    events += _request("V", "V-3", 300 * ms, 50 * ms, 400 * ms)  # after the last scrape: not counted
    v = server_view(events, "V")
    assert v.requests == 2 and v.client_requests == 2
    assert v.ttft_s == pytest.approx(0.03) and v.client_ttft_s == pytest.approx(0.04)
    assert v.gap_ttft_s == pytest.approx(0.01) and v.e2e_s == pytest.approx(0.05)
    assert v.client_e2e_s == pytest.approx(0.04) and v.client_prompt_tokens == 10
    assert server_view(events, "W") is None  # no scrape of that lane


def test_server_view_puts_each_scrape_where_it_was_read_not_where_its_parse_ended():
    """The /metrics parse runs in a thread: on a busy machine a scrape's event may come seconds after the read
    (``parse_s``).  Its counters are as of the read, so the client's requests are matched to the read time:
    a real vLLM run beside four CPU hogs compared 4 server requests with 1 client request."""
    ms = 1_000_000
    scrape = lambda t, text, parse_s: Event(t, schema.SERVER_METRICS, "V", None,  # noqa: E731
                                            {"ok": True, "parse_s": parse_s, **to_builtins(map_engine(parse(text)))})
    # first scrape read at 0 but emitted at 500 ms; the last read at 900 ms, emitted at 1,400 ms
    events = [scrape(500 * ms, vllm_text(10, 0.5, 2.0, 900, 100), 0.5)]
    events += _request("V", "V-1", 10 * ms, 30 * ms, 300 * ms)  # ended between the first read and its event
    events += _request("V", "V-2", 600 * ms, 50 * ms, 800 * ms)
    events += _request("V", "V-3", 950 * ms, 50 * ms, 1_200 * ms)  # after the last read: not counted there
    events.append(scrape(1_400 * ms, vllm_text(12, 0.56, 2.1, 910, 100), 0.5))
    v = server_view(events, "V")
    assert v.requests == 2 and v.client_requests == 2
    # a hostile or old recording's parse_s is ignored, never trusted
    for bad in (-5, "x", float("nan"), 1e9, True):
        events[0] = Event(500 * ms, schema.SERVER_METRICS, "V", None,
                          {"ok": True, "parse_s": bad, **to_builtins(map_engine(parse(vllm_text(10, 0.5, 2.0, 900, 100))))})
        assert server_view(events, "V").client_requests == 1  # V-1 ended before the event: left out


# -- issue 28 row 4/5: a shared engine, a restarting engine ------------------------------------------------------
def _scrape_at(t, n, ttft_sum, e2e_sum):
    return Event(t, schema.SERVER_METRICS, "V", None,
                 {"ok": True, **to_builtins(map_engine(parse(vllm_text(n, ttft_sum, e2e_sum, 900 + n, 0))))})


def test_a_restart_between_intermediate_scrapes_is_left_out_on_both_sides():
    ms = 1_000_000
    events = [_scrape_at(0, 10, 0.5, 2.0)]
    events += _request("V", "V-1", 10 * ms, 30 * ms, 60 * ms)
    events.append(_scrape_at(100 * ms, 11, 0.53, 2.05))
    events += _request("V", "V-2", 110 * ms, 30 * ms, 160 * ms)  # ends in the interval of the restart
    events.append(_scrape_at(200 * ms, 1, 0.02, 0.04))  # counters fell: the engine restarted in between
    events += _request("V", "V-3", 210 * ms, 20 * ms, 250 * ms)
    events += _request("V", "V-4", 260 * ms, 20 * ms, 290 * ms)
    events.append(_scrape_at(300 * ms, 3, 0.06, 0.12))
    v = server_view(events, "V")
    # the first-vs-last comparison would read 3 - 10 (a fall: "3 requests") against 4 client requests
    assert v.restarts == 1 and v.reset_at[0].t_s == pytest.approx(0.2)
    assert v.requests == 3 and v.client_requests == 3  # V-1, V-3, V-4 on both sides; V-2 on neither
    assert v.gap_reason is None and v.gap_e2e_s is not None
    assert v.e2e_s == pytest.approx((0.05 + 0.04 + 0.04) / 3, abs=1e-6)


def test_requests_another_client_sent_withhold_the_gaps_with_the_reason():
    ms = 1_000_000
    events = [_scrape_at(0, 10, 0.5, 2.0)]
    events += _request("V", "V-1", 10 * ms, 30 * ms, 60 * ms)
    events.append(_scrape_at(100 * ms, 19, 0.5 + 9 * 0.01, 2.0 + 9 * 0.02))  # 8 of the 9 were not lanemon's
    v = server_view(events, "V")
    assert v.requests == 9 and v.client_requests == 1 and v.foreign_requests == 8
    assert v.gap_ttft_s is None and v.gap_e2e_s is None
    assert "another client" in v.gap_reason and "9 vs 1" in v.gap_reason
    assert v.ttft_s is not None  # the engine's own figure stays, said to be a mixed set


def test_one_request_at_an_edge_is_not_another_client():
    ms = 1_000_000
    events = [_scrape_at(0, 10, 0.5, 2.0)]
    events += _request("V", "V-1", 10 * ms, 30 * ms, 60 * ms)
    events.append(_scrape_at(100 * ms, 12, 0.56, 2.1))
    v = server_view(events, "V")
    assert v.foreign_requests == 0 and v.gap_reason is None and v.gap_ttft_s is not None


def test_a_negative_gap_is_withheld_as_not_the_same_requests():
    ms = 1_000_000
    events = [_scrape_at(0, 10, 0.5, 2.0)]
    events += _request("V", "V-1", 10 * ms, 30 * ms, 60 * ms)
    events.append(_scrape_at(100 * ms, 11, 0.5 + 0.2, 2.0 + 0.3))  # the engine says 200 ms TTFT, the client 30
    v = server_view(events, "V")
    assert v.foreign_requests == 0 and v.gap_ttft_s is None and "cannot be negative" in v.gap_reason


def test_report_says_withheld_and_why():
    from lanemon.reports.sections.server import server_section

    from lanemon.results.analysis import as_analysis
    from lanemon.results.common import to_json_obj
    from lanemon.results.server import ServerReset, ServerView
    from typed_cells import full_result

    nothing = dict.fromkeys(("interval_s", "queue_s", "prefill_s", "decode_s", "itl_s", "tpot_s", "inference_s",
                             "client_tpot_s", "prompt_tokens", "generation_tokens", "prompt_tokens_computed",
                             "prompt_tokens_hit", "preemptions", "client_prompt_tokens", "client_generation_tokens"))
    block = ServerView(engine="vllm", requests=107, client_requests=9, scrapes=4, restarts=1, excluded_s=2.0,
                       reset_at=[ServerReset(t_s=1.0, reason="a counter fell")], foreign_requests=98,
                       ttft_s=0.1, client_ttft_s=0.05, gap_ttft_s=None, e2e_s=1.0, client_e2e_s=2.0,
                       gap_e2e_s=None, gap_reason="the engine counted 98 more requests than lanemon saw finish",
                       **nothing)
    sec = server_section(as_analysis({"decode": full_result({"bench": "decode", "config": {},
                                                             "lanes": {"V": {"server": to_json_obj(block)}}})}),
                         ["V"])
    row = sec.rows[0]
    got = dict(zip(sec.headers, row))  # one figure per column, under the catalogue's label
    assert (got["engine requests"], got["lanemon requests"], got["restarts"]) == ("107", "9", "1")
    assert got["TTFT gap"] == got["E2E gap"] == "—" and got["server TTFT"] == "0.10 s"  # withheld: not measured
    assert any("gaps withheld" in n for n in sec.notes) and any("withheld (—)" in n for n in sec.notes)
    assert any("98 more requests" in n for n in sec.notes) and any("restarted" in n for n in sec.notes)
