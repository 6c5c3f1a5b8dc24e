"""Budgets: a turn may make at most one tool call here; the second ends it, over budget.

    python examples/budgets.py                     # offline: the scripted calculator
    OPENAI_API_KEY=sk-... python examples/budgets.py --model gpt-4o-mini

With a budget every model response reports what the turn spent so far (tokens, cost);
a limit reached ends the turn with the outcome `OverBudget` instead of running on.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

import anyio

from toolreel.core import Finish
from toolreel.core.budget import Budget, Price
from toolreel.core.notices import Notice, UsageReported
from toolreel.shell import AgentOptions, run
from toolreel.testing import ScriptedServer, calculator


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def told(notice: Notice | Finish) -> None:
    """Print what the turn has spent after each model response."""
    if isinstance(notice, UsageReported):
        print(f"so far: {notice.turn.usage.total_tokens} tokens, ${notice.turn.cost:.6f}")


@contextlib.contextmanager
def connection(base_url: str | None, model: str) -> Iterator[tuple[str | None, str, str | None]]:
    """The server, model and key to use: those asked for, else the offline calculator."""
    if base_url or os.environ.get("OPENAI_API_KEY"):
        yield base_url, model, None  # the key: OPENAI_API_KEY
    else:
        with ScriptedServer(calculator) as server:
            yield server.url, "gpt-4o-mini", "none"  # it takes any key


def main() -> None:
    """Run one prompt that needs two tool calls under a budget of one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()

    with connection(args.base_url, args.model) as (base_url, model, key):
        options = AgentOptions(
            base_url=base_url,
            model=model,
            api_key=key,
            tools=[multiply, add],
            on_notice=told,
            budget=Budget(
                max_tool_calls=1,
                max_cost=0.05,
                prices={"gpt-4o-mini": Price(input_per_million=0.15, output_per_million=0.60)},
            ),
        )
        result = anyio.run(run, "What's 7 times 8, then add 5?", options)
    if result.over_budget is not None:
        print(result.reason.value, result.over_budget.message)
    else:
        print(result.reason.value, result.text)


if __name__ == "__main__":
    main()
