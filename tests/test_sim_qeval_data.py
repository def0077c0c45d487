"""The simulator's own copy of the qeval prompts and scripted answers agrees with the task bank.

The simulator may not import the measuring side (issue 15), so it answers qeval prompts from
``src/lanemon/sim/qeval_answers.json``.  This test (which may import both sides) fails when the bank's
prompts or scripted answers change without the copy.  Regenerate it with
``.venv/bin/python tests/test_sim_qeval_data.py --write``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "lanemon" / "sim" / "qeval_answers.json"


def bank_answers() -> dict:
    from lanemon.workloads.qeval.bank import load_bank

    return {"note": "generated from lanemon/workloads/qeval/tasks.toml by tests/test_sim_qeval_data.py --write; "
                    "the simulator's scripted qeval answers (sim/qeval_responder.py)",
            "tasks": [{"id": t.id, "prompt": t.prompt, "reference": t.reference, "wrong": t.wrong}
                      for t in load_bank().values()]}


def test_sim_qeval_data_agrees_with_the_bank():
    from lanemon.sim.qeval_responder import load_answers

    want = bank_answers()["tasks"]
    got = json.loads(DATA.read_text(encoding="utf-8"))["tasks"]
    assert [t["id"] for t in got] == [t["id"] for t in want]
    for g, w in zip(got, want):
        assert g == w, f"{w['id']}: the sim's copy differs from the bank (run this file with --write)"
    assert list(load_answers()) == [t["id"] for t in want]


def test_sim_answers_every_bank_prompt_and_misses_by_id():
    from lanemon.sim.qeval_responder import QevalResponder
    from lanemon.workloads.qeval.bank import load_bank

    r = QevalResponder("json_escape")
    for t in load_bank().values():
        assert r.answer("  " + t.prompt + "\n") == (t.wrong if t.id == "json_escape" else t.reference), t.id


def test_sim_package_never_imports_the_measuring_side():
    import subprocess

    code = ("import sys, lanemon.sim.server, lanemon.sim.faults, lanemon.sim.options, lanemon.sim.__main__; "
            "from lanemon.sim.qeval_responder import QevalResponder; QevalResponder(); "
            "bad = sorted(m for m in sys.modules if m.split('.')[:2] in (['lanemon', p] for p in "
            "('client', 'measure', 'folds', 'workloads', 'reports', 'sessions', 'ui', 'cli'))); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DATA.write_text(json.dumps(bank_answers(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {DATA}")
    else:
        print("usage: python tests/test_sim_qeval_data.py --write")
