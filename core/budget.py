"""Budgets: what a turn or a session may spend (`LoopConfig.budget`), and what it spent.

A `Budget` sets limits on tokens, model calls, tool calls and cost (the cost
from a model's `Price`), over a turn or the whole session (`BudgetScope`); its
`on_exceeded` (`BudgetPolicy`) says how a turn over it ends: with the outcome
`OverBudget` at once, or after one last answer without tools. `Spending` is
what was spent, as the `UsageReported` notice tells it. The rules are in
core/_budget.py.
"""

from __future__ import annotations

from ._budget import Budget, BudgetPolicy, BudgetScope, OverBudget, Price, Spending

__all__ = ["Budget", "BudgetPolicy", "BudgetScope", "OverBudget", "Price", "Spending"]
