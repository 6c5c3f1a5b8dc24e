"""What comes next once nothing runs: one decision, after every round and every answer.

`next_step(config, turn, answer)` is asked whenever a turn has nothing left
running: a round is complete (every call has its result), only calls held for
approval are left, or a response ended without calls to run (`answer`). It
returns one member of a closed union, and `go_on` (core/_finish.py) carries it out:

- `Pause`: only held calls are left; the turn waits for a human (rule 15).
- `Continue`: call the model again, as usual, past the iteration cap
  (ONE_MORE_CALL), or one last time without tools for a final answer
  (FINAL_ANSWER, or the budget's FINAL_ANSWER; rules 7, 16).
- `Check`: validate the attempt's structured output (rule 17).
- `End(outcome)`: the turn is over (`Completed`, `Capped`, `Failed`, `Blocked`,
  `OverBudget`), keeping the answer's text and reasoning.

The cases, in the order they are asked. With an `answer`: a budget that ran
out ends the turn `OverBudget` with it; a structured output ends `Failed`
(`INVALID_RESPONSE`: no output was called for); a final-answer call ends
`Capped`; else `Completed`. After a round: a budget that ran out (rule 16);
a PreToolUse block under END_TURN (rule 5); a structured output's `submit`
(rule 17: `Check` its output, or `Failed(SUBMIT_BEFORE_OUTPUT)` without one)
or plain output call (`Check`); the call past the cap (ONE_MORE_CALL ends
`Capped`); the cap itself (rule 7: a structured attempt fails
`MAX_ITERATIONS`, else `on_max_iterations` decides); otherwise `Continue`.
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from ._budget import BudgetPolicy, OverBudget
from ._config import LoopConfig, MaxIterationsPolicy, PlainOutput
from ._effects import Capped, Completed, Failed, FailureCode, Outcome
from ._events import Blocked
from ._output import capped, invalid_response, outputs, submit_before_output, submitted
from ._record import Value
from ._records import Reasoning
from ._state import Turn


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Answer(Value):
    """A response that ends without calls to run: its text, reasoning and finish reason."""

    text: str
    reasoning: tuple[Reasoning, ...] = ()
    finish_reason: str = "stop"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Pause(Value):
    """Only calls held for approval are left: the turn pauses (rule 15)."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Continue(Value):
    """Call the model again: `final` offers no tools and asks for an answer; `past_cap`
    makes the ONE_MORE_CALL call; `over_budget` is what ran out, for a final answer."""

    final: bool = False
    past_cap: bool = False
    over_budget: OverBudget | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Check(Value):
    """Validate the attempt's structured output."""

    output: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class End(Value):
    """The turn is over with `outcome`; `text` and `reasoning` join its assistant message."""

    outcome: Outcome
    text: str | None = None
    reasoning: tuple[Reasoning, ...] = ()


Next: TypeAlias = Pause | Continue | Check | End

#: The usual decision after a round: call the model again (one record, never rebuilt).
CONTINUE = Continue()


def next_step(config: LoopConfig, turn: Turn, answer: Answer | None = None) -> Next:
    """What the turn does now that nothing runs (see the module docstring)."""
    if turn.pending is not None:
        return Pause()
    if answer is not None:
        return _answered(config, turn, answer)
    if turn.over_budget is not None:
        return budget_next(config, turn, turn.over_budget)
    if turn.block_reason is not None:
        return End(outcome=Blocked(reason=turn.block_reason))
    produced = _produced(config, turn)
    if produced is not None:
        return produced
    if turn.past_cap:
        return End(outcome=Capped(text="", policy=MaxIterationsPolicy.ONE_MORE_CALL))
    if turn.iteration < config.max_iterations:
        return CONTINUE
    return _capped(config, turn)


def budget_next(config: LoopConfig, turn: Turn, over: OverBudget) -> Continue | End:
    """The budget ran out (rule 16): end `OverBudget`, or, under FINAL_ANSWER, one last call.

    The last call is made only when the turn has rounds to answer from, it is
    not model calls that ran out, and the answer is text (a structured output
    has nothing to gain from a call without tools).
    """
    budget = config.budget
    assert budget is not None
    if (
        budget.on_exceeded is BudgetPolicy.FINAL_ANSWER
        and turn.rounds
        and not turn.final_call
        and not config.structured
        and over.limit_name != "model_calls"
    ):
        return Continue(final=True, over_budget=over)
    return End(outcome=over)


def _answered(config: LoopConfig, turn: Turn, answer: Answer) -> End:
    """A response without calls to run ends the turn: what it ends with."""
    text, reasoning, reason = answer.text, answer.reasoning, answer.finish_reason
    over = turn.over_budget
    if config.structured:  # its text, if any, stays in the conversation
        outcome: Outcome = Failed(
            code=FailureCode.INVALID_RESPONSE, message=invalid_response(config.output)
        )
        if over is not None:
            outcome = over
        return End(outcome=outcome, text=text or None, reasoning=reasoning)
    if over is not None:
        outcome = attrs.evolve(over, text=text, model_finish_reason=reason)
    elif turn.final_call:
        outcome = Capped(
            text=text, policy=MaxIterationsPolicy.FINAL_ANSWER, model_finish_reason=reason
        )
    else:
        outcome = Completed(text=text, model_finish_reason=reason)
    return End(outcome=outcome, reasoning=reasoning)


def _produced(config: LoopConfig, turn: Turn) -> Check | End | None:
    """Rule 17: the round just closed ends the attempt (`submit`, or a plain output call)."""
    if not config.structured:
        return None
    calls = turn.rounds[-1].tool_calls
    output = config.output
    if submitted(output, calls):
        if turn.output is None:
            failed = Failed(
                code=FailureCode.SUBMIT_BEFORE_OUTPUT, message=submit_before_output(output)
            )
            return End(outcome=failed)
        return Check(output=turn.output)
    if isinstance(output, PlainOutput) and outputs(output, calls):
        assert turn.output is not None
        return Check(output=turn.output)
    return None


def _capped(config: LoopConfig, turn: Turn) -> Continue | End:
    """Rule 7: the round of iteration `max_iterations` is complete and the model wants more."""
    limit = config.max_iterations
    if config.structured:
        failed = Failed(code=FailureCode.MAX_ITERATIONS, message=capped(turn.attempt, limit))
        return End(outcome=failed)
    policy = config.on_max_iterations
    if policy is MaxIterationsPolicy.FINAL_ANSWER:
        return Continue(final=True)
    if policy is MaxIterationsPolicy.ONE_MORE_CALL:
        return Continue(past_cap=True)
    if policy is MaxIterationsPolicy.RAISE:
        message = f"reached max_iterations={limit} with the model still calling tools"
        return End(outcome=Failed(code=FailureCode.MAX_ITERATIONS, message=message))
    return End(outcome=Capped(text="", policy=MaxIterationsPolicy.STOP))
