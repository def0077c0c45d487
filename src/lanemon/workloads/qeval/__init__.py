"""qeval: the quality gate -- 75 auto-scored tasks (code, json, math, format) and a paired comparison.

* :mod:`.bank` -- the shipped tasks (``tasks.toml``), :func:`load_bank`, :func:`select_tasks`
* :mod:`.scorers` -- ``score(task, text) -> (passed, reason)``
* :mod:`.sandbox` -- the subprocess sandbox the code scorer runs model code in
* :mod:`.run` -- :func:`run_qeval` (a harness workload) and :func:`qeval_results` (from a recording)
* :mod:`.paired` -- :func:`compare_runs`, :func:`mcnemar_exact`

See docs/QEVAL.md.
"""

from .bank import KINDS, Task, load_bank, select_tasks
from .paired import compare_line, compare_runs, mcnemar_exact
from .run import qeval_results, run_qeval
from .scorers import score

__all__ = ["KINDS", "Task", "load_bank", "select_tasks", "score", "run_qeval", "qeval_results",
           "compare_runs", "compare_line", "mcnemar_exact"]
