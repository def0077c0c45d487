"""Every stored SVG snapshot belongs to a test that is collected.

syrupy fails a single-process run on a snapshot no test uses any more (a renamed test, a dropped size), but
under pytest-xdist (README's test command: ``-n 2``) it leaves that check out (syrupy 4: "running syrupy with
pytest-xdist is only partially functional").  This test keeps it: each file
``__snapshots__/<module>/<test name>.svg`` must name a test this session collected from ``<module>.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__"


def orphans(snapshot_files: list[Path], collected: set[tuple[str, str]]) -> list[str]:
    """The snapshot files (``module/name.svg``) whose module was collected but no test of that name."""
    modules = {module for module, _ in collected}
    return sorted(f"{f.parent.name}/{f.name}" for f in snapshot_files
                  if f.parent.name in modules and (f.parent.name, f.stem) not in collected)


def test_orphans_are_the_files_no_collected_test_names():
    files = [Path("test_a/test_x[100x30].svg"), Path("test_a/test_x[160x45].svg"), Path("test_a/test_gone.svg"),
             Path("test_b/test_y.svg")]
    collected = {("test_a", "test_x[100x30]"), ("test_a", "test_x[160x45]")}
    assert orphans(files, collected) == ["test_a/test_gone.svg"]  # test_b not collected: not judged
    assert orphans(files, collected | {("test_b", "test_z")}) == ["test_a/test_gone.svg", "test_b/test_y.svg"]


def test_every_snapshot_file_names_a_collected_test(request):
    opt = request.config.option
    if opt.keyword or opt.markexpr or any("::" in str(arg) for arg in request.config.args):
        pytest.skip("a selection (-k, -m or a test id) collects part of a module: whole modules only")
    collected = {(Path(item.nodeid.split("::")[0]).stem, item.name) for item in request.session.items}
    left = orphans(sorted(SNAPSHOTS.glob("*/*.svg")), collected)
    assert not left, f"snapshots no collected test uses (delete them, or the test lost its name): {left}"
