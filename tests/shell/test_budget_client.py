"""Budgets end to end: Client and run() against the scripted OpenAI-compatible server."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import attrs
import pytest

from toolreel.adapters import SQLiteJournal
from toolreel.core.budget import Budget, OverBudget, Price
from toolreel.core.notices import UsageReported
from toolreel.core.outcomes import FinishReason
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    Client,
    OutputTool,
    execute_agent,
    run,
    tool,
    verify,
)
from toolreel.shell.errors import ConfigError
from toolreel.shell.scripted import ScriptedServer, text, tool_calls
from toolreel.testing import MakeScriptedModel

ran: list[int] = []


@tool("add", "Add", {"a": int, "b": int})
def add_tool(args: dict) -> dict:
    ran.append(args["a"] + args["b"])
    return {"result": args["a"] + args["b"]}


def options(server: ScriptedServer, budget: Budget, **extra) -> AgentOptions:
    return AgentOptions(
        model="test",
        base_url=server.url,
        api_key="sk-test",
        tools=[add_tool],
        auto_execute_tools=True,
        budget=budget,
        **extra,
    )


TWO_ADDS = tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4}))


def test_run_stops_at_the_tool_call_limit_and_says_which_limit_and_how_much() -> None:
    ran.clear()
    with ScriptedServer([TWO_ADDS, text("never asked")]) as server:
        result = anyio.run(run, "add twice", options(server, Budget(max_tool_calls=1)))
        assert len(server.requests) == 1
    assert ran == [3]
    assert result.reason is FinishReason.OVER_BUDGET
    assert result.over_budget == OverBudget(limit_name="tool_calls", limit=1, used=2)
    assert result.spent.tool_calls == (("add", 1),)
    assert result.spent.model_calls == 1
    (tool_round,) = result.rounds
    assert tool_round.results[1].is_error
    assert "over budget: tool_calls limit 1" in tool_round.results[1].content


def test_a_budget_of_zero_model_calls_sends_no_request() -> None:
    with ScriptedServer([text("never asked")]) as server:
        result = anyio.run(run, "hi", options(server, Budget(max_model_calls=0)))
        assert server.requests == []
    assert result.over_budget == OverBudget(limit_name="model_calls", limit=0, used=0)
    assert result.text == ""


def test_the_client_tells_usage_so_far_and_the_next_turn_continues_a_valid_history() -> None:
    price = Price(input_per_million=1.0, output_per_million=2.0)
    budget = Budget(max_total_tokens=25, prices={"test": price})
    script = [TWO_ADDS, text("3 and 7"), text("again")]
    with ScriptedServer(script) as server:

        async def main() -> tuple[list, list, object]:
            async with Client(options(server, budget)) as client:
                await client.query("add")
                first = [item async for item in client.events()]
                spent = client.spent
                await client.query("more")
                second = [item async for item in client.events()]
                return first, second, spent

        first, second, spent = anyio.run(main)
        reported = [item for item in first if isinstance(item, UsageReported)]
        assert [n.turn.usage.total_tokens for n in reported] == [15, 30]
        assert reported[-1].turn.cost == pytest.approx(40 / 1_000_000)
        assert spent.model_calls == 2
        assert first[-1].outcome.limit_name == "total_tokens"
        assert first[-1].text == "3 and 7"
        assert second[-1].reason is FinishReason.COMPLETED  # a turn budget starts afresh
        follow_up = server.requests[2]["messages"]
        answered = [m["tool_call_id"] for m in follow_up if m["role"] == "tool"]
        assert answered == ["c1", "c2"]


def test_a_journaled_session_that_ran_over_budget_replays_identically(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with ScriptedServer([TWO_ADDS, text("never asked")]) as server:
        opts = options(server, Budget(max_calls_per_tool={"add": 1}), journal=str(path))
        result = anyio.run(run, "add twice", opts)
    assert result.over_budget is not None
    journal = SQLiteJournal(path)
    try:
        session = verify(journal, result.session_id)
        assert session.turns[-1].reason is FinishReason.OVER_BUDGET
    finally:
        journal.close()


def test_a_cost_limit_without_a_price_for_the_model_is_refused_with_the_options() -> None:
    other = {"gpt-4o": Price(input_per_million=1, output_per_million=1)}
    with pytest.raises(ConfigError, match="a Price for the model 'test'"):
        AgentOptions(
            model="test", base_url="http://127.0.0.1:9", budget=Budget(max_cost=1, prices=other)
        )
    with pytest.raises(ConfigError, match="budget"):
        AgentOptions(model="test", base_url="http://127.0.0.1:9", budget={"max_tool_calls": 1})


def test_a_per_tool_limit_on_an_unknown_tool_is_refused_when_the_client_is_built() -> None:
    opts = AgentOptions(
        model="test",
        base_url="http://127.0.0.1:9",
        tools=[add_tool],
        budget=Budget(max_calls_per_tool={"multiply": 1}),
    )
    with pytest.raises(ConfigError, match="max_calls_per_tool"):
        Client(opts)


@attrs.frozen
class Answer:
    total: float


def test_an_agent_run_refuses_helpers_past_the_budget_and_fails_over_budget(
    scripted_model: MakeScriptedModel,
) -> None:
    ran.clear()
    definition = AgentDefinition(
        build_prompt=lambda text: text,
        output=OutputTool.of(Answer, name="answer"),
        helpers=[add_tool],
    )
    helpers = tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4}))
    scripted = scripted_model([helpers, tool_calls(("c3", "add", {"a": 5, "b": 6}))])
    budget = Budget(max_calls_per_tool={"add": 1}, max_model_calls=2)
    opts = scripted.options(budget=budget)
    result = anyio.run(lambda: execute_agent(definition, "go", opts))
    assert ran == [3]
    assert isinstance(result, AgentFailure)
    assert result.error.code == "OVER_BUDGET"
    assert result.error.context.budget == OverBudget(limit_name="model_calls", limit=2, used=2)
    assert result.error.message == "over budget: model_calls limit 2 per turn, used 2"


def test_a_per_tool_limit_may_name_an_mcp_servers_tool() -> None:
    pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK")
    from toolreel.mcp import MCPServer  # noqa: PLC0415 - only with the mcp extra
    from toolreel.testing import FunctionModel, ToolCalls, call  # noqa: PLC0415

    server_script = Path(__file__).parents[1] / "mcp" / "mcp_demo_server.py"
    server = MCPServer.stdio(sys.executable, [str(server_script), "--only", "echo"])

    def model(messages, info):
        return ToolCalls([call("echo", text="a"), call("echo", text="b")])

    opts = AgentOptions(
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-test",
        mcp_servers=[server],
        budget=Budget(max_calls_per_tool={"echo": 1}),
    )
    result = anyio.run(lambda: run("go", opts, model=FunctionModel(model)))
    assert result.over_budget == OverBudget(limit_name="tool_calls[echo]", limit=1, used=2)
    (tool_round,) = result.rounds
    assert [item.is_error for item in tool_round.results] == [False, True]
