"""Each API takes the options it uses: no field is silently ignored (issue 10, REVIEW 1.6/5).

`Client` takes `AgentOptions` (open_agent's flat record); `execute_agent` takes
`AgentRunOptions(connection=...)`, a bare `Connection`, or an `AgentOptions`
whose tool-loop fields are unset — one that is set is a `ConfigError` naming
it and what to use instead. Both build their model calls from one
`Connection`; both tell an `on_notice` observer every notice, then the finish.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

import toolreel.cli as cli
from toolreel.core import ConfigError, Finish, ModelRequest
from toolreel.core.notices import AttemptStarted, ValidationFailed
from toolreel.core.policies import MaxIterationsPolicy, RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentRunOptions,
    AgentSuccess,
    Client,
    Connection,
    OutputTool,
    _client,
    execute_agent,
    tool,
)
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HOOK_USER_PROMPT_SUBMIT
from toolreel.testing import MakeScriptedModel, text, tool_calls


@attrs.frozen
class Answer:
    total: float


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def positive(answer: Answer) -> list[str]:
    return [] if answer.total > 0 else [f"total is {answer.total}, must be positive"]


def agent() -> AgentDefinition[str, Answer]:
    return AgentDefinition(
        build_prompt=lambda text: text,
        output=OutputTool.of(Answer, name="answer"),
        validators=[positive],
    )


def answer(total: float) -> Any:
    return tool_calls(("out", "answer", {"total": total}))


def run_agent(scripted_model: MakeScriptedModel, options: Any, replies: list[Any]) -> Any:
    """The agent's result on a scripted model (in process)."""
    scripted = scripted_model(replies, http=False)
    return anyio.run(lambda: execute_agent(agent(), "go", options, model=scripted.model))


# --- execute_agent refuses what it would ignore --------------------------------------------

LOOP_ONLY_VALUES = [
    ("system_prompt", "Be brief.", "AgentDefinition(system_prompt=...)"),
    ("tools", [add], "AgentDefinition(helpers=[...])"),
    ("auto_execute_tools", True, "an agent always runs its helpers"),
    ("max_tool_iterations", 2, "AgentDefinition(max_iterations_per_attempt=...)"),
    ("on_max_iterations", "final_answer", "fails the run with MAX_ITERATIONS"),
    ("tool_choice", "required", "AgentDefinition(tool_choice=...)"),
    ("on_round", print, "AgentRunOptions(on_notice=...)"),
    ("on_finish", print, "the AgentSuccess / AgentFailure execute_agent returns"),
    ("on_notice", print, "AgentRunOptions(on_notice=...)"),
]


@pytest.mark.parametrize(("field", "value", "instead"), LOOP_ONLY_VALUES)
def test_execute_agent_refuses_a_tool_loop_field_naming_what_to_use(
    scripted_model: MakeScriptedModel, field: str, value: Any, instead: str
) -> None:
    options = AgentOptions(model="m", **{field: value})
    with pytest.raises(ConfigError) as refused:
        run_agent(scripted_model, options, [answer(3)])
    assert (refused.value.field, refused.value.value) == ("options", (field,))
    assert f"{field}: " in str(refused.value)
    assert instead in str(refused.value)


def test_every_tool_loop_field_set_is_named_in_one_error(scripted_model: MakeScriptedModel) -> None:
    options = AgentOptions(model="m", max_tool_iterations=2, on_round=print, tools=[add])
    with pytest.raises(ConfigError, match="execute_agent runs no tool loop") as refused:
        run_agent(scripted_model, options, [answer(3)])
    assert refused.value.value == ("tools", "max_tool_iterations", "on_round")


def test_loop_fields_at_their_defaults_are_accepted(scripted_model: MakeScriptedModel) -> None:
    options = AgentOptions(
        model="m",
        tools=[],  # an empty list is the default's equal
        max_tool_iterations=5,
        on_max_iterations=MaxIterationsPolicy.STOP,
        tool_choice="auto",
        tool_timeout=5,
        max_concurrent_tools=2,
        temperature=0.5,
    )
    assert isinstance(run_agent(scripted_model, options, [answer(3)]), AgentSuccess)


def test_a_user_prompt_hook_is_refused_for_an_agent_run() -> None:
    connection = Connection(model="m")
    with pytest.raises(ConfigError, match="an agent run has no user prompt to hook"):
        AgentRunOptions(connection=connection, hooks={HOOK_USER_PROMPT_SUBMIT: [print]})
    with pytest.raises(ConfigError, match="an agent run has no user prompt to hook"):
        AgentOptions(model="m", hooks={HOOK_USER_PROMPT_SUBMIT: print}).for_agent()
    AgentRunOptions(connection=connection, hooks={HOOK_PRE_TOOL_USE: [print]})  # allowed


def test_execute_agent_refuses_options_of_another_kind(scripted_model: MakeScriptedModel) -> None:
    with pytest.raises(ConfigError, match="an AgentRunOptions, a Connection or an AgentOptions"):
        run_agent(scripted_model, {"model": "m"}, [answer(3)])


# --- one Connection for both APIs ------------------------------------------------------------


