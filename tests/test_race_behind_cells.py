"""A lane that tied the race's winner reads ``tie`` under ``E2E vs winner`` (the race screen showed ``+0 µs``), the
winner's own row reads ``winner``; --json keeps the numbers.  One wording, with the
verdict's tie threshold (TIE_S): reports/sections/race.behind_cells."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from lanemon.measure.catalogue import NOT_MEASURED
from lanemon.ui.widgets.race_results import RaceResults
from lanemon.reports.sections.race import behind_cells
from lanemon.workloads.race import TIE_S, race_results
from lanemon.events import Event
from test_race import _one_lane
from test_race_fixtures import MS, typed_race


def _race():
    """A won; B took as long (0.0 behind), C 0.3 ms longer (a tie: it rounds to 0 ms), D 12 ms less (A was sent
    sooner), E 0.15 s longer, F failed."""
    lanes = {"A": {"total_s": 1.0, "finish_rank": 1},
             "B": {"total_s": 1.0, "finish_rank": 2, "behind_s": 0.0, "behind_ratio": 1.0},
             "C": {"total_s": 1.0003, "finish_rank": 3, "behind_s": 0.0003, "behind_ratio": 1.0003},
             "D": {"total_s": 0.988, "finish_rank": 4, "behind_s": -0.012, "behind_ratio": 0.988},
             "E": {"total_s": 1.15, "finish_rank": 5, "behind_s": 0.15, "behind_ratio": 1.15},
             "F": {"error": {"cls": "http", "message": "503"}}}
    return typed_race("A", lanes, {"runner_up": "B", "total_s_delta": 0.0, "total_s_ratio": 1.0})


def test_behind_cells_say_a_tie_and_the_winner_in_words():
    race = _race()
    assert {n: behind_cells(race, n) for n in race.lanes} == {
        "A": ("winner", NOT_MEASURED), "B": ("tie", "×1.00"), "C": ("tie", "×1.00"), "D": ("-12 ms", "×0.99"),
        "E": ("+150 ms", "×1.15"), "F": (NOT_MEASURED, NOT_MEASURED)}
    assert 0.0003 < TIE_S < 0.012  # C's gap is under the verdict's tie threshold, D's is not


def test_the_race_screen_table_reads_tie_not_plus_zero():
    console = Console(width=140, record=True, file=io.StringIO())
    console.print(RaceResults._table(_race()))
    rows = {line.split()[0]: " ".join(line.split()) for line in console.export_text().splitlines()[1:]}
    assert rows["A"].endswith("1.00 s winner —")
    assert rows["B"].endswith("1.00 s tie ×1.00") and rows["C"].endswith("1.00 s tie ×1.00")
    assert rows["D"].endswith("988 ms -12 ms ×0.99") and rows["E"].endswith("1.15 s +150 ms ×1.15")
    assert not any("µs" in row or "+0" in row for row in rows.values())


@pytest.mark.parametrize("b_step_us", [5000, 4970])  # B took as long as A, or 0.3 ms less (sent 0.7 ms later)
def test_a_recorded_tie_reads_tie_and_its_json_keeps_the_number(b_step_us):
    evs = [Event(0, "mark", None, None, {"label": "race 1", "bench": "race", "phase": "start", "race": 1,
                                         "prompt": "p", "lanes": ["A", "B"]})]
    evs += _one_lane("A", 1, 1 * MS, 50, 10, 5)
    evs += _one_lane("B", 1, 1700 * 1000, 50, 10, None, step_us=b_step_us)
    evs.sort(key=lambda e: e.t)
    evs.append(Event(evs[-1].t + MS, "mark", None, None, {"label": "race 1", "bench": "race", "phase": "end",
                                                           "race": 1}))
    race = race_results(evs).races[0]
    b = race.lanes["B"]
    assert race.winner == "A" and b.behind_s is not None and abs(b.behind_s) < TIE_S
    assert behind_cells(race, "B")[0] == "tie" and behind_cells(race, "A") == ("winner", NOT_MEASURED)
    assert "finished together" in race.verdict  # the verdict's word for the same gap
