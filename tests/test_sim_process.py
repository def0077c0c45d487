"""The demo lanes as child processes (cli/common.py demo_lanes, sim/process.py SimProcess): their options
on the command line, a clear error when one does not start, and no orphan when lanemon is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lanemon.cli.common import CommandError, demo_lanes, sim_args
from lanemon.sim.fault_spec import parse_fault


def test_sim_args_spell_the_simulators_options() -> None:
    args = sim_args([parse_fault("drop:5@0.5")], agent="loop", thinking=True, needle_miss=False,
                    spec_accept=(1, 4), qeval_misses=["a", "b"], context_len=None)
    assert args == ("--agent", "loop", "--thinking", "--spec-accept", "1-4", "--qeval-misses", "a,b",
                    "--fault", "drop:5@0.5")


def test_demo_lanes_are_child_processes_with_their_options() -> None:
    import httpx

    def sim_children() -> set[str]:
        return set(subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "lanemon.sim"], capture_output=True,
                                  text=True).stdout.split())

    before = sim_children()  # the suite's session-wide simulators (fast_sims) are this process's children too
    with demo_lanes(0.05, faults_b=[parse_fault("http:503")]) as lanes:
        assert [lane.name for lane in lanes] == ["A", "B"]
        assert httpx.get(lanes[0].url + "/models", timeout=10).status_code == 200
        body = {"model": "x", "prompt": "hi", "max_tokens": 2}
        assert httpx.post(lanes[1].url + "/completions", json=body, timeout=10).status_code == 503
        assert len(sim_children() - before) == 2


def test_a_simulator_that_does_not_start_is_one_clear_line() -> None:
    with pytest.raises(CommandError) as info:
        with demo_lanes(0.05, agent="no-such-agent"):
            pass
    message = str(info.value)
    assert "\n" not in message
    assert "cannot start the demo lanes" in message and "invalid choice" in message


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")  # a zombie has exited (nobody reaped it yet)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_lanes_die_when_lanemon_is_killed() -> None:
    script = ("import os, sys, time\n"
              "from lanemon.cli.common import demo_lanes\n"
              "with demo_lanes(0.05):\n"
              "    print('ready', flush=True)\n"
              "    time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        out = subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout
        children = [int(p) for p in out.split()]
        assert len(children) == 2 and all(_alive(pid) for pid in children)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30  # the kernel signals them at once; this bounds a loaded machine
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in children)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
