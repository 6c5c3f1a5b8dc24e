"""Evaluate a new model against recorded sessions: rerun each, check each, report.

    python examples/evaluate.py        # offline: two scripted models on 127.0.0.1

1. Twenty sessions of the model "old" are recorded in `shop.db`: each asks what an
   item costs in a currency; the model looks the price up, converts it, answers.
2. `evaluate` reruns every one against the model "new", the tools served from the
   recording, four at a time, and checks each rerun: the same outcome, the same
   answer, and a check of our own. "new" writes the currency code in lower case for
   yen: a conversion no recording has, so those reruns get an error result.
3. The report: a table, the failures, a summary, and `eval.md`. Run it again and
   nothing is rerun: the candidates are journaled (`eval-new/...`), only checked.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio

from toolreel.adapters import Session
from toolreel.core.budget import Budget, Price
from toolreel.shell import AgentOptions, checks, evaluate, run, tool
from toolreel.testing import Reply, ScriptedServer, text, tool_calls

PRICES = {"lamp": 40.0, "chair": 25.0, "desk": 120.0, "shelf": 60.0, "rug": 80.0}
RATES = {"EUR": 0.9, "GBP": 0.8, "JPY": 150.0, "CHF": 0.88}


@tool
def price(item: str) -> float:
    """The price of an item, in USD."""
    return PRICES.get(item, 0.0)


@tool
def convert(usd: float, currency: str) -> float:
    """An amount in USD converted to another currency."""
    return round(usd * RATES[currency.upper()], 2)


def model(body: dict[str, Any]) -> Reply:
    """The models "old" and "new": look up the price, convert it, answer."""
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    item, currency = re.findall(r"the (\w+) cost in (\w+)", question)[0]
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return tool_calls(("c1", "price", {"item": item}))
    if len(results) == 1:
        if body["model"] == "new" and currency == "JPY":
            currency = "jpy"  # a call no recording has
        return tool_calls(("c2", "convert", {"usd": json.loads(results[0]), "currency": currency}))
    try:
        return text(f"The {item} costs {float(results[-1])} {currency}.")
    except ValueError:  # an error result
        return text(f"Sorry, I could not convert the price of the {item}.")


def quotes_a_price(original: Session, candidate: Session) -> bool:
    """Our own check: the answer names an amount."""
    return re.search(r"\d+\.\d+", candidate.turns[-1].text) is not None


async def main() -> None:
    """Record twenty sessions, evaluate "new" against them, report."""
    with ScriptedServer(model) as server:
        connection: dict[str, Any] = {"base_url": server.url, "api_key": "none"}
        for number, (item, currency) in enumerate(
            (item, currency) for item in PRICES for currency in RATES
        ):
            recorded = AgentOptions(
                **connection,
                model="old",
                tools=[price, convert],
                journal="shop.db",
                session_id=f"q{number + 1:02d}-{item}-{currency}",
            )
            await run(f"What does the {item} cost in {currency}?", recorded)

        prices = {"old": Price(input_per_million=0.15, output_per_million=0.6)}
        prices["new"] = Price(input_per_million=2.5, output_per_million=10)
        newer = AgentOptions(**connection, model="new", budget=Budget(prices=prices))
        report = await evaluate(
            "shop.db",
            None,  # every recorded session
            newer,
            checks=[checks.same_outcome(), checks.same_answer(), quotes_a_price],
            tools="recorded",
            concurrency=4,
        )

    header, rows = report.table()
    widths = [max(len(line[column]) for line in [header, *rows]) for column in range(len(header))]
    for line in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
    for session, why in report.failures():
        print(f"{session}: {why}")
    print(report.summary())
    with open("eval.md", "w", encoding="utf-8") as out:
        out.write(report.markdown())
    print(f"pass rate {report.pass_rate:.2f}: under --min-pass 0.9 the command would exit 1")


if __name__ == "__main__":
    anyio.run(main)
