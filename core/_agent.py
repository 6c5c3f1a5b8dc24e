"""agent_step(state, event) -> (state, effects): structured-output agents as a pure reducer.

Theory of operation
-------------------
An agent's job is one validated, typed output. A run is a series of
*attempts*; an attempt is a series of *iterations* (one model call plus the
tool executions it asks for) that ends when the model produces an output,
which is then validated. A failed validation starts a new attempt in the same
conversation, with the problems fed back. The model sees helper tools (to
explore), the output tool (whose arguments *are* the output) and, with
reflection, `submit`. `agent_step` never does I/O: the shell carries out each
effect (`AgentEffect`, core/_effects.py) and feeds back what happened as events
(`AgentEvent`, core/_events.py). The transitions are the read-only table `AGENT_RULES`
at the bottom of this module: one handler per (phase, event type); any other
pair is a programmer error and raises `AgentStepError` naming both. Nothing the
model, a tool, a validator or the network sends can raise. The machinery
shared with the tool loop lives in its own modules: the partial response
(core/_response.py), argument checks (core/_arguments.py), the round in flight
(core/_round.py), retries (core/_retry.py) and requests (core/_model.py); this
module and core/_agent_round.py, core/_agent_finish.py hold the agent's policy.

Rules
-----
1.  `PromptSubmitted` starts attempt 1: the prompt is the conversation's first
    user message; `Emit(AttemptStarted(1))`, then one `CallModel` offering
    the helpers, the output tool and, only for a `ReflectiveOutput`, `submit`.
2.  Model events accumulate one response as in the tool loop (core/_response.py):
    text, reasoning blocks, tool calls by index, argument fragments split
    anywhere. `ModelResponded` ends it and adds its usage.
3.  A response without any tool call finishes `INVALID_RESPONSE` (phase
    iteration, with attempt and iteration); its text stays in the conversation.
4.  A response with calls opens one round; each call gets exactly one result,
    in call order: arguments that are not a JSON object -> an error result, the
    call never runs; a helper -> `RunTool`; the output tool -> plain: "Output
    received." at once, reflective: `Reflect` (the handler's text is the
    result); `submit` -> "Output submitted for validation."; any other name
    (`submit` too, without reflection) -> "Unknown tool: NAME". Every execution
    is issued in the same step.
5.  Helper and reflection failures (exceptions, timeouts, output the handler
    cannot take) arrive as `ToolFinished(is_error=True)` and are results like
    any other: the model reads them and may recover.
6.  When every call has its result, the round joins the attempt (one assistant
    message with all calls, one user message with all results). The attempt's
    output is the arguments of its last valid output-tool call (within a
    response the last call wins). Then:
    a. reflective and `submit` was called: `SUBMIT_BEFORE_OUTPUT` if the
       attempt has no output (an output-tool call anywhere in the same
       response counts), else `Validate` of the last output;
    b. plain and the output tool was called: `Validate` (the response's other
       calls have been processed first);
    c. otherwise the next iteration's `CallModel`, unless the attempt made
       `max_iterations_per_attempt` calls: `MAX_ITERATIONS` (attempt,
       iteration, limit), no validation.
7.  `ValidationFinished` without problems finishes with the output. With
    problems: `Emit(ValidationFailed)`; if attempts remain, a user message
    listing the problems follows the attempt's messages and the next attempt
    starts (rule 1's notice and call; iterations and output start afresh);
    else `VALIDATION_FAILED` (phase validation, limit `max_attempts`).
8.  A retryable `ModelCallFailed` discards the partial response and waits
    (`StartTimer`, the tool loop's `RetryPolicy`); `TimerFired` repeats the
    same iteration's call (core/_retry.py). Fatal, or out of retries:
    `PROVIDER_ERROR` with the provider's message and status. Unlike the loop,
    the agent tells no `RetryScheduled`: no agent callback hears of retries.
9.  `Cancelled` finishes `EXECUTION_CANCELLED` in any phase (phase iteration,
    or validation while validating; attempt and iteration). Once the caller
    aborted, the shell feeds it instead of the next model call (and when it
    cuts a call in flight). A round in flight is closed with "cancelled" error
    results; late events are then dropped.
10. Usage sums every `ModelResponded` of every attempt and never decreases.
11. Exactly one `FinishAgent` ends a run, always the last effect; it carries
    the outcome, the usage, attempts, iterations and the whole conversation.
    Every error's context holds every failed attempt's validation errors.
12. Callbacks: `RunTool` and `Reflect` are exactly the tool executions — the
    shell tells `on_tool_call` before and `on_tool_result` after each, failed
    or not; `AttemptStarted` and `ValidationFailed` notices drive
    `on_attempt_start` and `on_validation_failure`.
13. Tool names are unique (`submit` included when injected): `AgentConfig`
    rejects duplicates when built.
14. Budgets (`AgentConfig.budget`, core/_budget.py; the run is its scope):
    each response is counted (tokens, model calls, cost). A model call is
    not made once a limit is used up, and a response that takes tokens or
    cost past a limit ends the run: `OVER_BUDGET`, `context.budget` naming
    the limit, its value and the amount used (its calls are dropped, as a
    cancel's would be). Helper calls past a tool-call limit are answered "not
    run: over budget: ..." and the attempt goes on: the model may still give
    its output. `on_exceeded` does not apply; nothing is told while it runs.
15. Human approval (the loop's rule 15, core/_agent_approval.py): a helper
    call whose tool is in `approval_required` is held when its round opens;
    one the shell's PreToolUse hook answered `Ask` about is held when
    `HookDecided(pre:<id>, Ask)` arrives instead of its `ToolFinished`. The
    round's other calls run as usual. When nothing but held calls is left
    the run pauses: `AwaitApproval` lists them, the phase is
    AWAITING_APPROVAL and no effect is pending (the journal holds the
    pause). `Approved` / `Denied` decide one call each, while the round runs
    or is paused; while calls stay held a paused run says `AwaitApproval`
    again. Once the last is decided the approved calls run (`RunTool`) and a
    denied call's result is an error whose content is the reason (none:
    "The user denied this tool call."); then the round goes on as ever. A
    decision for a call that is not held, or when none is, is misuse.
    `Cancelled` answers held calls "cancelled" like any unfinished call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ._agent_approval import (
    check_decision,
    decide,
    on_hook_ask,
    pause,
    release,
    released,
)
from ._agent_finish import (
    AgentStep,
    call_model,
    charge,
    fail,
    finish,
    over_budget,
    start_attempt,
    validation_feedback,
)
from ._agent_outcome import AgentError, AgentOutput, AttemptErrors, ErrorCode, ErrorPhase
from ._agent_round import add_result, close_round, start_round
from ._agent_state import AgentPhase, AgentState, AgentStepError, with_stream
from ._effects import Emit
from ._events import (
    LATE_ANSWERS,
    AgentEvent,
    Approved,
    Cancelled,
    Denied,
    HookDecided,
    ModelCallFailed,
    ModelResponded,
    PromptSubmitted,
    ReasoningDelta,
    TextDelta,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ValidationFinished,
)
from ._notices import ValidationFailed
from ._records import ChatMessage
from ._response import DELTAS, EMPTY_STREAM, Delta, finished_calls
from ._retry import RetryTimer, backoff
from ._round import awaited_position, cancel, not_awaited

AgentHandler = Callable[[AgentState, Any], AgentStep]


def agent_step(state: AgentState, event: AgentEvent) -> AgentStep:
    """Apply one event: the new state and the effects the shell must carry out."""
    handler = _handler((state.phase, type(event)))
    if handler is None:
        raise AgentStepError(state.phase, event)
    return handler(state, event)


# Rule 1 ----------------------------------------------------------------------


def _on_prompt(state: AgentState, event: PromptSubmitted) -> AgentStep:
    """Start attempt 1 with the prompt as the first user message."""
    message = ChatMessage(role="user", content=event.text, images=event.images)
    return start_attempt(state, message)


# Rule 2: the per-delta hot path (no `evolve`; core/_slots.py) ----------------


def _on_delta(state: AgentState, event: Delta) -> AgentStep:
    """Accumulate one delta of the response (nothing is told while it streams)."""
    return with_stream(state, DELTAS[type(event)](state.stream, event)), ()


# Rules 3, 4, 10 --------------------------------------------------------------


def _on_responded(state: AgentState, event: ModelResponded) -> AgentStep:
    """The response is complete: fail without calls, else open the iteration's round."""
    stream = state.stream
    state = attrs.evolve(state, stream=EMPTY_STREAM, retry=0)
    state, over = charge(state, event.usage)  # counts the usage too
    if over is not None:
        return over_budget(state, over, text=stream.text, reasoning=stream.reasoning)
    calls = finished_calls(stream, state.attempt, state.iteration)
    if not calls:
        return fail(
            state,
            ErrorCode.INVALID_RESPONSE,
            f"the model answered without calling a tool (expected {state.config.output_name})",
            text=stream.text,
            reasoning=stream.reasoning,
        )
    return start_round(state, stream.text, stream.reasoning, calls)


