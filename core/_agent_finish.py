"""Going on and stopping: model calls, attempts, and the one function that ends a run.

`call_model` is the only maker of `CallModel`, `start_attempt` of
`AttemptStarted`, and `finish` of `FinishAgent`.
"""

from __future__ import annotations

import attrs

from ._agent_effects import AgentEffect, FinishAgent, Notify
from ._agent_notices import AttemptStarted
from ._agent_outcome import AgentError, AgentOutcome, ErrorCode, ErrorContext, ErrorPhase
from ._agent_state import AgentPhase, AgentState, attempt_message
from ._effects import CallModel
from ._records import ChatMessage, ModelRequest, Reasoning
from ._state import EMPTY_STREAM

AgentStep = tuple[AgentState, tuple[AgentEffect, ...]]


def agent_request(state: AgentState) -> ModelRequest:
    """The request for the next model call: the conversation with the attempt's rounds so far."""
    config = state.config
    messages = state.history
    if state.rounds:
        messages = (*messages, attempt_message(state))
    return ModelRequest(
        model=config.model,
        system=config.system_prompt,
        messages=messages,
        tools=config.tools,
        tool_choice=config.tool_choice,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
    )


def call_model(state: AgentState, *, retry: int = 0) -> AgentStep:
    """Issue the attempt's next model call (a new iteration unless it repeats a failed one)."""
    if retry == 0:
        state = attrs.evolve(
            state, iteration=state.iteration + 1, iterations=state.iterations + 1, retry=0
        )
    else:
        state = attrs.evolve(state, retry=retry)
    state = attrs.evolve(state, phase=AgentPhase.STREAMING, stream=EMPTY_STREAM)
    effect = CallModel(request=agent_request(state), iteration=state.iteration, retry=retry)
    return state, (effect,)


def start_attempt(state: AgentState, user: ChatMessage) -> AgentStep:
    """Open the next attempt with `user` (the prompt or the feedback) and call the model."""
    history = state.history
    if state.rounds:
        history = (*history, attempt_message(state))
    attempt = state.attempt + 1
    state = attrs.evolve(
        state, history=(*history, user), attempt=attempt, iteration=0, rounds=(), output=None
    )
    state, effects = call_model(state)
    return state, (Notify(notice=AttemptStarted(attempt=attempt)), *effects)


def validation_feedback(state: AgentState, problems: tuple[str, ...]) -> ChatMessage:
    """The user message that feeds a failed validation back to the model."""
    config = state.config
    listed = "\n".join(f"- {problem}" for problem in problems)
    again = f"Call {config.output_name} again with a corrected output"
    again += ", then call submit." if config.reflective else "."
    text = (
        f"Your output failed validation (attempt {state.attempt} of {config.max_attempts}):\n"
        f"{listed}\n{again}"
    )
    return ChatMessage(role="user", content=text)


def fail(
    state: AgentState,
    code: ErrorCode,
    message: str,
    *,
    phase: ErrorPhase = ErrorPhase.ITERATION,
    limit: int | None = None,
    status: int | None = None,
    text: str = "",
    reasoning: tuple[Reasoning, ...] = (),
) -> AgentStep:
    """End the run with an error whose context says where it stopped."""
    context = ErrorContext(
        phase=phase,
        attempt=state.attempt,
        iteration=state.iteration,
        limit=limit,
        status=status,
        validation_errors=state.errors,
    )
    error = AgentError(code=code, message=message, context=context)
    return finish(state, error, text=text, reasoning=reasoning)


def finish(
    state: AgentState,
    outcome: AgentOutcome,
    *,
    text: str = "",
    reasoning: tuple[Reasoning, ...] = (),
) -> AgentStep:
    """End the run: the attempt's messages join the conversation, then `FinishAgent`."""
    history = state.history
    if state.rounds or text or reasoning:
        message = attrs.evolve(attempt_message(state, text), reasoning=reasoning)
        history = (*history, message)
    effect = FinishAgent(
        outcome=outcome,
        usage=state.usage,
        attempts=state.attempt,
        iterations=state.iterations,
        history=history,
    )
    state = attrs.evolve(
        state,
        phase=AgentPhase.FINISHED,
        history=history,
        rounds=(),
        pending=None,
        stream=EMPTY_STREAM,
        outcome=outcome,
    )
    return state, (effect,)
