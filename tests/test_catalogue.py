"""The metric catalogue (measure/catalogue.py, issue 37 item 1): one entry per figure, docs/METRICS.md held to it,
and result tables whose figure columns take their label from it (a figure not in the catalogue cannot be shown)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from load_sweep_results import load_result, rep_json, sweep_result
from lanemon.measure.catalogue import BY_NAME, CATALOGUE, RULE_ROWS, UNITS, catalogue_markdown, label
from lanemon.reports import prefill_table, tables
from lanemon.results.common import as_result
from lanemon.results.decode import DecodeResult
from lanemon.results.prefill import PrefillResult
from typed_cells import full_result

DOC = Path(__file__).resolve().parents[1] / "docs" / "METRICS.md"


def _section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading)
    out = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        out.append(line)
    return out


def test_every_entry_is_whole():
    assert len(BY_NAME) == len(CATALOGUE)  # names unique
    proms = [m.prometheus for m in CATALOGUE if m.prometheus]
    assert len(proms) == len(set(proms))
    for m in CATALOGUE:
        assert m.unit in UNITS, m.name
        assert m.definition and m.label is not None and m.title, m.name
        if m.prometheus:
            assert m.prometheus.startswith("lanemon_") and m.prometheus_type in ("histogram", "counter", "gauge")
            assert m.prometheus_help, m.name
            # Prometheus base units: seconds, not ms; a counter's name ends in _total
            assert not m.prometheus.endswith("_ms")
            assert m.prometheus_type != "counter" or m.prometheus.endswith(("_total", "_joules"))
    otel = {m.otel for m in CATALOGUE if m.otel}
    assert otel == {"gen_ai.client.operation.time_to_first_chunk", "gen_ai.client.operation.time_per_output_chunk",
                    "gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
    for m in CATALOGUE:
        if m.otel or m.vllm:
            assert m.differs or m.name in ("decode_span", "prefix_hit_rate", "preemptions", "spec_acceptance_rate",
                                           "requests_total"), f"{m.name}: say how lanemon's definition differs"


def test_metrics_md_documents_every_entry_with_its_unit_and_nothing_else():
    text = DOC.read_text()
    rows = [r for r in _section(text, "## The catalogue") if r.startswith("| `")]
    documented = {re.match(r"\| `([a-z0-9_]+)`", r).group(1): r for r in rows}
    assert set(documented) == set(BY_NAME), (set(documented) ^ set(BY_NAME))
    for m in CATALOGUE:
        cells = [c.strip() for c in documented[m.name].strip("|").split("|")]
        assert cells[1] == m.unit, f"{m.name}: unit {cells[1]!r} in METRICS.md, {m.unit!r} in the catalogue"
    # the table is the catalogue's own rendering, row for row
    assert rows == catalogue_markdown()[2:]


def test_every_figure_the_definitions_table_names_is_in_the_catalogue():
    defined = []
    for line in text_lines(DOC.read_text()):
        if not line.startswith("| ") or line.startswith(("| figure", "|---")):
            continue
        first = line.split("|")[1]
        defined.append(re.sub(r"\s*\(.*\)\s*$", "", first.replace("**", "")).strip())
    assert "TTFT" in defined and "goodput" in defined
    rows = {m.doc_row for m in CATALOGUE if m.doc_row}
    missing = [d for d in defined if d not in rows and d not in RULE_ROWS]
    assert not missing, f"figures defined in METRICS.md but not in the catalogue: {missing}"
    assert rows <= set(defined), rows - set(defined)


def text_lines(text: str) -> list[str]:
    """The definitions table: the first table after the intro (header ``| figure | definition |``)."""
    lines = text.splitlines()
    start = lines.index("| figure | definition |")
    out = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


# ------------------------------------------------------------------ the tables read the catalogue
def _rich_results():
    """Results that show every optional column: energy, cost, engine counters, SLO, reasoning, chunks, reps."""
    cell = {"aggregate_tok_s": 200.0, "steady_tok_s": 210.0, "ttft_p50_s": 0.2, "ttft_p90_s": 0.3, "ttft_n": 20,
            "per_stream_tok_s_p50": 50.0, "tpot_p50_s": 0.02, "errors": 1, "truncated": 1, "requests": 8,
            "reasoning_tokens": 40, "ttfo_s": 0.3, "tokens_per_chunk": 2.0, "itl_p50_s": 0.04,
            "reps": [200.0, 190.0], "steady_reps": [210.0, 205.0], "energy_j": 100.0, "tokens_per_joule": 3.0,
            "gpu_power_w_mean": 250.0, "usd_per_1m_output_tokens": 1.2,
            "goodput": {"rate_rps": 1.0, "share": 0.5, "good": 4, "total": 8, "held": True, "targets": {}}}
    slo = {"ttft": 0.5, "tpot": 0.03}
    decode = as_result(full_result({"bench": "decode", "config": {"slo": slo},
                                    "lanes": {"A": {"levels": {"1": dict(cell), "2": dict(cell)}},
                                              "B": {"levels": {"1": dict(cell), "2": dict(cell)}}}}), DecodeResult)
    sweep = sweep_result({"A": {"levels": {"1": cell, "2": cell}, "gain_per_doubling": {"2": 0.05}},
                          "B": {"levels": {"1": cell}}}, slo=slo)
    rep = rep_json(measured=40, ok=39, errors=1, scheduled_rate_rps=4.0, sent_rate_rps=4.0, completed_rate_rps=3.9,
                   output_tok_s=812.0, ttft_s={"p50": 0.2, "p99": 0.4}, tpot_s={"p50": 0.02}, e2e_s={"p99": 3.1},
                   send_lag_s={"p99": 0.001}, energy_j=10.0, tokens_per_joule=3.0, gpu_power_w_mean=200.0,
                   usd_per_1m_output_tokens=2.0,
                   engine_counters={"prefix_hit_rate": 0.5, "preemptions": 2, "spec_acceptance_rate": 0.7},
                   slo={"goodput_rps": 3.2, "good": 32, "total": 40, "share": 0.8, "duration_s": 10.0, "held": True,
                        "targets": {"ttft": {"attainment": 0.9}}})
    load = load_result({"A": [rep, rep], "B": [rep]}, {"load": {"arrival": "poisson", "rate": 4}, "slo": slo})
    pcell = {"prefill_tok_s": 5000.0, "ttft_s": 0.4, "cache_hit_tok_s": 50000.0, "repeat_tok_s": 50000.0,
             "errors": 0, "prompt_tokens": 2000, "requests": 3, "reps": [5000.0, 5100.0],
             "goodput": {"rate_rps": 1.0, "share": 1.0, "good": 3, "total": 3, "held": True, "targets": {}}}
    prefill = as_result(full_result({"bench": "prefill", "config": {"slo": slo},
                                     "lanes": {"A": {"lengths": {"2000": dict(pcell)}},
                                               "B": {"lengths": {"2000": dict(pcell)}}}}), PrefillResult)
    return [tables.decode_table(decode), tables.sweep_table(sweep), tables.load_table(load),
            prefill_table.prefill_table(prefill)]


def _sample_tables():
    from lanemon.reports.analyse import analyze
    root = Path(__file__).resolve().parents[1] / "sample_sessions"
    out = []
    for name, build in (("decode", tables.decode_table), ("prefill", prefill_table.prefill_table)):
        a = analyze(root / f"{name}.jsonl")
        out.append(build(a.bench(name)))  # the typed result the report's section hands its table
    return out


@pytest.mark.parametrize("which", ["built", "samples"])
def test_every_figure_column_takes_its_label_from_the_catalogue(which):
    built = _rich_results() if which == "built" else _sample_tables()
    seen = set()
    for t in built:
        for c in t.columns:
            if c.metric is None:
                assert c.label in tables.KEY_COLUMNS, f"{t.key}: column {c.label!r} shows a figure the catalogue " \
                                                      "does not hold"
                continue
            assert c.metric in BY_NAME, c.metric
            seen.add(c.metric)
            assert BY_NAME[c.metric].label in c.label or (BY_NAME[c.metric].short or "\0") in c.label, (
                f"{t.key}: {c.label!r} is not the catalogue's label of {c.metric}")
    if which == "built":
        assert {"steady_tok_s", "aggregate_tok_s", "ttft", "tokens_per_joule", "usd_per_1m", "served_rps",
                "prefill_tok_s", "goodput", "slo_attainment", "prefix_hit_rate"} <= seen


def test_a_column_for_a_figure_the_catalogue_does_not_hold_cannot_be_made():
    with pytest.raises(KeyError):
        tables.fig("tok_per_banana", 1)
    assert tables.fig("ttft", 1, "p50").label == label("ttft", "p50") == "TTFT p50"
    assert tables.fig("usd_per_1m", 3).label == "$/1M tok"
