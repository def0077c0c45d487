"""Words of the HTML/Markdown report that said something else than they meant (issue 40 item 5)."""

from __future__ import annotations

from lanemon.reports.analyse import analyze_many
from lanemon.reports.render.html import render_html
from lanemon.reports.sections.environment import environment_rows
from lanemon.reports.sections.gauntlet import gauntlet_sections
from lanemon.results.gauntlet import GauntletConfigInfo, GauntletLane, GauntletResult
from lanemon.workloads.gauntlet.results import rep_figures

SAMPLES = "sample_sessions/"


def test_a_report_of_several_recordings_describes_all_of_them_in_its_header():
    files = [SAMPLES + f for f in ("agree.jsonl", "kl.jsonl", "today.jsonl", "yesterday.jsonl")]
    a = analyze_many(files)
    env = a.environment
    assert env.command.startswith("4 recordings: agree")  # not `command: agree` (the first one's)
    assert "kl" in env.command
    rows = dict(environment_rows(env))
    assert rows["duration"].endswith("in 4 recordings")  # the sum, said to be one
    assert all(f in rows["recordings"] for f in files)
    html = render_html(a)
    assert "command: agree ·" not in html and "command: 4 recordings" in html
    # a bench in two recordings: the one named first on the command line is used, said so
    assert any(w == f"decode appears in several recordings; the report uses the one named first on the command "
                    f"line ({SAMPLES}today.jsonl), not {SAMPLES}yesterday.jsonl" for w in a.warnings), a.warnings


def test_the_gauntlet_time_scale_note_only_when_it_scales():
    lane = GauntletLane(model=None, correct=3, reps=3, correct_per_rep=[True] * 3, tool_calls=[4, 4, 4],
                        median_wall_s=2.0, wall_s=[2.0, 2.1, 1.9], malformed_calls=[0, 0, 0], stopped=["answer"] * 3,
                        turns=[[], [], []], **rep_figures([[], [], []]))
    g = GauntletResult(bench="gauntlet", lanes={"A": lane}, config=GauntletConfigInfo(time_scale=1.0, hops=3),
                       summary="x")
    [sec, *_] = gauntlet_sections(g, ["A"])
    assert not any("divide by" in n for n in sec.notes)  # time scale 1: nothing to divide
    g.config.time_scale = 0.05
    [sec, *_] = gauntlet_sections(g, ["A"])
    assert any("divide by 0.05" in n for n in sec.notes)
