"""A user's file: each API's callbacks and options as a strict project writes them.

Not a test module: `test_readme_typing.py` runs `mypy --strict` over it with
the README's examples. Each API's callbacks have their own typed protocol
(toolreel.shell._callbacks), so a callback written for one API and handed to
the other is refused by the type checker; each `# type: ignore[...]` below
must stay needed (`warn_unused_ignores`), which is the check.
"""

from __future__ import annotations

from typing import Any, assert_type

import attrs

from toolreel.adapters import Secret
from toolreel.core import Finish, State, ToolCall, ToolResult, ToolRound
from toolreel.core.notices import Notice
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentRunOptions,
    Connection,
    OutputTool,
    execute_agent,
)
from toolreel.shell.callbacks import OnAgentNotice, OnAgentToolCall, OnNotice, OnToolCall


@attrs.frozen
class Answer:
    total: float


# --- the tool loop's observers: told what happened -------------------------------------------


def announce(call: ToolCall) -> None:
    print("calling", call.name)


async def show_result(result: ToolResult) -> None:
    print(result.content)


def count(tool_round: ToolRound) -> None:
    print(len(tool_round.results))


def done(finish: Finish) -> None:
    print(finish.reason.value)


def watch_chat(notice: Notice | Finish) -> None:
    print(type(notice).__name__)


def watch_anything(notice: object) -> None:
    print(notice)


chat = AgentOptions(
    model="m",
    api_key="sk-from-somewhere",
    on_tool_call=announce,
    on_tool_result=show_result,
    on_round=count,
    on_finish=done,
    on_notice=watch_chat,
)
assert_type(chat.connection, Connection)
assert_type(chat.api_key, Secret | None)
observer: OnToolCall = announce
chat_watcher: OnNotice = watch_anything  # a wider parameter is fine

# --- an agent: the definition's callbacks get the run's state first ---------------------------


def agent_call(state: State, name: str, input: dict[str, Any]) -> None:
    print(len(state.history), name, input)


async def agent_result(state: State, name: str, output: str) -> None:
    print(name, output)


def attempt(state: State, number: int) -> None:
    print("attempt", number)


def failed(state: State, number: int, problems: list[str]) -> None:
    print(number, problems)


def watch_agent(notice: Notice | Finish) -> None:
    print(type(notice).__name__)


definition: AgentDefinition[str, Answer] = AgentDefinition(
    build_prompt=lambda text: text,
    output=OutputTool.of(Answer),
    on_tool_call=agent_call,
    on_tool_result=agent_result,
    on_attempt_start=attempt,
    on_validation_failure=failed,
)
lambdas: AgentDefinition[str, Answer] = AgentDefinition(
    build_prompt=lambda text: text,
    output=OutputTool.of(Answer),
    on_tool_call=lambda state, name, input: print(state.attempt, name, input),
    on_attempt_start=lambda state, number: print(number + 1),
)
agent_hook: OnAgentToolCall = agent_call
agent_watcher: OnAgentNotice = watch_agent

connection = Connection(model="qwen2.5:14b", base_url="http://localhost:11434/v1")
run = AgentRunOptions(
    connection=connection,
    tool_timeout=5,
    on_tool_call=announce,  # helper calls are told as the loop's are
    on_tool_result=show_result,
    on_notice=watch_agent,
)


async def extract(email: str) -> None:
    await execute_agent(definition, email, run)
    await execute_agent(definition, email, connection)
    await execute_agent(definition, email, AgentOptions(model="m"))


# --- what strict typing refuses: a callback written for the other API -------------------------

crossed = AgentDefinition(
    build_prompt=lambda text: text,
    output=OutputTool.of(Answer),
    on_tool_call=announce,  # type: ignore[arg-type]
    on_attempt_start=failed,  # type: ignore[arg-type]
)
loop_wants_a_call = AgentOptions(model="m", on_tool_call=agent_call)  # type: ignore[arg-type]

# Both APIs tell `on_notice` the same: every notice, then the turn's (the run's) `Finish`.
agent_is_told_a_finish = AgentRunOptions(connection=connection, on_notice=watch_chat)
chat_is_told_a_finish = AgentOptions(model="m", on_notice=watch_agent)
