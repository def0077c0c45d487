"""Shared fixtures: simulated lanes as real subprocesses on loopback."""

from __future__ import annotations

import os
import tempfile

import pytest

from realserver_fixtures import vllm_server, vllm_url  # noqa: F401 (session fixtures: one vLLM per session)
from simproc import SimProcess, sim_pair  # noqa: F401 (tests import them from here; bench scripts from simproc)


# The test processes' children (`python -m lanemon ...`, the simulators: hundreds of processes a run) keep their
# bytecode outside the tree.  With PYTHONDONTWRITEBYTECODE set (as where CI ran: its clones hold no .pyc) each
# of them compiled every lanemon module it imported from source again: ~0.15 CPU-s a process.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"lanemon-pycache-{os.getuid()}"))

# pytest-xdist (README's test command runs `-n 2 --dist loadgroup`): each worker is its own pytest session
# with its own session and module fixtures.  Tests that share an expensive fixture are kept on one worker, so
# it is built once and never twice at the same time: a module whose tests use a session fixture named here
# goes whole into that group (one vLLM for the run, not one per worker), and a test that uses a module-scoped
# fixture goes with the rest of its module (as `--dist loadfile` would).  An explicit
# `@pytest.mark.xdist_group` (the Ray tests: "ray") wins.  Single-process runs ignore the marks.
SHARED_SESSION_GROUPS = {"vllm_server": "vllm"}


def _fixture_defs(item):
    info = getattr(item, "_fixtureinfo", None)
    return [defs[-1] for defs in info.name2fixturedefs.values() if defs] if info is not None else []


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks into the node ids
def pytest_collection_modifyitems(config, items):
    module_of = {item: item.nodeid.split("::")[0] for item in items}
    module_group: dict[str, str] = {}
    for item in items:
        for fixdef in _fixture_defs(item):
            if fixdef.argname in SHARED_SESSION_GROUPS:
                module_group[module_of[item]] = SHARED_SESSION_GROUPS[fixdef.argname]
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        group = module_group.get(module_of[item])
        if group is None and any(fixdef.scope in ("class", "module", "package") for fixdef in _fixture_defs(item)):
            group = module_of[item]
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def fast_sims():
    """Both simulated lanes at 20x speed (time_scale 0.05), shared by quick tests."""
    with sim_pair(0.05) as pair:
        yield pair


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Never write recordings or read config from the real user's XDG dirs, nor share a cache between tests
    (`lanemon web` writes its page templates there: two xdist workers could rewrite the same files at once)."""
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
    os.environ.pop("LANEMON_THEME", None)
