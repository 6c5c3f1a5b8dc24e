"""The agent's helper tools get what the loop's tools have: `max_concurrent_tools`,
`tool_timeout`, PreToolUse/PostToolUse hooks and the options' observers (issue 10)."""

from __future__ import annotations

from typing import Any

import anyio
import attrs

from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    OutputTool,
    execute_agent,
    tool,
)
from toolreel.testing import MakeScriptedModel, tool_calls


@attrs.frozen
class Answer:
    total: float


FINAL = tool_calls(("out", "answer", {"total": 3}))
THREE_LOOKUPS = tool_calls(*((f"c{i}", "lookup", {"key": f"k{i}"}) for i in range(3)))


class InFlight:
    """Counts helper calls running at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def visit(self) -> None:
        """Be in flight across a few checkpoints, so siblings can start meanwhile."""
        self.now += 1
        self.peak = max(self.peak, self.now)
        for _ in range(5):
            await anyio.sleep(0)
        self.now -= 1


def agent(*helpers: Any, **overrides: Any) -> AgentDefinition[str, Answer]:
    return AgentDefinition(
        build_prompt=lambda text: text,
        output=OutputTool.of(Answer, name="answer"),
        helpers=list(helpers),
        **overrides,
    )


def run(
    scripted_model: MakeScriptedModel,
    definition: AgentDefinition[str, Answer],
    replies: list[Any],
    **options: Any,
) -> Any:
    """The agent's result on a scripted model (in-process)."""
    scripted = scripted_model(replies, http=False)
    opts = AgentOptions(model="m", **options)
    return anyio.run(lambda: execute_agent(definition, "go", opts, model=scripted.model))


def counting_lookup(flight: InFlight) -> Any:
    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        await flight.visit()
        return key.upper()

    return lookup


def test_max_concurrent_tools_caps_the_helpers_in_flight(scripted_model: MakeScriptedModel) -> None:
    flight = InFlight()
    definition = agent(counting_lookup(flight))
    result = run(scripted_model, definition, [THREE_LOOKUPS, FINAL], max_concurrent_tools=1)
    assert isinstance(result, AgentSuccess)
    assert flight.peak == 1


def test_without_a_cap_the_helpers_of_a_round_run_at_once(
    scripted_model: MakeScriptedModel,
) -> None:
    flight = InFlight()
    result = run(scripted_model, agent(counting_lookup(flight)), [THREE_LOOKUPS, FINAL])
    assert isinstance(result, AgentSuccess)
    assert flight.peak == 3


def test_tool_timeout_applies_to_helpers(scripted_model: MakeScriptedModel) -> None:
    @tool
    async def lookup(key: str) -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return key

    results: list[tuple[str, str]] = []
    definition = agent(lookup, on_tool_result=lambda _s, name, out: results.append((name, out)))
    replies = [tool_calls(("c1", "lookup", {"key": "a"})), FINAL]
    result = run(scripted_model, definition, replies, tool_timeout=0.01)
    assert isinstance(result, AgentSuccess)
    assert results[0] == ("lookup", "Tool lookup timed out after 0.01 s")
