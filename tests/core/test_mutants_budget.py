"""Budget rules at their edges (core/_budget.py): tests that mutation testing showed missing.

Each pins a count, a boundary or a figure a budget's caller reads: which call in a
response is the first one refused, what `used` says, which scope an outcome names,
and what a response costs to the last digit.
"""

from __future__ import annotations

from toolreel.core import ToolCall, Usage
from toolreel.core._budget import admit, before_call
from toolreel.core.budget import Budget, BudgetScope, OverBudget, Price, Spending


def calls(*names: str) -> tuple[ToolCall, ...]:
    """One response's calls, to the tools named."""
    return tuple(ToolCall(id=f"c{n}", name=name, arguments="{}") for n, name in enumerate(names))


def test_a_tools_own_limit_refuses_the_first_call_past_it_and_counts_every_one_asked() -> None:
    budget = Budget(max_calls_per_tool={"add": 2})
    verdicts = admit(budget, Spending(), calls("add", "add", "add", "mul"))
    over = OverBudget(limit_name="tool_calls[add]", limit=2, used=3)
    assert verdicts == (None, None, over, None)


def test_the_total_limit_refuses_the_first_call_past_it() -> None:
    verdicts = admit(Budget(max_tool_calls=2), Spending(), calls("a", "b", "c"))
    assert verdicts == (None, None, OverBudget(limit_name="tool_calls", limit=2, used=3))


def test_a_session_budget_counts_the_calls_of_earlier_turns() -> None:
    budget = Budget(max_calls_per_tool={"add": 2}, scope=BudgetScope.SESSION)
    earlier = Spending(tool_calls=(("add", 1), ("mul", 4)))
    verdicts = admit(budget, earlier, calls("add", "add"))
    over = OverBudget(limit_name="tool_calls[add]", limit=2, used=3, scope=BudgetScope.SESSION)
    assert verdicts == (None, over)


def test_a_session_budget_out_of_model_calls_says_so() -> None:
    budget = Budget(max_model_calls=2, scope=BudgetScope.SESSION)
    over = before_call(budget, Spending(model_calls=2), final=False)
    assert over == OverBudget(limit_name="model_calls", limit=2, used=2, scope=BudgetScope.SESSION)
    assert before_call(budget, Spending(model_calls=1), final=False) is None


def test_a_response_costs_its_tokens_at_the_price_to_the_last_digit() -> None:
    price = Price(input_per_million=3, output_per_million=15)
    assert price.cost(Usage(input_tokens=1000, output_tokens=100)) == 0.0045


def test_cached_input_past_the_input_count_costs_only_its_own_rate() -> None:
    price = Price(input_per_million=3, output_per_million=15, cache_read_per_million=1)
    assert price.cost(Usage(input_tokens=10, cache_read_tokens=20)) == 20 / 1_000_000


def test_a_large_amount_is_written_out_not_in_exponent_form() -> None:
    over = OverBudget(limit_name="cost_usd", limit=1_000_000, used=1_234_567.5)
    assert over.message == "over budget: cost_usd limit 1000000 per turn, used 1234567.5"
