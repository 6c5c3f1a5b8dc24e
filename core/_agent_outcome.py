"""How an agent run ends: the accepted output, or an error with its code and context.

Error codes (`ErrorCode`), and where each is decided (rules of core/_agent.py):

- `INVALID_RESPONSE` (rule 3): a response called no tool at all.
- `SUBMIT_BEFORE_OUTPUT` (rule 6a): `submit` with no output-tool call yet.
- `MAX_ITERATIONS` (rule 6c): `max_iterations_per_attempt` reached, no output.
- `VALIDATION_FAILED` (rule 7): the output failed validation in every attempt.
- `PROVIDER_ERROR` (rule 8): a model call failed for good.
- `EXECUTION_CANCELLED` (rule 9): the caller aborted.
- `OVER_BUDGET` (rule 14): the run's budget ran out (`context.budget` says which limit).
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from ._budget import OverBudget


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


class ErrorPhase(enum.StrEnum):
    """Where in an attempt the run stopped."""

    #: Iterating: a model call, or the tools one asked for.
    ITERATION = "iteration"
    #: Validating an output.
    VALIDATION = "validation"


@attrs.frozen(kw_only=True)
class AttemptErrors:
    """The validation problems of one attempt's output."""

    attempt: int
    problems: tuple[str, ...]


@attrs.frozen(kw_only=True)
class ErrorContext:
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


@attrs.frozen(kw_only=True)
class AgentError:
    """A failed run: its code, a message for people, and the context."""

    code: ErrorCode
    message: str
    context: ErrorContext


@attrs.frozen(kw_only=True)
class AgentOutput:
    """An accepted run: the validated output as the JSON text the model sent."""

    output: str


AgentOutcome: TypeAlias = AgentOutput | AgentError
