"""Every refused policy value says which field, what it got and what it takes, word for word.

A `ConfigError` is the caller's only guide to a wrong budget, fallback or
compaction; these pin each message, and the boundaries each check draws.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolreel.core import ConfigError
from toolreel.core.budget import Budget, Price
from toolreel.core.compaction import KeepTokens, KeepTurns, Summarise
from toolreel.core.policies import FallbackPolicy

REFUSED: list[tuple[str, Callable[[], Any], str]] = [
    (
        "fallback: one str",
        lambda: FallbackPolicy(models="b"),
        "models='b' is not allowed: a list of model names, not one str",
    ),
    (
        "fallback: no model",
        lambda: FallbackPolicy(models=()),
        "models=() is not allowed: at least one model name",
    ),
    (
        "fallback: an empty name",
        lambda: FallbackPolicy(models=("b", "")),
        "models='' is not allowed: a model name (a non-empty str)",
    ),
    (
        "fallback: a name that is not a str",
        lambda: FallbackPolicy(models=("b", 3)),  # type: ignore[arg-type]
        "models=3 is not allowed: a model name (a non-empty str)",
    ),
    (
        "fallback: a success status",
        lambda: FallbackPolicy(models=("b",), on_status={200}),
        "on_status=200 is not allowed: an HTTP error status (400-599)",
    ),
    (
        "fallback: past 599",
        lambda: FallbackPolicy(models=("b",), on_status={600}),
        "on_status=600 is not allowed: an HTTP error status (400-599)",
    ),
    (
        "fallback: a bool status",
        lambda: FallbackPolicy(models=("b",), on_status={True}),
        "on_status=True is not allowed: an HTTP error status (400-599)",
    ),
    (
        "fallback: a status as text",
        lambda: FallbackPolicy(models=("b",), on_status={"503"}),  # type: ignore[arg-type]
        "on_status='503' is not allowed: an HTTP error status (400-599)",
    ),
    (
        "keep turns: none",
        lambda: KeepTurns(turns=0),
        "turns=0 is not allowed: an int >= 1",
    ),
    (
        "keep turns: a bool",
        lambda: KeepTurns(turns=True),
        "turns=True is not allowed: an int >= 1",
    ),
    (
        "keep turns: negative pinned",
        lambda: KeepTurns(turns=1, pinned=-1),
        "pinned=-1 is not allowed: an int >= 0",
    ),
    (
        "keep turns: a bool pinned",
        lambda: KeepTurns(turns=1, pinned=False),
        "pinned=False is not allowed: an int >= 0",
    ),
    (
        "keep tokens: a float",
        lambda: KeepTokens(tokens=1.5),  # type: ignore[arg-type]
        "tokens=1.5 is not allowed: an int >= 1",
    ),
    (
        "summarise: within no window",
        lambda: Summarise(within=3),  # type: ignore[arg-type]
        "within=3 is not allowed: KeepTurns or KeepTokens",
    ),
    (
        "budget: a negative count",
        lambda: Budget(max_model_calls=-1),
        "max_model_calls=-1 is not allowed: None or an int >= 0",
    ),
    (
        "budget: a bool count",
        lambda: Budget(max_tool_calls=True),
        "max_tool_calls=True is not allowed: None or an int >= 0",
    ),
    (
        "budget: a negative cost",
        lambda: Budget(max_cost=-0.5),
        "max_cost=-0.5 is not allowed: a number >= 0",
    ),
    (
        "budget: a bool cost",
        lambda: Budget(max_cost=True),
        "max_cost=True is not allowed: a number >= 0",
    ),
    (
        "budget: an unnamed tool",
        lambda: Budget(max_calls_per_tool={"": 1}),
        "max_calls_per_tool='' is not allowed: tool names (non-empty str)",
    ),
    (
        "budget: a tool name that is not a str",
        lambda: Budget(max_calls_per_tool=[(3, 1)]),  # type: ignore[list-item]
        "max_calls_per_tool=3 is not allowed: tool names (non-empty str)",
    ),
    (
        "budget: a negative tool limit",
        lambda: Budget(max_calls_per_tool={"add": -1}),
        "max_calls_per_tool['add']=-1 is not allowed: an int >= 0",
    ),
    (
        "budget: a bool tool limit",
        lambda: Budget(max_calls_per_tool={"add": True}),
        "max_calls_per_tool['add']=True is not allowed: an int >= 0",
    ),
    (
        "budget: a price that is not a Price",
        lambda: Budget(prices={"m": 3.0}),  # type: ignore[arg-type]
        "prices['m']=3.0 is not allowed: a Price(input_per_million=...)",
    ),
    (
        "price: negative",
        lambda: Price(input_per_million=-1, output_per_million=1),
        "input_per_million=-1 is not allowed: a number >= 0",
    ),
    (
        "price: a str",
        lambda: Price(input_per_million=1, output_per_million="2"),  # type: ignore[arg-type]
        "output_per_million='2' is not allowed: a number >= 0",
    ),
    (
        "price: a negative cache rate",
        lambda: Price(input_per_million=1, output_per_million=1, cache_read_per_million=-2),
        "cache_read_per_million=-2 is not allowed: a number >= 0",
    ),
    (
        "budget: a tool the session does not have",
        lambda: Budget(max_calls_per_tool={"sub": 1}).check_config("m", frozenset({"add", "mul"})),
        "max_calls_per_tool='sub' is not allowed: a configured tool's name (tools: add, mul)",
    ),
    (
        "budget: a tool limit and no tools",
        lambda: Budget(max_calls_per_tool={"sub": 1}).check_config("m", frozenset()),
        "max_calls_per_tool='sub' is not allowed: a configured tool's name (tools: none)",
    ),
    (
        "budget: a cost without the model's price",
        lambda: Budget(
            max_cost=1.0,
            prices={
                "a": Price(input_per_million=1, output_per_million=1),
                "b": Price(input_per_million=1, output_per_million=1),
            },
        ).check_config("m", frozenset()),
        "max_cost=1.0 is not allowed: a Price for the model 'm' (prices given for: a, b; "
        "none is known for it: give Budget(prices={model: Price(...)}))",
    ),
    (
        "budget: a cost and no price at all",
        lambda: Budget(max_cost=1.0).check_price("m"),
        "max_cost=1.0 is not allowed: a Price for the model 'm' (prices given for: no model; "
        "none is known for it: give Budget(prices={model: Price(...)}))",
    ),
]


@pytest.mark.parametrize(
    ("build", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_a_refused_value_says_which_field_what_it_got_and_what_it_takes(
    build: Callable[[], Any], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        build()
    assert str(refused.value) == message


ACCEPTED: list[tuple[str, Callable[[], Any]]] = [
    ("fallback: the lowest error status", lambda: FallbackPolicy(models=("b",), on_status={400})),
    ("fallback: the highest", lambda: FallbackPolicy(models=("b",), on_status={599})),
    ("keep turns: one", lambda: KeepTurns(turns=1, pinned=0)),
    ("keep tokens: one", lambda: KeepTokens(tokens=1)),
    ("summarise: within tokens", lambda: Summarise(within=KeepTokens(tokens=10))),
    ("budget: zero allows none", lambda: Budget(max_model_calls=0, max_calls_per_tool={"a": 0})),
    (
        "budget: a free model",
        lambda: Budget(
            max_cost=0, prices={"m": Price(input_per_million=0, output_per_million=0)}
        ).check_config("m", frozenset()),
    ),
]


@pytest.mark.parametrize("build", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_the_edges_of_each_check_are_allowed(build: Callable[[], Any]) -> None:
    build()


def test_limits_and_prices_are_kept_sorted_by_name() -> None:
    cheap, dear = (Price(input_per_million=n, output_per_million=n) for n in (1, 9))
    budget = Budget(max_calls_per_tool={"mul": 1, "add": 5}, prices={"z": cheap, "a": dear})
    assert budget.max_calls_per_tool == (("add", 5), ("mul", 1))
    assert budget.prices == (("a", dear), ("z", cheap))
