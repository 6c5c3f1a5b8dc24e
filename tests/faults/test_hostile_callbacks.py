"""Hostile callbacks: `sys.exit()` in a hook, an observer or a validator never ends the program.

A PreToolUse hook that exits blocks the call (fail closed) with the reason the
model reads; an observer that exits is recorded in `client.metadata`; a
validator that exits is a validation problem fed back to the model.
"""

from __future__ import annotations

import sys

import anyio
import attrs

from toolreel.adapters import EventModel
from toolreel.core import (
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    OutputTool,
    execute_agent,
    run,
    tool,
)
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calls_add_then_answers(request: ModelRequest) -> list[object]:
    """First a call of add, then (once a result is in) the answer."""
    if len(request.messages) > 1:
        return [TextDelta(text="done"), ModelResponded(finish_reason="stop")]
    return [
        ToolCallStarted(index=0, call_id="c1", name="add"),
        ToolCallArgumentsDelta(index=0, fragment='{"a": 1, "b": 2}'),
        ModelResponded(finish_reason="tool_calls"),
    ]


def exits(*_: object) -> None:
    """What a callback built on a command-line parser may do."""
    sys.exit(3)


def test_a_pre_tool_use_hook_that_exits_blocks_the_call() -> None:
    options = AgentOptions(
        model="m", tools=[add], auto_execute_tools=True, hooks={HOOK_PRE_TOOL_USE: [exits]}
    )
    result = anyio.run(lambda: run("1 + 2?", options, model=EventModel(calls_add_then_answers)))
    [outcome] = result.rounds[0].results
    assert outcome.is_error and "SystemExit" in outcome.content
    assert result.text == "done"


def test_an_observer_that_exits_is_recorded() -> None:
    options = AgentOptions(model="m", tools=[add], auto_execute_tools=True, on_tool_call=exits)
    result = anyio.run(lambda: run("1 + 2?", options, model=EventModel(calls_add_then_answers)))
    assert result.text == "done"
    assert any("SystemExit" in error for error in result.callback_errors)


def test_a_validator_that_exits_is_a_problem_the_model_reads() -> None:
    @attrs.frozen
    class Answer:
        value: int

    def answer(request: ModelRequest) -> list[object]:
        return [
            ToolCallStarted(index=0, call_id=f"c{len(request.messages)}", name="answer"),
            ToolCallArgumentsDelta(index=0, fragment='{"value": 3}'),
            ModelResponded(finish_reason="tool_calls"),
        ]

    definition = AgentDefinition(
        build_prompt=lambda text: text,
        output=OutputTool.of(Answer, name="answer"),
        validators=[exits],
        max_attempts=2,
    )
    result = anyio.run(
        lambda: execute_agent(definition, "3?", AgentOptions(model="m"), model=EventModel(answer))
    )
    assert isinstance(result, AgentFailure)
    assert "SystemExit" in str(result.error.context)
