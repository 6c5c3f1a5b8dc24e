"""Going on and stopping: model calls, attempts, and the one function that ends a run.

`call_model` is the only maker of `CallModel`, `start_attempt` of
`AttemptStarted`, and `finish` of `FinishAgent`.
"""

from __future__ import annotations

import attrs

from ._agent_outcome import AgentError, AgentOutcome, ErrorCode, ErrorContext, ErrorPhase
from ._agent_state import AgentPhase, AgentState, conversation
from ._budget import OverBudget, after_response, before_call, spent_response
from ._effects import AgentEffect, CallModel, Emit, FinishAgent
from ._model import request, rounds_message
from ._notices import AttemptStarted
from ._records import ChatMessage, Reasoning, Usage
from ._response import EMPTY_STREAM

AgentStep = tuple[AgentState, tuple[AgentEffect, ...]]


def call_model(state: AgentState, *, retry: int = 0) -> AgentStep:
    """Issue the attempt's next model call (a new iteration unless it repeats a failed one).

    A new iteration is not begun when the budget forbids it (rule 14).
    """
    budget = state.config.budget
    if retry == 0 and budget is not None:
        over = before_call(budget, state.spent, final=False)
        if over is not None:
            return over_budget(state, over)
    if retry == 0:
        state = attrs.evolve(
            state, iteration=state.iteration + 1, iterations=state.iterations + 1, retry=0
        )
    else:
        state = attrs.evolve(state, retry=retry)
    state = attrs.evolve(state, phase=AgentPhase.STREAMING, stream=EMPTY_STREAM)
    messages = conversation(state)
    effect = CallModel(
        request=request(state.config.settings, messages), iteration=state.iteration, retry=retry
    )
    return state, (effect,)


def start_attempt(state: AgentState, user: ChatMessage) -> AgentStep:
    """Open the next attempt with `user` (the prompt or the feedback) and call the model."""
    history = conversation(state)
    attempt = state.attempt + 1
    state = attrs.evolve(
        state, history=(*history, user), attempt=attempt, iteration=0, rounds=(), output=None
    )
    state, effects = call_model(state)
    return state, (Emit(notice=AttemptStarted(attempt=attempt)), *effects)


def charge(state: AgentState, usage: Usage) -> tuple[AgentState, OverBudget | None]:
    """Count a model response; the budget limit it went past, if any (rule 14)."""
    budget = state.config.budget
    price = None if budget is None else budget.price(state.config.model)
    state = attrs.evolve(state, spent=spent_response(state.spent, usage, price))
    return state, None if budget is None else after_response(budget, state.spent)


def over_budget(
    state: AgentState, over: OverBudget, *, text: str = "", reasoning: tuple[Reasoning, ...] = ()
) -> AgentStep:
    """End the run `OVER_BUDGET`, naming the limit (rule 14)."""
    return fail(
        state, ErrorCode.OVER_BUDGET, over.message, budget=over, text=text, reasoning=reasoning
    )


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
    budget: OverBudget | None = None,
) -> AgentStep:
    """End the run with an error whose context says where it stopped."""
    context = ErrorContext(
        phase=phase,
        attempt=state.attempt,
        iteration=state.iteration,
        limit=limit,
        status=status,
        validation_errors=state.errors,
        budget=budget,
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
        message = rounds_message(state.rounds, text, reasoning)
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
