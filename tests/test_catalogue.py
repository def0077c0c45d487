"""The metric catalogue (measure/catalogue.py, issue 37 item 1): one entry per figure, docs/METRICS.md held to it,
and result tables whose figure columns take their label from it (a figure not in the catalogue cannot be shown)."""

from __future__ import annotations

import re
from pathlib import Path

from lanemon.measure.catalogue import BY_NAME, CATALOGUE, RULE_ROWS, UNITS, catalogue_markdown, label

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
