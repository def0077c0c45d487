"""Race and gauntlet screens with more than four lanes: the cards wrap onto rows (2 x 3 for six lanes)
instead of one row scrolling sideways, at 100x30 and 160x45.

The six-lane snapshots were looked at (rendered to PNG) before they were accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.widgets.lane_card import LaneCard, card_columns
from test_gauntlet_ui import LANES as G_LANES, fixed_events
from test_race_fixtures import LANES as R_LANES, race_events
from test_ui_snapshots import settle

SNAP_PATH = Path("recordings/20260503-101500-demo.jsonl")
MS = 1_000_000
COPIES = {"A": ("C", "E"), "B": ("D", "F")}
"""Lanes C-F run A's or B's events, each a few ms later than the one before."""


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.parametrize("lanes, width, least, expected", [
    (2, 160, 24, 2), (4, 98, 24, 4),    # up to four side by side
    (5, 158, 24, 3), (6, 98, 24, 3),    # two rows of three (never four over one)
    (7, 158, 24, 4), (8, 98, 24, 4),    # two rows of four
    (4, 98, 30, 2),                     # three fit, but 3 + 1 is unbalanced: 2 x 2
    (8, 98, 30, 3),                     # 30 wide at 100 columns: three per row, three rows
    (1, 40, 24, 1), (3, 40, 24, 1),     # a narrow screen: one per row
])
def test_card_columns_wrap_more_than_four_lanes_into_balanced_rows(lanes, width, least, expected):
    assert card_columns(lanes, width, least) == expected


def six(events: list[Event], lanes: list[dict]) -> tuple[list[Event], list[dict]]:
    """``events`` of lanes A and B with four more lanes (C-F) doing what A or B did, a little later."""
    def rename(value, old: str, new: str):
        if isinstance(value, str) and value.startswith(f"{old}-"):
            return new + value[len(old):]
        return value

    by_name = {lane["name"]: lane for lane in lanes}
    more = [dict(by_name[src], name=name, url=f"http://10.0.0.{i + 3}:8000/v1")
            for i, (name, src) in enumerate((("C", "A"), ("D", "B"), ("E", "A"), ("F", "B")))]
    all_lanes = lanes + more
    out: list[Event] = []
    for ev in events:
        data = dict(ev.data)
        if "lanes" in data:  # the start mark names its lanes
            data["lanes"] = all_lanes if data["lanes"] and isinstance(data["lanes"][0], dict) else \
                [lane["name"] for lane in all_lanes]
        if isinstance(data.get("config"), dict) and "lanes" in data["config"]:
            data["config"] = dict(data["config"], lanes=[lane["name"] for lane in all_lanes])
        out.append(Event(ev.t, ev.kind, ev.lane, ev.req, data))
        for k, name in enumerate(COPIES.get(ev.lane or "", ()), start=1):
            out.append(Event(ev.t + 9 * k * MS, ev.kind, name, rename(ev.req, ev.lane, name), dict(ev.data)))
    out.sort(key=lambda e: e.t)
    return out, all_lanes


def race_app():
    events, lanes = six(race_events(races=1), R_LANES)
    return make_app(ScriptedSource(events, lanes=lanes, mode="replay", speed=4.0, recording_path=SNAP_PATH))


def gauntlet_app():
    events, lanes = six(fixed_events(hops=8, reps=2, partial={"A": 5}), G_LANES)
    return make_app(ScriptedSource(events, lanes=lanes, mode="demo", hold=True), screen="gauntlet")


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", ["race", "gauntlet"])
async def test_six_lanes_wrap_into_two_rows_of_three_within_the_screen(screen, size):
    app = race_app() if screen == "race" else gauntlet_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, ("r",) if screen == "race" else ())
        assert app.screen_name() == screen
        cards = [c for c in app.screen.query(LaneCard)]
        assert [c.lane for c in cards] == list("ABCDEF")
        rows = sorted({c.region.y for c in cards})
        assert len(rows) == 2 and [sum(1 for c in cards if c.region.y == y) for y in rows] == [3, 3]
        width = app.screen.size.width
        assert all(c.region.x >= 0 and c.region.right <= width and c.region.width >= 24 for c in cards)
        grid = cards[0].parent
        assert grid.max_scroll_x == 0  # nothing off to the side
        assert all(c.region.height >= 5 for c in cards)
        if screen == "race":  # every lane's figures, the finished race's ranks
            ranks = {c.lane: str(c.query_one("#rank").render()) for c in cards}
            assert ranks["A"] == "1st" and set(ranks.values()) >= {"1st", "2nd"}
            scrolls = [(card, card.query_one("#text-scroll")) for card in cards]
            # a card anchors its text once it outgrows the box, after a refresh, and Textual scrolls to the end
            # at the next layout: on a busy machine that can come after settle's last pause (a bounded wait)
            for _ in range(60):
                if all(s.scroll_y >= s.max_scroll_y for _, s in scrolls):
                    break
                await pilot.pause(0.05)
            for card, scroll in scrolls:  # every card shows the end of its lane's text, the shortest ones too
                assert scroll.region.height >= 1 and card.content_region.contains_region(scroll.region), card.lane
                assert scroll.scroll_y >= scroll.max_scroll_y, card.lane


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_race_six_lanes(snap_compare, size):
    assert snap_compare(race_app(), terminal_size=size, run_before=lambda pilot: settle(pilot, ("r",)))


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_gauntlet_six_lanes(snap_compare, size):
    assert snap_compare(gauntlet_app(), terminal_size=size, run_before=settle)
