"""The HTML report's SVG charts (lanemon.reports.charts): read the geometry back from the SVG.

Rules from issue 12 item 4: grouped bars with the lanes side by side per category (never drawn over
each other), each x label centred under its group, the legend above the plot (never over it), the
prefill chart's cache-hit markers with their value, labels that never overlap each other or a bar,
and every lane in the same colour in every chart of a report.
"""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET

from lanemon.reports.charts import NEUTRAL, Chart, lane_colour, svg_chart
from lanemon.reports.render import render_html

from test_report import writeup

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def bars(root: ET.Element) -> list[dict]:
    out = []
    for r in root.iter(f"{SVG}rect"):
        cls = r.get("class", "").split()
        if "bar" in cls and "light" not in cls:
            title = r.find(f"{SVG}title").text
            out.append({"cls": [c for c in cls if re.fullmatch(r"s\d|sn", c)][0], "x0": float(r.get("x")),
                        "x1": float(r.get("x")) + float(r.get("width")), "y0": float(r.get("y")),
                        "y1": float(r.get("y")) + float(r.get("height")), "title": title})
    return out


def texts(root: ET.Element, cls: str) -> list[dict]:
    out = []
    for t in root.iter(f"{SVG}text"):
        if cls in t.get("class", "").split() and t.get("x") is not None:
            out.append({"x": float(t.get("x")), "y": float(t.get("y")), "text": t.text})
    return out


def plot_top(root: ET.Element) -> float:
    """The y of the plot's top edge (the vertical axis line starts there)."""
    axes = [a for a in root.iter(f"{SVG}line") if a.get("class") == "axis" and a.get("x1") == a.get("x2")]
    return float(axes[0].get("y1"))


def category_chart(lanes: list[str], cats: list[str]) -> Chart:
    series = {n: [100.0 + 10 * j + 3 * i for i in range(len(cats))] for j, n in enumerate(lanes)}
    return Chart("bars", "Per-stream decode at C1 by prompt category", "prompt category",
                 "per-stream decode (tok/s)", cats, series)


def test_grouped_bars_side_by_side_labels_centred_legend_above_the_plot():
    cats = ["coding", "prose", "reasoning", "narrative", "summarization", "extraction", "translation", "math"]
    for lanes in (["A", "B"], ["A", "B", "C", "D"]):
        root = parse(svg_chart(category_chart(lanes, cats), lanes))
        bs = bars(root)
        assert len(bs) == len(lanes) * len(cats)
        ticks = [t for t in texts(root, "tick") if t["text"] in cats]
        assert [t["text"] for t in ticks] == cats
        for i, cat in enumerate(cats):
            group = [b for b in bs if f" {cat}:" in b["title"]]
            assert [b["title"].split()[0] for b in group] == lanes  # lane order within the group
            for a, b in zip(group, group[1:]):
                assert a["x1"] <= b["x0"] + 1e-6  # side by side, never drawn over each other
            centre = (group[0]["x0"] + group[-1]["x1"]) / 2
            assert abs(ticks[i]["x"] - centre) < 2.0  # the label sits under its own group
            if i:
                prev = [b for b in bs if f" {cats[i - 1]}:" in b["title"]]
                assert prev[-1]["x1"] < group[0]["x0"]  # a gap between groups
        top = plot_top(root)
        legend = texts(root, "legend")
        assert [t["text"] for t in legend] == lanes
        assert all(t["y"] < top - 4 for t in legend)  # above the plot, not over the bars
        assert all(b["y0"] >= top for b in bs)


def test_a_long_legend_wraps_and_the_plot_moves_down():
    lanes = ["vllm-h100-fp8-tp2-long-lane-name", "sglang-b200-nvfp4-another-long-name", "trt-llm-h200-third", "D"]
    root = parse(svg_chart(category_chart(lanes, ["a", "b"]), lanes))
    legend = texts(root, "legend")
    assert len({t["y"] for t in legend}) >= 2  # wrapped into rows
    assert max(t["x"] for t in legend) < 760
    assert all(t["y"] < plot_top(root) - 4 for t in legend)