# Rules 5, 6 ------------------------------------------------------------------


def _on_tool_finished(state: AgentState, event: ToolFinished) -> AgentStep:
    """A helper's or the reflection handler's result for one call of the round."""
    pending = state.pending
    assert pending is not None
    position = awaited_position(pending, event.call_id)
    if position < 0:
        raise AgentStepError(state.phase, event, not_awaited(pending, event.call_id))
    return add_result(state, position, event.output, event.is_error, images=event.images)


# Rule 7 ----------------------------------------------------------------------


def _on_validated(state: AgentState, event: ValidationFinished) -> AgentStep:
    """Accept the output, or feed the problems back in a new attempt, or give up."""
    if event.attempt != state.attempt:
        raise AgentStepError(state.phase, event, f"awaiting attempt {state.attempt}")
    assert state.output is not None
    if not event.problems:
        return finish(state, AgentOutput(output=state.output))
    errors = AttemptErrors(attempt=state.attempt, problems=event.problems)
    state = attrs.evolve(state, errors=(*state.errors, errors))
    told = Emit(notice=ValidationFailed(attempt=state.attempt, problems=event.problems))
    config = state.config
    if state.attempt < config.max_attempts:
        state, effects = start_attempt(state, validation_feedback(state, event.problems))
        return state, (told, *effects)
    state, effects = fail(
        state,
        ErrorCode.VALIDATION_FAILED,
        f"the output failed validation in all {config.max_attempts} attempt(s)",
        phase=ErrorPhase.VALIDATION,
        limit=config.max_attempts,
    )
    return state, (told, *effects)


