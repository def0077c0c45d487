"""qeval: the quality gate -- 75 auto-scored tasks (code, json, math, format) and a paired comparison.

* :mod:`.bank` -- the shipped tasks (``tasks.toml``), :func:`load_bank`, :func:`select_tasks`
* :mod:`.scorers` -- ``score(task, text) -> (passed, reason)``
* :mod:`.sandbox` -- the OS sandbox (bubblewrap) the code scorer runs model code in
* :mod:`.values` -- decoding and type-strict comparison of the values the sandbox returns
* :mod:`.run` -- :func:`run_qeval` (a harness workload, records every verdict), :func:`qeval_results`
  (the recorded verdicts, nothing executed) and :func:`rescore` (the explicit ``qeval rescore``)
* :mod:`.paired` -- :func:`compare_runs`, :func:`mcnemar_exact`

See docs/QEVAL.md.
"""

from .bank import KINDS, Task, load_bank, select_tasks
from .paired import compare_line, compare_runs, mcnemar_exact
from .run import qeval_results, rescore, run_qeval
from .scorers import score

__all__ = ["KINDS", "Task", "load_bank", "select_tasks", "score", "run_qeval", "qeval_results", "rescore",
           "compare_runs", "compare_line", "mcnemar_exact"]
