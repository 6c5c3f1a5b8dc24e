"""Costs without hand-written prices: the genai-prices table (`toolreel[prices]`) fills them in.

Against the scripted OpenAI-compatible server on 127.0.0.1, asked for a model the table
knows ("gpt-4o-mini", billed at OpenAI's prices behind any gateway). The expected
amounts are computed with genai-prices' own `calc_price`, not with toolreel's code.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import anyio
import genai_prices
import pytest
from click.testing import CliRunner

from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli
from toolreel.core import Usage
from toolreel.core.budget import Budget, Price
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, run, tool, verify
from toolreel.shell._prices import _table, known_price
from toolreel.shell.errors import ConfigError
from toolreel.shell.scripted import Reply, ScriptedServer, text, tool_calls

MODEL = "gpt-4o-mini"


@tool("add", "Add", {"a": int, "b": int})
def add_tool(args: dict) -> dict:
    return {"result": args["a"] + args["b"]}


def options(server: ScriptedServer, budget: Budget, **extra) -> AgentOptions:
    return AgentOptions(
        model=MODEL,
        base_url=server.url,
        api_key="sk-test",
        tools=[add_tool],
        auto_execute_tools=True,
        budget=budget,
        **extra,
    )


def table_cost(input_tokens: int, output_tokens: int) -> float:
    """What genai-prices itself says `MODEL` costs for these tokens."""
    usage = genai_prices.Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return float(genai_prices.calc_price(usage, MODEL, provider_id="openai").total_price)


def costly(reply: Reply) -> Reply:
    """`reply` reporting 100,000 input and 20,000 output tokens."""
    return Reply(text=reply.text, calls=reply.calls, usage=(100_000, 20_000))


def test_a_known_model_is_costed_without_prices() -> None:
    with ScriptedServer([costly(text("hi"))]) as server:
        result = anyio.run(run, "hello", options(server, Budget()))
    assert result.spent.cost == pytest.approx(table_cost(100_000, 20_000))
    assert result.spent.cost > 0


def test_a_cost_limit_stops_a_session_without_prices(tmp_path: Path) -> None:
    add = tool_calls(("c1", "add", {"a": 1, "b": 2}))
    script = [costly(add), costly(add), costly(add), text("never asked")]
    one_call = table_cost(100_000, 20_000)
    journal = tmp_path / "j.db"
    budget = Budget(max_cost=one_call * 1.5)  # the second call passes it
    with ScriptedServer(script) as server:
        result = anyio.run(run, "add", options(server, budget, journal=journal))
        assert len(server.requests) == 2
    assert result.reason is FinishReason.OVER_BUDGET
    assert result.over_budget is not None
    assert result.over_budget.limit_name == "cost_usd"
    assert result.over_budget.used == pytest.approx(2 * one_call)
    store = SQLiteJournal(journal)
    try:  # the price is the config's, journaled: the session replays to the same effects
        session = verify(store, result.session_id)
        assert session.config.budget is not None
        assert session.config.budget.price(MODEL) == known_price(MODEL, "openai")
    finally:
        store.close()


def test_cached_input_is_costed_at_the_tables_cache_read_rate() -> None:
    price = known_price(MODEL, "openai")
    assert price is not None and price.cache_read_per_million is not None
    assert price.cache_read_per_million < price.input_per_million
    usage = genai_prices.Usage(input_tokens=1000, cache_read_tokens=800)
    found = genai_prices.calc_price(usage, MODEL, provider_id="openai").total_price
    ours = price.cost(Usage(input_tokens=1000, cache_read_tokens=800))
    assert Decimal(str(ours)) == pytest.approx(found)


def test_a_price_given_by_hand_wins_over_the_table() -> None:
    mine = Price(input_per_million=1000, output_per_million=0)
    with ScriptedServer([costly(text("hi"))]) as server:
        result = anyio.run(run, "hello", options(server, Budget(prices={MODEL: mine})))
    assert result.spent.cost == pytest.approx(100.0)


def test_a_cost_limit_on_a_model_with_no_known_price_says_so() -> None:
    with pytest.raises(ConfigError, match=r"'my-local-llama'.*price is unknown.*genai-prices"):
        AgentOptions(
            model="my-local-llama", base_url="http://127.0.0.1:9/v1", budget=Budget(max_cost=1)
        )


def test_without_the_table_a_cost_limit_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import fails: not installed
    known_price.cache_clear()
    _table.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"install toolreel\[prices\]"):
            AgentOptions(model=MODEL, base_url="http://127.0.0.1:9/v1", budget=Budget(max_cost=1))
        # without a cost limit nothing is refused: the cost stays 0
        AgentOptions(model=MODEL, base_url="http://127.0.0.1:9/v1", budget=Budget())
    finally:
        known_price.cache_clear()
        _table.cache_clear()


def test_sessions_prints_unknown_for_a_model_with_no_price(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    with ScriptedServer([costly(text("hi")), costly(text("hi"))]) as server:
        anyio.run(run, "hello", options(server, Budget(), journal=journal, session_id="known"))
        local = AgentOptions(
            model="my-local-llama", base_url=server.url, journal=journal, session_id="local"
        )
        anyio.run(run, "hello", local)
    listed = CliRunner().invoke(cli, ["sessions", str(journal)])
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[0]: line for line in listed.output.splitlines() if line.strip()}
    assert f"${table_cost(100_000, 20_000):.4g}" in rows["known"]
    assert rows["local"].rstrip().endswith("unknown")
