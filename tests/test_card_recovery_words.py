"""Live cards do not contradict themselves (issue 40 item 8): after a lane came back its card says the old
health-check failure *was* (and how long ago it came back), and the engine's generation rate between probes
is not shown as `gen 0.0 tok/s` while the lane serves."""

from __future__ import annotations


from textual.widgets import Label, Static

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from test_starved_notice import _wait  # the bounded wait for a state the pilot test asserts

S = 1_000_000_000
LANES = [{"name": "A", "url": "http://127.0.0.1:18999/v1", "model": "m"}]


def _events():
    evs = [Event(0, schema.LANE, "A", None, {"url": "http://127.0.0.1:18999/v1", "model": "m"}),
           Event(int(2.1 * S), schema.PROBE, "A", None, {"ok": False, "cls": "connect",
                                                          "message": "connection refused (/models)"}),
           Event(10 * S, schema.PROBE, "A", None, {"ok": True, "model": "m", "latency_s": 0.004}),
           Event(11 * S, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "running": 1,
                                                             "waiting": 0, "gen_tok_s": 41.2, "prompt_tok_s": 5.0}),
           Event(13 * S, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "running": 0,
                                                             "waiting": 0, "gen_tok_s": 0.0, "prompt_tok_s": 0.0}),
           Event(50 * S, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "running": 0,
                                                             "waiting": 0, "gen_tok_s": 0.0, "prompt_tok_s": 0.0})]
    return evs


async def test_a_recovered_lane_says_the_failure_was_and_the_idle_engine_is_not_zero():
    app = make_app(ScriptedSource(_events(), lanes=LANES, mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await _wait(pilot, lambda: app.state.lane("A").server.last_t == 50 * S)
        app.redraw(force=True)
        await pilot.pause()
        errors = str(app.screen.query_one("#lane-A #errors", Static).render())
        assert errors.startswith("was down +2.1s connection refused (/models)"), errors  # not a current fault
        assert "up again 40 s ago" in errors, errors  # back at +10.0s; the session is at +50.0s
        gen = str(app.screen.query_one("#lane-A #srv-gen", Label).render())
        assert "0.0" not in gen and gen.startswith("gen 41.2 tok/s") and "39 s ago" in gen, gen
