"""A turn over budget in both web encodings: usage so far as it runs, the limit at the end."""

from __future__ import annotations

import pytest
from web_support import check_ui, finish, fold_plain, fold_ui

from toolreel.core import Usage
from toolreel.core.budget import OverBudget, Spending
from toolreel.core.notices import TextStreamed, UsageReported

SPENT = Spending(usage=Usage(input_tokens=30, output_tokens=12), model_calls=2, cost=0.5)
REPORTED = UsageReported(turn=SPENT, session=SPENT)
SPENT_JSON = {
    "input_tokens": 30,
    "output_tokens": 12,
    "model_calls": 2,
    "tool_calls": {},
    "cost_usd": 0.5,
}
TOKENS = OverBudget(limit_name="total_tokens", limit=40, used=42)
BUDGET_JSON = {
    "limit_name": "total_tokens",
    "limit": 40.0,
    "used": 42.0,
    "scope": "turn",
    "message": "over budget: total_tokens limit 40 per turn, used 42",
}


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (TOKENS, "length"),
        (OverBudget(limit_name="tool_calls", limit=1, used=2), "other"),
        (OverBudget(limit_name="cost_usd", limit=1, used=2, text="5"), "stop"),
    ],
)
def test_the_ui_finish_part_names_the_budget_and_its_reason(outcome, reason) -> None:
    parts = fold_ui([TextStreamed(text="hi"), REPORTED, finish(outcome)])
    assert {
        "type": "data-spent",
        "data": {"turn": SPENT_JSON, "session": SPENT_JSON},
        "transient": True,
    } in parts
    last = parts[-1]
    assert last["finishReason"] == reason
    assert last["messageMetadata"]["reason"] == "over_budget"
    assert last["messageMetadata"]["budget"]["limit_name"] == outcome.limit_name
    check_ui(parts)


def test_the_plain_stream_tells_spending_and_done_names_the_budget() -> None:
    events = fold_plain([REPORTED, finish(TOKENS)])
    assert ("spent", {"turn": SPENT_JSON, "session": SPENT_JSON}) in events
    assert events[-1] == (
        "done",
        {"reason": "over_budget", "max_turns_reached": False, "text": "", "budget": BUDGET_JSON},
    )
