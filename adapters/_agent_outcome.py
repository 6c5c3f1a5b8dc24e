"""An agent run's outcome as the agent API tells it: the output, or an error with its code
and context — read from the `Finish` of a turn whose answer is a structured output.

The core ends every turn with one `Finish`; for a structured output its
`outcome` and `attempts` say all the agent API reports (`agent_outcome`):

- `Produced(output)`: `AgentOutput(output)`;
- `Failed` with `INVALID_RESPONSE`, `SUBMIT_BEFORE_OUTPUT`, `MAX_ITERATIONS` or
  `VALIDATION_FAILED`: the `ErrorCode` of the same name;
- `Failed` with `MODEL_ERROR` or `RETRIES_EXHAUSTED`: `PROVIDER_ERROR`;
- `Cancelled()`: `EXECUTION_CANCELLED`;
- `OverBudget(...)`: `OVER_BUDGET`;
- `Blocked(reason)`: `BLOCKED` (a hook the agent API never asks could do it).

The context: `phase` is VALIDATION when the turn ended validating an output
(a cancel then, or every attempt failing), else ITERATION; `attempt` and
`iteration` where it stopped; `limit` the limit reached (`max_iterations` for
MAX_ITERATIONS, `max_attempts` for VALIDATION_FAILED); `status` a provider
failure's HTTP status; `validation_errors` every failed attempt's problems;
`budget` the limit an OVER_BUDGET run ran out of.
"""

from __future__ import annotations

import enum
from typing import TypeAlias, assert_never

import attrs

from toolreel.core import Cancelled, Finish, LoopConfig, PlainOutput, ReflectiveOutput
from toolreel.core.budget import OverBudget
from toolreel.core.hooks import Blocked
from toolreel.core.outcomes import AttemptErrors, Capped, Completed, Failed, FailureCode, Produced
from toolreel.core.record import Value


class ErrorCode(enum.StrEnum):
    """Why an agent run failed (a `str`: `error.code == "MAX_ITERATIONS"` holds)."""

    #: The iteration limit of an attempt was reached without an output.
    MAX_ITERATIONS = "MAX_ITERATIONS"
    #: Reflection: `submit` was called before any output-tool call.
    SUBMIT_BEFORE_OUTPUT = "SUBMIT_BEFORE_OUTPUT"
    #: The model answered without calling any tool.
    INVALID_RESPONSE = "INVALID_RESPONSE"
    #: Every attempt's output failed validation.
    VALIDATION_FAILED = "VALIDATION_FAILED"
    #: The caller cancelled the run.
    EXECUTION_CANCELLED = "EXECUTION_CANCELLED"
    #: A model call failed (fatal, or out of retries).
    PROVIDER_ERROR = "PROVIDER_ERROR"
    #: The budget ran out (its limit, value and amount used: `context.budget`).
    OVER_BUDGET = "OVER_BUDGET"
    #: A hook stopped the run (the agent API asks no hook that can).
    BLOCKED = "BLOCKED"


class ErrorPhase(enum.StrEnum):
    """Where in an attempt the run stopped."""

    #: Iterating: a model call, or the tools one asked for.
    ITERATION = "iteration"
    #: Validating an output.
    VALIDATION = "validation"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ErrorContext(Value):
    """Where the run stopped: phase, attempt, iteration, the limit hit, and every attempt's errors.

    `limit` is `max_iterations_per_attempt` for MAX_ITERATIONS and `max_attempts`
    for VALIDATION_FAILED; `status` is the HTTP status of a PROVIDER_ERROR;
    `budget` the limit an OVER_BUDGET run ran out of.
    """

    phase: ErrorPhase
    attempt: int
    iteration: int
    limit: int | None = None
    status: int | None = None
    validation_errors: tuple[AttemptErrors, ...] = ()
    budget: OverBudget | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentError(Value):
    """A failed run: its code, a message for people, and the context."""

    code: ErrorCode
    message: str
    context: ErrorContext


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentOutput(Value):
    """An accepted run: the validated output as the JSON text the model sent."""

    output: str


AgentOutcome: TypeAlias = AgentOutput | AgentError

_FAILURES = {
    FailureCode.INVALID_RESPONSE: ErrorCode.INVALID_RESPONSE,
    FailureCode.SUBMIT_BEFORE_OUTPUT: ErrorCode.SUBMIT_BEFORE_OUTPUT,
    FailureCode.MAX_ITERATIONS: ErrorCode.MAX_ITERATIONS,
    FailureCode.VALIDATION_FAILED: ErrorCode.VALIDATION_FAILED,
    FailureCode.MODEL_ERROR: ErrorCode.PROVIDER_ERROR,
    FailureCode.RETRIES_EXHAUSTED: ErrorCode.PROVIDER_ERROR,
}


def agent_outcome(finish: Finish, config: LoopConfig | None = None) -> AgentOutcome:
    """What the agent API reports for a structured turn's `Finish` (module docstring).

    Without its `config`, the context leaves out the limit a failure reached.
    """
    outcome = finish.outcome
    attempts = finish.attempts
    assert attempts is not None, "a turn whose answer is text has no agent outcome"
    phase = ErrorPhase.VALIDATION if attempts.validating else ErrorPhase.ITERATION
    context = ErrorContext(
        phase=phase,
        attempt=attempts.number,
        iteration=attempts.iteration,
        validation_errors=attempts.failed,
    )
    match outcome:
        case Produced(output=output):
            return AgentOutput(output=output)
        case Failed(code=failure, message=message, status=status):
            code = _FAILURES[failure]
            limit = _limit(code, config)
            context = attrs.evolve(context, limit=limit, status=status)
            return AgentError(code=code, message=message, context=context)
        case Cancelled():
            return AgentError(
                code=ErrorCode.EXECUTION_CANCELLED,
                message="cancelled by the caller",
                context=context,
            )
        case OverBudget():
            budget = attrs.evolve(outcome, text=None, model_finish_reason=None)
            context = attrs.evolve(context, budget=budget)
            return AgentError(code=ErrorCode.OVER_BUDGET, message=outcome.message, context=context)
        case Blocked(reason=reason):
            return AgentError(code=ErrorCode.BLOCKED, message=reason, context=context)
        case Completed() | Capped():
            raise ValueError(f"a structured turn cannot end {type(outcome).__name__}")
        case _:
            assert_never(outcome)


def _limit(code: ErrorCode, config: LoopConfig | None) -> int | None:
    """The limit a failure reached: the model calls of an attempt, or the attempts."""
    if config is None:
        return None
    if code is ErrorCode.MAX_ITERATIONS:
        return config.max_iterations
    output = config.output
    if code is ErrorCode.VALIDATION_FAILED and isinstance(output, PlainOutput | ReflectiveOutput):
        return output.max_attempts
    return None