def test_agent_options_gather_their_connection_fields_into_one_connection() -> None:
    retry = RetryPolicy(max_retries=2)
    options = AgentOptions(
        model="m", provider="anthropic", max_tokens=99, temperature=0.2, retry=retry, timeout=9
    )
    assert options.connection == Connection(
        model="m", provider="anthropic", max_tokens=99, temperature=0.2, retry=retry, timeout=9
    )
    assert AgentOptions.for_agent(options).connection == options.connection


def test_options_and_connection_refuse_a_value_with_the_same_message() -> None:
    for kwargs in ({"model": ""}, {"provider": "nope"}, {"temperature": 3}, {"timeout": 0}):
        with pytest.raises(ConfigError) as on_options:
            AgentOptions(base_url="http://127.0.0.1:9/v1", **kwargs)
        with pytest.raises(ConfigError) as on_connection:
            Connection(base_url="http://127.0.0.1:9/v1", **kwargs)
        assert str(on_options.value) == str(on_connection.value)


def test_the_client_and_an_agent_ask_the_model_alike_from_one_connection(
    scripted_model: MakeScriptedModel,
) -> None:
    connection = Connection(model="m", max_tokens=64, temperature=0.3)
    chat = scripted_model([text("hi")], http=False)

    async def one_turn() -> None:
        options = AgentOptions(model="m", max_tokens=64, temperature=0.3)
        async with Client(options, model=chat.model) as client:
            assert client.connection == connection
            await client.query("hello")
            await client.wait()

    anyio.run(one_turn)
    scripted = scripted_model([answer(3)], http=False)
    anyio.run(lambda: execute_agent(agent(), "go", connection, model=scripted.model))
    asked: list[ModelRequest] = [chat.model.requests[0], scripted.model.requests[0]]
    assert {(r.model, r.max_tokens, r.temperature) for r in asked} == {("m", 64, 0.3)}


def test_agent_run_options_carry_what_the_run_uses(scripted_model: MakeScriptedModel) -> None:
    seen: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key.upper()

    definition = attrs.evolve(agent(), helpers=[lookup])
    options = AgentRunOptions(
        connection=Connection(model="m"),
        on_tool_call=lambda call: seen.append(call.name),
        session_id="run-1",
    )
    scripted = scripted_model([tool_calls(("c1", "lookup", {"key": "k"})), answer(3)], http=False)
    result = anyio.run(lambda: execute_agent(definition, "go", options, model=scripted.model))
    assert isinstance(result, AgentSuccess)
    assert seen == ["lookup"]


# --- on_notice, on both APIs -----------------------------------------------------------------


def test_a_clients_on_notice_is_told_every_notice_then_the_finish(
    scripted_model: MakeScriptedModel,
) -> None:
    told: list[Any] = []
    model = scripted_model([tool_calls(("c1", "add", {"a": 2, "b": 3})), text("5")], http=False)
    options = model.options(tools=[add], auto_execute_tools=True, on_notice=told.append)

    async def one_turn() -> list[Any]:
        async with Client(options, model=model.model) as client:
            await client.query("2 + 3?")
            return [item async for item in client.events()]

    streamed = anyio.run(one_turn)
    assert told == streamed
    assert isinstance(told[-1], Finish)


def test_an_agents_on_notice_is_told_its_notices_then_the_finish(
    scripted_model: MakeScriptedModel,
) -> None:
    told: list[Any] = []
    options = AgentRunOptions(connection=Connection(model="m"), on_notice=told.append)
    result = run_agent(scripted_model, options, [answer(-1), answer(3)])
    assert isinstance(result, AgentSuccess)
    kinds = (AttemptStarted, ValidationFailed, Finish)  # among every notice of the run
    assert [type(notice) for notice in told if isinstance(notice, kinds)] == [
        AttemptStarted,
        ValidationFailed,
        AttemptStarted,
        Finish,
    ]
    assert isinstance(told[-1], Finish)


def raises(notice: object) -> None:
    raise RuntimeError("observer broke")


def test_an_on_notice_that_raises_is_recorded_on_both_apis(
    scripted_model: MakeScriptedModel,
) -> None:
    model = scripted_model([text("hi")], http=False)
    options = model.options(on_notice=raises)

    async def one_turn() -> tuple[Finish | None, list[str]]:
        async with Client(options, model=model.model) as client:
            await client.query("hello")
            return await client.wait(), client.metadata.callback_errors

    finish, errors = anyio.run(one_turn)
    assert finish is not None and finish.text == "hi"
    assert errors and all("raises raised RuntimeError: observer broke" in e for e in errors)
    run = AgentRunOptions(connection=Connection(model="m"), on_notice=raises)
    result = run_agent(scripted_model, run, [answer(3)])
    assert isinstance(result, AgentSuccess)
    assert "raises raised RuntimeError: observer broke" in result.metadata.callback_errors


# --- the Client and the CLI ask the runner, never its state ----------------------------------


def test_the_client_and_the_cli_never_read_the_runners_state() -> None:
    sources = [Path(inspect.getfile(_client)), *Path(inspect.getfile(cli)).parent.glob("*.py")]
    assert len(sources) > 2
    for source in sources:
        assert "runner.state" not in source.read_text(encoding="utf-8"), source
