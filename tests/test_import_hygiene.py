"""The core never imports Textual (STYLE.md #2): headless runs, replay and reports stay cheap."""

import subprocess
import sys
import textwrap

CORE = [
    "lanemon.cli.main",
    "lanemon.config",
    "lanemon.bus",
    "lanemon.measure.metrics",
    "lanemon.folds.dashboard",
    "lanemon.measure.records",
    "lanemon.sessions.sources",
    "lanemon.client.http",
    "lanemon.events",
    "lanemon.recording.writer",
    "lanemon.recording.reader",
    "lanemon.workloads.check",
    "lanemon.workloads.harness",
    "lanemon.cli.common",
    "lanemon.cli.race",
    "lanemon.cli.bench",
    "lanemon.cli.report",
    "lanemon.sim.server",
    "lanemon.sim.engine",
    "lanemon.untrusted",
    "lanemon.measure.stats",
    "lanemon.measure.load",
    "lanemon.measure.server",
    "lanemon.folds.series",
    "lanemon.folds.bench",
    "lanemon.folds.gauntlet",
    "lanemon.reports.analyse",
    "lanemon.reports.compare",
    "lanemon.reports.render",
    "lanemon.sessions.gauntlet",
    "lanemon.workers.pool",
    "lanemon.workloads.bench.load",
    "lanemon.workloads.bench.sweep",
    "lanemon.cli.bench_load",
]


def test_core_imports_without_textual():
    code = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "textual" or name.startswith("textual."):
                    raise ImportError("textual is blocked in this test")
                return None
        sys.meta_path.insert(0, Block())
        import importlib
        for mod in {CORE!r}:
            importlib.import_module(mod)
        assert not any(m == "textual" or m.startswith("textual.") for m in sys.modules)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_import_linter_contract_holds():
    import shutil

    exe = shutil.which("lint-imports") or str(__import__("pathlib").Path(sys.executable).with_name("lint-imports"))
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    out = subprocess.run([exe], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "5 kept, 0 broken" in out.stdout  # textual, sim <-> measuring side both ways, layers, no cycles
