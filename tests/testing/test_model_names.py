"""A session over a model that needs no provider is journaled under the model's own name
(`test`, `function`), not the provider's default model (issue 21)."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import attrs

from toolreel.adapters import MemoryJournal, load_session
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    Client,
    OutputTool,
    execute_agent,
    load_agent_session,
    run,
    tool,
)
from toolreel.testing import FunctionModel, TestModel, override


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@attrs.frozen
class Total:
    total: int


def go(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run an async API call to its end."""
    return anyio.run(functools.partial(function, *args, **kwargs))


def chat_model(model: Any, options: AgentOptions | None = None) -> str:
    """The model a chat over `model` journals (and asks for)."""
    journal = MemoryJournal()
    opts = options or AgentOptions(tools=[add])
    go(run, "What is 2 + 3?", attrs.evolve(opts, journal=journal, session_id="s"), model=model)
    return load_session(journal, "s").config.model


def test_a_test_model_session_is_journaled_as_test() -> None:
    model = TestModel(args={"add": {"a": 2, "b": 3}})
    assert chat_model(model) == "test"
    assert {request.model for request in model.requests} == {"test"}


def test_a_function_model_session_is_journaled_as_function() -> None:
    assert chat_model(FunctionModel(lambda messages, info: "5")) == "function"


def test_a_model_the_options_name_is_still_the_one_journaled() -> None:
    options = AgentOptions(tools=[add], model="gpt-4.1")
    assert chat_model(TestModel(), options) == "gpt-4.1"


def test_an_override_lends_its_models_name_to_the_clients_made_under_it() -> None:
    journal = MemoryJournal()

    async def main() -> None:
        options = AgentOptions(
            tools=[add], auto_execute_tools=True, journal=journal, session_id="s"
        )
        async with Client(options) as client:
            await client.query("What is 2 + 3?")
            await client.wait()

    with override(model=TestModel()):
        anyio.run(main)
    assert load_session(journal, "s").config.model == "test"


def test_an_agent_run_over_a_test_model_is_journaled_as_test() -> None:
    journal = MemoryJournal()
    agent = AgentDefinition(build_prompt=lambda text: text, output=OutputTool.of(Total))
    go(execute_agent, agent, "2 + 3", AgentOptions(), model=TestModel(), journal=journal)
    [session_id] = journal.sessions()
    assert load_agent_session(journal, session_id).config.model == "test"
