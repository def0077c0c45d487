"""Every screen of the app, built by its name (``d``, ``b``, ``r``, ... and ``action_open``): what each needs from
the app (its folds, the race plan, the compare result), the workload screens imported when first opened."""

from __future__ import annotations

from typing import Any

from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.screens.dashboard import DashboardScreen


def make_screen(app: Any, name: str) -> LanemonScreen:
    """The screen ``name`` of ``app`` (a :class:`lanemon.ui.app.LanemonApp`); ValueError for an unknown name."""
    if name == "dashboard":
        return DashboardScreen(list(app.state.lanes), source=app.source)
    if name == "bench":
        from lanemon.ui.screens.bench import BenchScreen

        assert app.bench is not None
        return BenchScreen(app.bench.kind, app.bench.lanes or list(app.state.lanes))
    if name == "race":
        from lanemon.ui.screens.race import RaceScreen, can_race

        racing = can_race(app.source)
        if racing and app._next_prompt is None:
            from lanemon.workloads.race import PromptCycle

            app._next_prompt = PromptCycle()
        plan, app.race_plan = app.race_plan, None
        return RaceScreen(list(app.state.lanes), racing=racing, next_prompt=app._next_prompt, plan=plan)
    if name == "gauntlet":
        from lanemon.ui.screens.gauntlet import GauntletScreen

        return GauntletScreen(list(app.gauntlet.lanes))
    if name == "compare":
        from lanemon.ui.screens.compare import CompareScreen

        return CompareScreen(app.compare_result or {})
    if name == "alerts":
        from lanemon.ui.screens.alerts import AlertsScreen

        return AlertsScreen()
    if name == "errors":
        from lanemon.ui.screens.errors import ErrorsScreen

        return ErrorsScreen()
    if name == "history":
        from lanemon.ui.screens.history import HistoryScreen

        return HistoryScreen()
    if name == "result":
        from lanemon.ui.screens.result import ResultScreen

        return ResultScreen(app.result_kind or "agree", getattr(app.source, "recording", None))
    if name == "timeline":
        from lanemon.ui.screens.timeline import TimelineScreen

        cell = app.timeline.cells[-1] if app.bench is not None and app.timeline.cells else None
        return TimelineScreen(app.timeline, cell=cell)
    raise ValueError(f"unknown screen {name!r}")
