"""Rule 17's own words and checks: a structured output's tool calls, `submit`, and feedback.

A turn whose `LoopConfig.output` is a `PlainOutput` or `ReflectiveOutput` answers
through the output tool (core/_config.py). This module says which calls are
the output tool's or `submit`, which output an attempt produced, how the core
answers the calls it needs no tool for, and every text the model (or the caller)
reads about them. What comes next is decided in core/_next.py.
"""

from __future__ import annotations

from ._arguments import arguments_error
from ._config import SUBMIT_TOOL, OutputSpec, PlainOutput, ReflectiveOutput
from ._records import ChatMessage, ToolCall

#: The result of a plain output-tool call: the call itself is the answer.
OUTPUT_RECEIVED = "Output received."
#: The result of `submit` once the attempt has an output.
SUBMITTED = "Output submitted for validation."


def tool_name(output: OutputSpec) -> str:
    """The output tool's name ("" for a text answer, which has none)."""
    return output.tool.name if isinstance(output, PlainOutput | ReflectiveOutput) else ""


def is_submit(output: OutputSpec, call: ToolCall) -> bool:
    """Whether `call` is the injected `submit` (only a reflective output offers it)."""
    return isinstance(output, ReflectiveOutput) and call.name == SUBMIT_TOOL.name


def reflected(output: OutputSpec, call: ToolCall) -> bool:
    """Whether `call` runs the reflection handler (`Reflect`) instead of a tool."""
    return isinstance(output, ReflectiveOutput) and call.name == output.tool.name


def received(output: OutputSpec, call: ToolCall) -> bool:
    """Whether `call` is a plain output-tool call, answered at once (`OUTPUT_RECEIVED`)."""
    return isinstance(output, PlainOutput) and call.name == output.tool.name


def outputs(output: OutputSpec, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """The output-tool calls whose arguments are a JSON object, in call order."""
    name = tool_name(output)
    return tuple(
        call for call in calls if call.name == name and arguments_error(call.arguments) is None
    )


def submitted(output: OutputSpec, calls: tuple[ToolCall, ...]) -> bool:
    """Whether any of `calls` is `submit`."""
    return any(is_submit(output, call) for call in calls)


def nothing_to_submit(output: OutputSpec) -> str:
    """The error result of `submit` before the attempt has an output."""
    return f"Nothing to submit: call {tool_name(output)} first."


def invalid_response(output: OutputSpec) -> str:
    """Why a response without tool calls fails a structured turn (`INVALID_RESPONSE`)."""
    return f"the model answered without calling a tool (expected {tool_name(output)})"


def submit_before_output(output: OutputSpec) -> str:
    """Why `submit` without any output fails the turn (`SUBMIT_BEFORE_OUTPUT`)."""
    return f"submit was called before any call of {tool_name(output)}"


def capped(attempt: int, limit: int) -> str:
    """Why an attempt that reached its model-call limit without an output fails the turn."""
    return (
        f"attempt {attempt} reached max_iterations_per_attempt={limit} without producing an output"
    )


def all_failed(max_attempts: int) -> str:
    """Why a turn whose every attempt failed validation fails (`VALIDATION_FAILED`)."""
    return f"the output failed validation in all {max_attempts} attempt(s)"


def feedback(
    output: PlainOutput | ReflectiveOutput, attempt: int, problems: tuple[str, ...]
) -> ChatMessage:
    """The user message that feeds a failed validation back to the model."""
    listed = "\n".join(f"- {problem}" for problem in problems)
    again = f"Call {output.tool.name} again with a corrected output"
    again += ", then call submit." if isinstance(output, ReflectiveOutput) else "."
    text = (
        f"Your output failed validation (attempt {attempt} of {output.max_attempts}):\n"
        f"{listed}\n{again}"
    )
    return ChatMessage(role="user", content=text)