# Rule 8 ----------------------------------------------------------------------


def _timer(state: AgentState) -> RetryTimer:
    """The backoff timer before the next retry of the attempt's current model call."""
    return RetryTimer(scope=state.attempt, iteration=state.iteration, retry=state.retry + 1)


def _on_failed(state: AgentState, event: ModelCallFailed) -> AgentStep:
    """Retry a retryable failure after a backoff, else finish PROVIDER_ERROR."""
    state = attrs.evolve(state, stream=EMPTY_STREAM)
    timer = backoff(state.config.retry, state.retry, event, _timer(state))
    if timer is not None:
        return attrs.evolve(state, phase=AgentPhase.BACKING_OFF), (timer,)
    return fail(state, ErrorCode.PROVIDER_ERROR, event.message, status=event.status)


def _on_timer(state: AgentState, event: TimerFired) -> AgentStep:
    """The backoff elapsed: repeat the same model call."""
    expected = _timer(state)
    if event.token != expected.token:
        raise AgentStepError(state.phase, event, expected.awaited())
    return call_model(state, retry=state.retry + 1)


# Rule 15 ---------------------------------------------------------------------


def _on_decision(state: AgentState, event: Approved | Denied) -> AgentStep:
    """A human's decision on one held call; once all are in, the approved ones run."""
    check_decision(state, event)
    state, last = decide(state, event)
    pending = state.pending
    assert pending is not None
    if not last:
        return pause(state) if state.phase is AgentPhase.AWAITING_APPROVAL else (state, ())
    state, now = release(state)
    if now:
        return state, released(now)
    if None not in pending.results:
        return close_round(state)
    return state, ()  # other calls of the round still run


