"""The agent's round policy: answer or run each call, then decide how the attempt goes on.

The round's bookkeeping (placing results in call order, completing, cancelling)
is shared with the loop (core/_round.py); the round enters the conversation in
issue order (one assistant message with every call, one user message with
every result). What is the agent's own: which calls are answered at once and
how (rule 4), which run as `RunTool` or `Reflect`, and rules 6a-c.
"""

from __future__ import annotations

import attrs

from ._agent_approval import hold, pause
from ._agent_config import SUBMIT_TOOL, AgentConfig
from ._agent_finish import AgentStep, call_model, fail
from ._agent_outcome import ErrorCode
from ._agent_state import AgentPhase, AgentState
from ._arguments import arguments_error
from ._budget import admit, refusal_text, spent_tools
from ._content import ImagePart
from ._effects import AgentEffect, Reflect, RunTool, Validate
from ._records import Reasoning, ToolCall, ToolResult
from ._round import awaiting, complete, error_result, is_complete, open_round, place, runnable

OUTPUT_RECEIVED = "Output received."
SUBMITTED = "Output submitted for validation."


def _ok(call: ToolCall, content: str) -> ToolResult:
    """A plain result for `call`."""
    return ToolResult(call_id=call.id, name=call.name, content=content)


def is_submit(config: AgentConfig, call: ToolCall) -> bool:
    """Whether `call` is the injected `submit` (only a reflective output has one)."""
    return config.reflective and call.name == SUBMIT_TOOL.name


def outputs(config: AgentConfig, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """The output-tool calls whose arguments are a JSON object, in call order."""
    return tuple(
        call
        for call in calls
        if call.name == config.output_name and arguments_error(call.arguments) is None
    )


def _answer(config: AgentConfig, call: ToolCall, has_output: bool) -> ToolResult | None:
    """The result a call gets without running anything, or None when it must run."""
    if is_submit(config, call):
        if has_output:
            return _ok(call, SUBMITTED)
        return error_result(call, f"Nothing to submit: call {config.output_name} first.")
    problem = arguments_error(call.arguments)
    if problem is not None:
        return error_result(call, problem)
    if call.name == config.output_name:
        return None if config.reflective else _ok(call, OUTPUT_RECEIVED)
    if call.name in config.helper_names:
        return None
    return error_result(call, f"Unknown tool: {call.name}")


def _execution(config: AgentConfig, call: ToolCall) -> AgentEffect:
    """The effect that runs a call: the reflection handler for the output tool, else the helper."""
    return Reflect(call=call) if call.name == config.output_name else RunTool(call=call)


def _admitted(
    state: AgentState, calls: tuple[ToolCall, ...], answers: tuple[ToolResult | None, ...]
) -> tuple[ToolResult | None, ...]:
    """`answers`, with a "not run" result for each helper call the budget refuses (rule 14)."""
    budget = state.config.budget
    helper_names = state.config.helper_names
    runs = [
        answer is None and call.name in helper_names
        for call, answer in zip(calls, answers, strict=True)
    ]
    if budget is None or not any(runs):
        return answers
    helpers = tuple(call for call, run in zip(calls, runs, strict=True) if run)
    verdicts = iter(admit(budget, state.spent, helpers))
    checked = [next(verdicts) if run else None for run in runs]
    return tuple(
        answer if over is None else error_result(call, refusal_text(over))
        for call, answer, over in zip(calls, answers, checked, strict=True)
    )


def start_round(
    state: AgentState, text: str, reasoning: tuple[Reasoning, ...], calls: tuple[ToolCall, ...]
) -> AgentStep:
    """Answer what needs no run, issue every execution at once, or close the round now."""
    config = state.config
    has_output = state.output is not None or bool(outputs(config, calls))
    answers = _admitted(state, calls, tuple(_answer(config, call, has_output) for call in calls))
    pending = hold(state, open_round(text, reasoning, calls, answers))
    helpers = [run for run in runnable(pending) if run.name in config.helper_names]
    state = attrs.evolve(state, pending=pending, spent=spent_tools(state.spent, helpers))
    effects = tuple(_execution(config, call) for call in runnable(pending))
    if not effects:
        return pause(state) if pending.approvals else close_round(state)
    return attrs.evolve(state, phase=AgentPhase.RUNNING_TOOLS), effects


def add_result(
    state: AgentState,
    position: int,
    output: str,
    is_error: bool,
    *,
    images: tuple[ImagePart, ...] = (),
) -> AgentStep:
    """Record the result of the call at `position`; close the round once all are in."""
    assert state.pending is not None
    pending, _ = place(state.pending, position, output, is_error, images=images)
    state = attrs.evolve(state, pending=pending)
    if is_complete(pending):
        return close_round(state)
    if pending.approvals and not awaiting(pending):
        return pause(state)  # only held calls are left: wait for the human (rule 15)
    return state, ()


def close_round(state: AgentState) -> AgentStep:
    """Store the round, then end the attempt (submit / output) or go on (rules 6a-c)."""
    pending = state.pending
    assert pending is not None
    config = state.config
    produced = outputs(config, pending.calls)
    latest = produced[-1].arguments if produced else None  # the last call wins
    output = state.output if latest is None else latest
    state = attrs.evolve(
        state, rounds=(*state.rounds, complete(pending)), pending=None, output=output
    )
    if any(is_submit(config, call) for call in pending.calls):
        if output is None:
            return fail(
                state,
                ErrorCode.SUBMIT_BEFORE_OUTPUT,
                f"submit was called before any call of {config.output_name}",
            )
        return validate(state, output)
    if latest is not None and not config.reflective:
        return validate(state, latest)
    limit = config.max_iterations_per_attempt
    if state.iteration >= limit:
        return fail(
            state,
            ErrorCode.MAX_ITERATIONS,
            f"attempt {state.attempt} reached max_iterations_per_attempt={limit} "
            "without producing an output",
            limit=limit,
        )
    return call_model(state)


def validate(state: AgentState, output: str) -> AgentStep:
    """Ask for the attempt's output to be validated."""
    state = attrs.evolve(state, phase=AgentPhase.VALIDATING)
    return state, (Validate(output=output, attempt=state.attempt),)
