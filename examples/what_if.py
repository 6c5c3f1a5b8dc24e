"""What if: fork a recorded session at a round, rerun it against another model, diff them.

    python examples/what_if.py        # offline: two scripted models on 127.0.0.1

1. A session of the model "old" is recorded in `shop.db`: it looks up a price, then
   converts it, then answers.
2. `fork` at round 1 with the lookup's result replaced: the steps before are the
   original's (checked as replay checks them); the model answers the edit live.
3. `rerun` asks the same prompt of the model "new", the tools served from the
   recording: "new" calls the lookup as "old" did (served) and the conversion with
   other arguments (no recording has it: with tools="recorded" it gets an error).
4. `diff_sessions` says where each parts from the original, and how.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from toolreel.adapters import Session, SQLiteJournal, diff_sessions
from toolreel.shell import AgentOptions, Edit, fork, rerun, run, tool
from toolreel.testing import Reply, ScriptedServer, text, tool_calls


@tool
def price(item: str) -> float:
    """The price of an item, in USD."""
    return {"lamp": 40.0}.get(item, 0.0)


@tool
def convert(usd: float, currency: str) -> float:
    """An amount in USD converted to another currency."""
    return round(usd * 0.9, 2)


def model(body: dict[str, Any]) -> Reply:
    """The models "old" and "new": look up the price, convert it, answer."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return tool_calls(("c1", "price", {"item": "lamp"}))
    if len(results) == 1:
        usd = json.loads(results[0])
        # "new" sends the currency in lower case: a call no recording has
        currency = "eur" if body["model"] == "new" else "EUR"
        return tool_calls(("c2", "convert", {"usd": usd, "currency": currency}))
    try:
        return text(f"The lamp costs {float(results[-1])} EUR.")
    except ValueError:  # an error result
        return text(f"I could not convert the price: {results[-1]}")


async def main() -> None:
    """Record, fork, rerun, diff."""
    with ScriptedServer(model) as server:
        options = AgentOptions(
            base_url=server.url,
            model="old",
            api_key="none",
            tools=[price, convert],
            journal="shop.db",
            session_id="original",
        )
        first = await run("What does the lamp cost in euros?", options)
        print("1. original:", first.text)

        journal = SQLiteJournal("shop.db")
        opened = AgentOptions(
            base_url=server.url,
            model="old",
            api_key="none",
            tools=[price, convert],
            auto_execute_tools=True,  # the fork's Client runs the tools the model calls
            journal=journal,
        )
        edit = Edit(results={"c1": "50.0"})
        client = fork(journal, "original", at_round=1, edit=edit, into="forked", options=opened)
        async with client:
            finish = await client.wait()
        assert finish is not None
        print("2. forked:", finish.text)
        print(diff_sessions("original", "forked", journal=journal))

        newer = AgentOptions(
            base_url=server.url, model="new", api_key="none", tools=[price, convert]
        )
        result = await rerun(journal, "original", options=newer, tools="recorded", into="rerun")
        assert isinstance(result.session, Session)  # a chat's (an agent run's: AgentSession)
        print("3. rerun:", result.session.turns[0].text)
        print(
            f"   {result.served} call served from the recording, {len(result.unmatched)} unmatched"
        )
        print(diff_sessions(result.original, result.session))
        journal.close()


if __name__ == "__main__":
    anyio.run(main)
