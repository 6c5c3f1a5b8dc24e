"""`--max-total-tokens`, `--max-tool-calls`, `--max-model-calls`, `--max-cost`, `--price`: a budget.

The flags become one `Budget` (core/_budget.py) on the options of `run`, `chat`
and `serve`; with none of them there is no budget. `--price MODEL=IN,OUT`
(USD per million input and output tokens, repeatable) prices a model, which
`--max-cost` needs for the model used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from toolreel.core.budget import Budget, BudgetPolicy, BudgetScope, Price

#: The budget's count limits: the option, its parameter, the `Budget` field, its help.
LIMITS = (
    ("--max-total-tokens", "max_total_tokens", "Tokens (in + out) per turn at most."),
    ("--max-input-tokens", "max_input_tokens", "Input tokens per turn at most."),
    ("--max-output-tokens", "max_output_tokens", "Output tokens per turn at most."),
    ("--max-tool-calls", "max_tool_calls", "Tool calls per turn at most (0: none run)."),
    ("--max-model-calls", "max_model_calls", "Model calls per turn at most."),
)


def _prices(ctx: click.Context, param: click.Parameter, given: Sequence[str]) -> dict[str, Price]:
    """Each `--price MODEL=IN,OUT` as the model's `Price`."""
    prices: dict[str, Price] = {}
    for item in given:
        model, _, rates = item.rpartition("=")
        parts = rates.split(",")
        try:
            if not model or len(parts) != 2:
                raise ValueError(item)
            prices[model] = Price(
                input_per_million=float(parts[0]), output_per_million=float(parts[1])
            )
        except ValueError as exc:
            raise click.BadParameter(
                f"{item!r}: MODEL=IN,OUT, USD per million tokens, e.g. gpt-4o-mini=0.15,0.6"
            ) from exc
    return prices


def options() -> list[Callable[[Any], Any]]:
    """The budget's click options, in help order."""
    made = [
        click.option(flag, name, type=click.IntRange(min=0), metavar="N", help=text)
        for flag, name, text in LIMITS
    ]
    return [
        *made,
        click.option("--max-cost", type=click.FloatRange(min=0), metavar="USD", help=COST_HELP),
        click.option(
            "--price",
            "prices",
            multiple=True,
            metavar="MODEL=IN,OUT",
            callback=_prices,
            help="USD per million input and output tokens of MODEL (repeatable).",
        ),
        click.option(
            "--budget-scope",
            type=click.Choice([scope.value for scope in BudgetScope]),
            default=BudgetScope.TURN.value,
            help="Count the budget per turn (default) or over the whole session.",
        ),
        click.option(
            "--on-over-budget",
            type=click.Choice([policy.value for policy in BudgetPolicy]),
            default=BudgetPolicy.STOP.value,
            help="stop (default), or final_answer: one last model call without tools.",
        ),
    ]


COST_HELP = "USD per turn at most (needs --price for the model)."


def budget_of(params: dict[str, Any]) -> Budget | None:
    """The budget the flags describe; None when no limit and no price is given."""
    limits: dict[str, Any] = {name: params.get(name) for _, name, _ in LIMITS}
    cost, prices = params.get("max_cost"), params.get("prices") or {}
    if all(value is None for value in limits.values()) and cost is None and not prices:
        return None
    return Budget(
        **limits,
        max_cost=cost,
        prices=prices,
        scope=BudgetScope(params.get("budget_scope") or "turn"),
        on_exceeded=BudgetPolicy(params.get("on_over_budget") or "stop"),
    )
