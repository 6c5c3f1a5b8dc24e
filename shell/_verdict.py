"""A check's verdict on a candidate session, and what the built-in checks measure.

A check is `check(original, candidate)` over two `Session`s (the recorded one
and its rerun; two `AgentSession`s for an agent run) returning a bool, a float
score in [0, 1] (it passes at 0.5 or more: for another mark return a
`Verdict`), a `Verdict`, or an awaitable of one of those. `judge` turns
whatever a check does — returns, raises, returns something else — into a
`Verdict`, so one bad check never stops an eval.
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import attrs

from toolreel.adapters import AgentError, AgentOutput, AgentSession, Session, canonical_arguments
from toolreel.core import ToolCall
from toolreel.core.budget import Budget
from toolreel.core.record import Value

#: The mark a float score passes at.
PASS_MARK = 0.5


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Verdict(Value):
    """What a check found: whether the candidate passed, a score if it has one, and why.

    Attributes:
        passed: Whether the candidate passed the check.
        score: A score (a float check's value, in [0, 1]); None for a yes/no check.
        reason: What the check found, in a phrase ("turn 2: completed → max_iterations").
    """

    passed: bool
    score: float | None = None
    reason: str = ""


#: What a check may return.
Outcome: TypeAlias = bool | float | Verdict
#: A session a check judges: a chat session, or an agent run (a structured output).
Judged: TypeAlias = Session | AgentSession
#: A check: the original session and its candidate in (two `Session`s, or two
#: `AgentSession`s for an agent run), a bool, a score, a `Verdict` out (or an awaitable of one).
Check: TypeAlias = (
    Callable[[Session, Session], Outcome | Awaitable[Outcome]]
    | Callable[[AgentSession, AgentSession], Outcome | Awaitable[Outcome]]
    | Callable[[Judged, Judged], Outcome | Awaitable[Outcome]]
)


def check_name(check: Check) -> str:
    """A check's name: its `name` attribute, else its function's name."""
    name = getattr(check, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(check, "__name__", None) or type(check).__name__)


async def judge(check: Check, original: Judged, candidate: Judged) -> Verdict:
    """Run one check; what it returns, or the exception it raises, as a `Verdict`."""
    called: Any = check  # given two sessions of one kind, the kind its arm takes
    try:
        found: Any = called(original, candidate)
        if inspect.isawaitable(found):
            found = await found
    except Exception as exc:  # a user's check: its failure is this check's, never the eval's
        return Verdict(passed=False, reason=f"the check raised {type(exc).__name__}: {exc}")
    return verdict_of(found)


def verdict_of(found: object) -> Verdict:
    """A check's return value as a `Verdict` (anything else: a failed one saying what came)."""
    if isinstance(found, Verdict):
        return found
    if isinstance(found, bool):
        return Verdict(passed=found)
    if isinstance(found, int | float):
        score = float(found)
        if not 0.0 <= score <= 1.0:  # NaN fails this too
            return Verdict(passed=False, reason=f"the check's score {found!r} is not in [0, 1]")
        return Verdict(passed=score >= PASS_MARK, score=score)
    return Verdict(
        passed=False,
        reason=f"the check returned {type(found).__name__}, not a bool, a float or a Verdict",
    )


def tool_calls(session: Judged) -> list[ToolCall]:
    """Every tool call the model made in the session, in order."""
    return [
        call
        for message in session.history
        if message.role == "assistant"
        for round_ in message.tool_rounds
        for call in round_.tool_calls
    ]


def tool_names(session: Judged) -> Counter[str]:
    """How many times each tool was called."""
    return Counter(call.name for call in tool_calls(session))


def answer(session: Judged) -> str:
    """The session's final answer: its last turn's text ("" without a turn); an agent run's
    output as canonical JSON (keys sorted: "" without one)."""
    if isinstance(session, AgentSession):
        outcome = session.outcome
        return canonical_arguments(outcome.output) if isinstance(outcome, AgentOutput) else ""
    return session.turns[-1].text if session.turns else ""


def outcomes(session: Judged) -> list[str]:
    """How each turn ended, in words; an agent run's one: "output" or its error's code."""
    if isinstance(session, AgentSession):
        outcome = session.outcome
        if isinstance(outcome, AgentError):
            return [str(outcome.code.value)]
        return ["output" if outcome is not None else "unfinished"]
    return [_reason(turn.reason) for turn in session.turns]


def cost_of(session: Judged, *budgets: Budget | None) -> float | None:
    """What the session cost at the first of `budgets` (then its own) pricing its model."""
    model = session.config.model
    for budget in (*budgets, session.config.budget):
        price = budget.price(model) if budget is not None else None
        if price is not None:
            return price.cost(session.usage)
    return None


def finite(value: float) -> bool:
    """Whether a threshold is a real number."""
    return not (math.isnan(value) or math.isinf(value))


def _reason(reason: object) -> str:
    """A turn's outcome in words."""
    return getattr(reason, "value", None) or "unfinished"


@attrs.frozen(repr=False, eq=False)
class SameOutcome(Value):
    """Every turn ended as the original's did (an agent run: an output, or the same error)."""

    name: str = "same outcome"

    def __call__(self, original: Judged, candidate: Judged) -> Verdict:
        """The first turn whose outcome differs, if one does."""
        before, after = outcomes(original), outcomes(candidate)
        for number, (one, other) in enumerate(zip(before, after, strict=False), start=1):
            if one != other:
                return Verdict(passed=False, reason=f"turn {number}: {one} → {other}")
        if len(before) != len(after):
            return Verdict(passed=False, reason=f"{len(before)} turn(s) → {len(after)}")
        return Verdict(passed=True, reason=", ".join(after))
