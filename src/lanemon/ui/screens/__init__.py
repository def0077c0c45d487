"""Screens of the lanemon UI."""

from lanemon.ui.screens.dashboard import DashboardScreen

__all__ = ["DashboardScreen"]
