"""Report renderers on hand-made analysis dicts (the write-up's figures): every format, verdicts follow numbers."""

from __future__ import annotations

import copy
import csv
import io
import json
import re

import pytest

from lanemon.reports.verdict import verdict
from lanemon.reports.render import FORMATS, render, render_csv, render_html, render_json, render_markdown
from lanemon.reports.render.csv import CSV_COLUMNS
from typed_cells import full_result
from lanemon.results.common import to_json_obj
from test_race_fixtures import typed_race, typed_result



def dlevel(agg, ttft=None, ps=None, errors=0, reps=None, unstable=False):
    reps = reps or [agg]
    return {"aggregate_tok_s": agg, "ttft_p50_s": ttft, "ttft_p90_s": ttft and ttft * 1.3, "ttft_p99_s": ttft and ttft * 1.6,
            "ttft_n": 8, "ttft_max_s": ttft and ttft * 1.7,
            "per_stream_tok_s_p50": ps or agg, "errors": errors, "requests": 8, "output_tokens": 2048,
            "tokens_estimated": False, "reps": reps, "min": min(reps), "max": max(reps), "median": sorted(reps)[len(reps)//2],
            "unstable": unstable}

CATS_A = {"coding": 148, "prose": 88, "reasoning": 95, "narrative": 90, "json": 132, "math": 120, "summary": 110, "translate": 115}
CATS_B = {"coding": 134, "prose": 74, "reasoning": 80, "narrative": 77, "json": 125, "math": 110, "summary": 100, "translate": 104}

def writeup():
    A = [118, 190, 212, 218, 221, 223]
    B = [104, 175, 205, 226, 247, 263]
    dec = {"bench": "decode", "lanes": {
        "A": {"levels": {str(i+1): dlevel(v, 0.17 if i == 0 else 0.17 + 0.05*i, 118 if i == 0 else v/(i+1)) for i, v in enumerate(A)},
              "categories": {c: {"per_stream_tok_s": v, "requests": 2, "errors": 0} for c, v in CATS_A.items()}},
        "B": {"levels": {str(i+1): dlevel(v, 0.22 if i == 0 else 0.22 + 0.04*i, 104 if i == 0 else v/(i+1)) for i, v in enumerate(B)},
              "categories": {c: {"per_stream_tok_s": v, "requests": 2, "errors": 0} for c, v in CATS_B.items()}}},
        "crossover": {"leader_before": "A", "leader_after": "B", "between": [3, 4]}, "interrupted": False, "config": {"levels": [1,2,3,4,5,6]}}
    def pc(pt, tps, hit=None, reps=None, unstable=False):
        reps = reps or [tps]
        return {"prompt_tokens": pt, "prefill_tok_s": tps, "ttft_s": pt / tps, "cache_hit_tok_s": hit, "reps": reps,
                "min": min(reps), "max": max(reps), "median": sorted(reps)[len(reps)//2], "unstable": unstable, "error": None}
    pre = {"bench": "prefill", "lanes": {
        "A": {"lengths": {"2950": pc(2950, 2420), "12000": pc(12000, 2600), "93000": pc(93000, 2650), "131000": pc(131000, 2580), "300000": pc(300000, 2500)}},
        "B": {"lengths": {"2950": pc(2950, 3654, hit=12542), "12000": pc(12000, 4160), "93000": pc(93000, 5300), "131000": pc(131000, 4600),
                          "300000": pc(300000, 2648, reps=[1791, 2648, 3029], unstable=True)}}},
        "interrupted": False, "config": {}}
    def nd(found=True, ttft=1.0):
        return {"found": found, "key": "K7QX2M9A", "answer": "K7QX2M9A" if found else "nope", "depth": 0.5, "ttft_s": ttft, "prefill_tok_s": 20000/ttft, "error": None,
                "found_count": int(found), "runs_count": 1}
    nee = {"bench": "needles", "lanes": {n: {"lengths": {"20000": nd(), "131073": nd(ttft=30), "300000": nd(ttft=110)}} for n in "AB"}, "interrupted": False, "cut": [], "config": {}}
    race = typed_result([typed_race(w, {
            "A": {"ttft_s": 0.17, "decode_tok_s": 140, "output_tokens": 200, "tokens_estimated": False, "total_s": 1.6 + i*0.1, "finish_rank": 1 if w == "A" else 2, "text": "..."},
            "B": {"ttft_s": 0.22, "decode_tok_s": 128, "output_tokens": 200, "tokens_estimated": False, "total_s": 1.8, "finish_rank": 1 if w == "B" else 2, "text": "..."}},
        race=i+1, prompt=p) for i, (p, w) in enumerate([("Write a Python function that merges two sorted lists.", "A"), ("Describe a harbour at dawn.", "A"), ("Tell a story | about a keeper", "B")])])
    env = {"lanes": [{"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "tensorfold-exl3"},
                     {"name": "B", "url": "http://127.0.0.1:8888/v1", "model": "sglang-native"}],
           "lanemon": "0.1.0", "reported_by": "0.1.0", "schema": "1.0", "created": "2026-10-18T09:00:00+00:00",
           "command": "bench decode --demo", "host": {"platform": "Linux-6.1-x86_64", "python": "3.11.9", "cpus": 8, "memory_bytes": 32*2**30},
           "duration_s": 812.4, "events": 123456}
    return {"environment": env, "decode": full_result(dec), "prefill": full_result(pre), "needles": full_result(nee),
            "race": race, "warnings": []}


def swap_lanes(analysis):
    """The same analysis with lane A's figures given to B and B's to A."""
    out = copy.deepcopy(analysis)
    for bench in ("decode", "prefill", "needles"):
        lanes = out[bench]["lanes"]
        lanes["A"], lanes["B"] = lanes["B"], lanes["A"]
    c = out["decode"]["crossover"]
    c["leader_before"], c["leader_after"] = c["leader_after"], c["leader_before"]
    for race in out["race"].races:
        race.lanes["A"], race.lanes["B"] = race.lanes["B"], race.lanes["A"]
        race.winner = {"A": "B", "B": "A"}[race.winner]
    out["race"].lanes["A"], out["race"].lanes["B"] = out["race"].lanes["B"], out["race"].lanes["A"]
    return out


def test_verdict_reads_like_the_writeup():
    v = verdict(writeup())
    assert v[0].startswith("One user, short prompts → A: ~1.1× faster decode at C1 (118 vs 104 tok/s, noise band "
                           "5 %), TTFT 0.17 s vs 0.22 s; faster in every prompt category")
    assert v[1] == ("Four or more users or long prompts → B: overtakes between C3 and C4 (C6: 263 vs 223 tok/s, "
                    "noise band 5 %); prefill 1.1–2.0× faster.")
    assert any("cache hits, not prefill" in s and "12,542" in s for s in v)
    assert "Needles: all found on both lanes (20K–300K)." in v
    assert "Races → A: won 2 of 3 (B 1)." in v


def test_verdict_swaps_when_the_figures_swap():
    v = verdict(swap_lanes(writeup()))
    assert v[0].startswith("One user, short prompts → B: ~1.1× faster decode at C1 (118 vs 104 tok/s, noise band")
    assert v[1].startswith("Four or more users or long prompts → A: overtakes between C3 and C4 (C6: 263 vs 223")
    assert "Races → B: won 2 of 3 (A 1)." in v


def test_verdict_claims_only_what_the_data_supports():
    a = writeup()
    # no prefill data: no "long prompts"/"short prompts" and no prefill claim
    del a["prefill"]
    v = verdict(a)
    assert v[0].startswith("One user → A:")
    assert v[1].startswith("Four or more users → B:") and "prefill" not in v[1]
    assert not any("cache" in s for s in v)
    # a lead inside the noise band is a tie, and no crossover means no "overtakes"
    a = writeup()
    for lvl, c in a["decode"]["lanes"]["B"]["levels"].items():
        c["aggregate_tok_s"] = a["decode"]["lanes"]["A"]["levels"][lvl]["aggregate_tok_s"] * 0.99
    a["decode"]["crossover"] = None
    v = verdict(a)
    assert "tie on decode at C1" in v[0]
    assert not any("overtakes" in s for s in v)
    # a needle missed is said
    a = writeup()
    a["needles"]["lanes"]["B"]["lengths"]["300000"]["found"] = False
    assert "Needles: missed by B at 300K; 5 of 6 found." in verdict(a)


def test_markdown_has_every_table_and_omits_empty_sections():
    md = render_markdown(writeup())
    for title in ("## Verdict", "## Decode: aggregate throughput vs concurrency", "## Time to first token at C1",
                  "## Per-category decode at C1", "## Prefill: prompt tokens / TTFT, cold",
                  "## Needles: long-context retrieval", "## Races", "## Environment"):
        assert title in md
    assert "| C6 | A | 223 | 420 ms | max 714 ms (n=8) | 37.2 | 0 | 8 | B (1.18×) |\n|  | B ▲ | 263 |" in md
    # the cache hit in its own column, the prefill cell stays cold (reports/prefill_table.prefill_table)
    assert "| 2,950 | A | 2,420 | 1.22 s | — |  |" in md and "|  | B | 3,654 | 807 ms | 12,542 | 1.51× |" in md
    assert "Tell a story \\| about a keeper" in md  # pipes escaped
    assert re.search(r"A  [▁▂▃▄▅▆▇█]{6}  C1→C6", md)  # sparkline
    a = writeup()
    for key in ("prefill", "needles", "race"):
        del a[key]
    md = render_markdown(a)
    assert "## Decode" in md and "## Prefill" not in md and "## Needles" not in md and "## Races" not in md


def test_html_is_one_self_contained_file_with_svg_charts():
    page = render_html(writeup())
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 4  # decode, TTFT, categories, prefill
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert "prefers-color-scheme: dark" in page
    assert ">12.5K</text>" in page and "cache hit tok/s" in page and "crossover" in page  # marker + legend
    assert "aggregate decode (tok/s)" in page and "concurrent streams (C)" in page  # labelled axes, units
    # untrusted text is escaped
    a = writeup()
    a["race"].races[0].prompt = "<script>alert(1)</script>"
    assert "<script>alert" not in render_html(a)


def test_json_and_csv():
    import msgspec

    from lanemon.results.analysis import Analysis, as_analysis

    a = writeup()
    text = render_json(a)  # the typed analysis as JSON: it reads back strictly as the same analysis
    assert msgspec.json.decode(text, type=Analysis, strict=True) == as_analysis(a)
    got = json.loads(text)
    assert got["decode"]["lanes"]["B"]["levels"]["6"]["aggregate_tok_s"] == 263
    assert got["environment"]["lanes"][0] == a["environment"]["lanes"][0] and got["warnings"] == []
    rows = list(csv.DictReader(io.StringIO(render_csv(a))))
    assert tuple(rows[0]) == CSV_COLUMNS
    c6 = [r for r in rows if r["bench"] == "decode" and r["cell_kind"] == "level" and r["cell"] == "6"]
    assert {r["lane"]: float(r["tok_s"]) for r in c6} == {"A": 223.0, "B": 263.0}
    b2950 = next(r for r in rows if r["bench"] == "prefill" and r["lane"] == "B" and r["cell"] == "2950")
    assert float(b2950["tok_s"]) == 3654.0 and float(b2950["cache_hit_tok_s"]) == 12542.0
    assert sum(r["bench"] == "race" for r in rows) == 6
    assert sum(r["cell_kind"] == "category" for r in rows) == 16


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_an_empty_analysis(fmt):
    a = {"environment": {"lanes": [{"name": "A", "url": "u", "model": None}]}, "warnings": ["cut short"]}
    text = render(a, fmt)
    assert text
    if fmt in ("md", "html"):
        assert "cut short" in text and "no bench or race results" in text


def test_single_lane_and_unknown_format():
    a = writeup()
    a["environment"]["lanes"] = a["environment"]["lanes"][:1]
    for bench in ("decode", "prefill", "needles"):
        del a[bench]["lanes"]["B"]
    del a["race"]
    v = verdict(a)
    assert v[0].startswith("Decode on A: 118 tok/s at C1, peaking at 223 tok/s at C6")
    assert "Needles: all found on lane A" in v[1]
    with pytest.raises(ValueError):
        render(a, "pdf")
