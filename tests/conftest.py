"""Shared fixtures: simulated lanes as real subprocesses on loopback."""

from __future__ import annotations

import os

import pytest

from realserver_fixtures import vllm_server, vllm_url  # noqa: F401 (session fixtures: one vLLM per session)
from simproc import SimProcess, sim_pair  # noqa: F401 (tests import them from here; bench scripts from simproc)


@pytest.fixture(scope="session")
def fast_sims():
    """Both simulated lanes at 20x speed (time_scale 0.05), shared by quick tests."""
    with sim_pair(0.05) as pair:
        yield pair


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Never write recordings or read config from the real user's XDG dirs."""
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
    os.environ.pop("LANEMON_THEME", None)