def test_many_long_category_labels_are_rotated_not_overlapping():
    cats = [f"category-with-a-long-name-{i}" for i in range(10)]
    svg = svg_chart(category_chart(["A", "B"], cats), ["A", "B"])
    assert svg.count("rotate(-35)") >= 5
    short = svg_chart(category_chart(["A", "B"], ["p50", "p90", "p99"]), ["A", "B"])
    assert "rotate(-35)" not in short


def test_value_labels_never_overlap_each_other_or_a_bar():
    lanes = ["A", "B", "C", "D"]
    cats = ["coding", "prose", "reasoning", "narrative", "summarization", "extraction", "translation", "math"]
    chart = category_chart(lanes, cats)
    chart.series["B"] = [v - 9 for v in chart.series["A"]]  # a shorter bar beside a taller one
    root = parse(svg_chart(chart, lanes))
    bs = bars(root)
    labels = texts(root, "vlabel")
    assert labels, "some values fit over their bars"
    for t in labels:
        w = len(t["text"]) * 6.0
        box = (t["x"] - w / 2, t["x"] + w / 2, t["y"] - 9, t["y"])
        for b in bs:
            assert box[1] <= b["x0"] or box[0] >= b["x1"] or box[3] <= b["y0"], (t, b)
    for a in labels:
        for b in labels:
            if a is not b and abs(a["y"] - b["y"]) < 9:
                assert abs(a["x"] - b["x"]) >= (len(a["text"]) + len(b["text"])) * 3.0, (a, b)


def test_prefill_cache_hits_are_markers_with_their_value_and_a_legend_entry():
    page = render_html(writeup())
    svg = re.search(r'<section id="prefill">.*?(<svg.*?</svg>)', page, re.S).group(1)
    root = parse(svg)
    markers = [p for p in root.iter(f"{SVG}path") if p.get("class") == "marker"]
    # one marker per cache hit in the plot (+ one in the legend), each titled with lane, length and value
    titled = [p.find(f"{SVG}title").text for p in markers if p.find(f"{SVG}title") is not None]
    assert titled and all("cache hit tok/s" in t for t in titled)
    assert any(t.startswith("B ") and "12.5K" in t for t in titled)
    notes = texts(root, "note")
    assert "12.5K" in [n["text"] for n in notes]
    assert any("cache hit tok/s" in (t["text"] or "") for t in texts(root, "legend"))
    top = plot_top(root)
    assert all(n["y"] - 10 >= top - 6 for n in notes)  # inside the chart, under the legend


def test_a_lane_has_the_same_colour_in_every_chart_of_a_report():
    a = writeup()
    page = render_html(a)
    charts = re.findall(r"<svg.*?</svg>", page, re.S)
    assert len(charts) >= 4
    seen: dict[str, set[str]] = {}
    for svg in charts:
        for b in bars(parse(svg)):
            seen.setdefault(b["title"].split()[0], set()).add(b["cls"])
        for c in parse(svg).iter(f"{SVG}circle"):
            name = c.find(f"{SVG}title").text.split()[0]
            seen.setdefault(name, set()).add([k for k in c.get("class").split() if k.startswith("s")][0])
    assert seen["A"] == {"s0"} and seen["B"] == {"s1"}
    # the colour follows the lane's place in the report's lane order, not a chart's series order
    swapped = copy.deepcopy(a)
    swapped["environment"]["lanes"] = list(reversed(swapped["environment"]["lanes"]))
    svg = re.search(r'<section id="categories">.*?(<svg.*?</svg>)', render_html(swapped), re.S).group(1)
    by_lane = {b["title"].split()[0]: b["cls"] for b in bars(parse(svg))}
    assert by_lane == {"A": "s1", "B": "s0"}
    assert lane_colour("C", ["A", "B", "C"]) == 2 and lane_colour("I", list("ABCDEFGHI")) == 0


def test_a_series_that_is_not_a_lane_takes_the_neutral_colour():
    chart = Chart("bars", "t", "x", "prompts", ["0", "1"], {"A vs B": [3.0, 1.0]}, integer=True,
                  colors={"A vs B": NEUTRAL})
    assert {b["cls"] for b in bars(parse(svg_chart(chart, ["A", "B"])))} == {"sn"}
    page = render_html(writeup())
    assert "svg .sn {" in page and "--c7:" in page