# Rule 9 ----------------------------------------------------------------------


def _on_cancel(state: AgentState, event: Cancelled) -> AgentStep:
    """Finish EXECUTION_CANCELLED, closing the round in flight with "cancelled" results."""
    phase = ErrorPhase.VALIDATION if state.phase is AgentPhase.VALIDATING else ErrorPhase.ITERATION
    if state.pending is not None:
        closed, _ = cancel(state.pending)
        state = attrs.evolve(state, rounds=(*state.rounds, closed), pending=None)
    return fail(state, ErrorCode.EXECUTION_CANCELLED, "cancelled by the caller", phase=phase)


def _nothing(state: AgentState, event: AgentEvent) -> AgentStep:
    """Nothing to do (a cancel after the run ended)."""
    return state, ()


def _late(state: AgentState, event: AgentEvent) -> AgentStep:
    """After a cancel, the cancelled run's stragglers are dropped; otherwise misuse."""
    outcome = state.outcome
    if isinstance(outcome, AgentError) and outcome.code is ErrorCode.EXECUTION_CANCELLED:
        return state, ()
    raise AgentStepError(state.phase, event, "the run has finished")


# The transition table --------------------------------------------------------

#: Rules 1-8: the transitions of a run.
_RULE_ROWS: dict[tuple[AgentPhase, type], AgentHandler] = {
    (AgentPhase.IDLE, PromptSubmitted): _on_prompt,
    (AgentPhase.STREAMING, TextDelta): _on_delta,
    (AgentPhase.STREAMING, ReasoningDelta): _on_delta,
    (AgentPhase.STREAMING, ToolCallStarted): _on_delta,
    (AgentPhase.STREAMING, ToolCallArgumentsDelta): _on_delta,
    (AgentPhase.STREAMING, ModelResponded): _on_responded,
    (AgentPhase.STREAMING, ModelCallFailed): _on_failed,
    (AgentPhase.BACKING_OFF, TimerFired): _on_timer,
    (AgentPhase.RUNNING_TOOLS, ToolFinished): _on_tool_finished,
    (AgentPhase.VALIDATING, ValidationFinished): _on_validated,
    (AgentPhase.RUNNING_TOOLS, HookDecided): on_hook_ask,
}

#: Rule 15: a decision is taken while the round runs or is paused; elsewhere it is misuse,
#: said by `check_decision` with what awaits approval.
_DECISION_ROWS: dict[tuple[AgentPhase, type], AgentHandler] = {
    (phase, kind): _on_decision for phase in AgentPhase for kind in (Approved, Denied)
}

#: Rule 9: a cancel ends the run in any phase before the end; after it, it does nothing.
_CANCEL_ROWS: dict[tuple[AgentPhase, type], AgentHandler] = {
    **{(phase, Cancelled): _on_cancel for phase in AgentPhase if phase is not AgentPhase.FINISHED},
    (AgentPhase.FINISHED, Cancelled): _nothing,
}

#: Rule 9: the answers a cancelled run may still receive: dropped after a cancel, else misuse.
_IGNORED_WHEN_FINISHED: dict[tuple[AgentPhase, type], AgentHandler] = {
    (AgentPhase.FINISHED, kind): _late for kind in (*LATE_ANSWERS, ValidationFinished)
}

#: The agent's transitions, read-only: (phase, event type) -> handler.
AGENT_RULES: Mapping[tuple[AgentPhase, type], AgentHandler] = MappingProxyType(
    {**_RULE_ROWS, **_DECISION_ROWS, **_CANCEL_ROWS, **_IGNORED_WHEN_FINISHED}
)
_handler = AGENT_RULES.get
