"""Going on and stopping: the loop's model calls, every turn outcome, and the end of a turn.

`call_model` is the only maker of `CallModel`, and `finish` the only maker of
`Finish`; every `Outcome` but the two that are events is made here:
- `answered`: a response without calls (or the FINAL_ANSWER call's) ends the
  turn `Completed`, or `Capped` under FINAL_ANSWER (rules 4 and 7);
- `advance`: after each round, a PreToolUse block under `BlockedCallPolicy.END_TURN`
  ends it `Blocked` (rule 5); the iteration cap ends it `Capped` (STOP, and
  ONE_MORE_CALL after its extra call) or `Failed(MAX_ITERATIONS)` (RAISE), or
  the model is called again (rule 7);
- `failed`: a fatal model failure, or one out of retries, is `Failed` (rule 8);
- `call_model` (before a call), `charge` (after a response) and `advance`:
  a budget that ran out ends the turn `OverBudget`, or asks for a final answer
  (rule 16, core/_budget.py).
The other two outcomes are the facts themselves: a hook's `Blocked` decision
(UserPromptSubmit, rule 1; PreToolUse under END_TURN, rule 5) and the caller's
`Cancelled` (rule 9).

Each transition that may end a turn (core/_step.py: `_on_prompt_hook`,
`_on_responded`, `_on_failed`, `_on_cancel`, and every round's close) calls
one of these and then `finish`. They are not one check applied after every
transition: the per-delta hot path (rule 2) can never end a turn and should
not pay for asking.
"""

from __future__ import annotations

import attrs

from ._budget import (
    BudgetPolicy,
    BudgetScope,
    OverBudget,
    Spending,
    after_response,
    before_call,
    spent_response,
)
from ._config import MaxIterationsPolicy
from ._effects import (
    CallModel,
    Capped,
    Completed,
    Effect,
    Emit,
    Failed,
    FailureCode,
    Finish,
    Outcome,
    Persist,
)
from ._events import Blocked, Cancelled, ModelCallFailed
from ._history import build_request, turn_message
from ._notices import UsageReported
from ._records import Reasoning, Usage
from ._response import EMPTY_STREAM
from ._state import Phase, State, Turn

Step = tuple[State, tuple[Effect, ...]]


def call_model(state: State, turn: Turn, *, retry: int = 0) -> Step:
    """Issue the turn's next model call (a new iteration unless it is a retry).

    A new iteration is not begun when the budget forbids it (rule 16).
    """
    if retry == 0:
        budget = state.config.budget
        over = (
            None
            if budget is None
            else before_call(budget, scoped(state, turn), final=turn.final_call)
        )
        if over is not None:
            return over_budget(state, turn, over)
        turn = attrs.evolve(turn, iteration=turn.iteration + 1, retry=0)
    else:
        turn = attrs.evolve(turn, retry=retry)
    request = build_request(state.config, state.history, turn)
    state = attrs.evolve(state, phase=Phase.STREAMING, turn=turn, stream=EMPTY_STREAM)
    return state, (CallModel(request=request, iteration=turn.iteration, retry=retry),)


def advance(state: State, turn: Turn) -> Step:
    """After a round: end the turn if a policy says so, else call the model again.

    END_TURN ends it `Blocked` after a round with a blocked call (rule 5); at
    the iteration cap the `on_max_iterations` policy decides (rule 7).
    """
    config = state.config
    if turn.over_budget is not None:
        return over_budget(state, turn, turn.over_budget)
    if turn.block_reason is not None:
        return finish(state, turn, Blocked(reason=turn.block_reason))
    if turn.past_cap:
        return finish(state, turn, Capped(text="", policy=MaxIterationsPolicy.ONE_MORE_CALL))
    if turn.iteration < config.max_iterations:
        return call_model(state, turn)
    policy = config.on_max_iterations
    if policy is MaxIterationsPolicy.FINAL_ANSWER:
        return call_model(state, attrs.evolve(turn, final_call=True))
    if policy is MaxIterationsPolicy.ONE_MORE_CALL:
        return call_model(state, attrs.evolve(turn, past_cap=True))
    if policy is MaxIterationsPolicy.RAISE:
        failed = Failed(
            code=FailureCode.MAX_ITERATIONS,
            message=f"reached max_iterations={config.max_iterations} "
            "with the model still calling tools",
        )
        return finish(state, turn, failed)
    return finish(state, turn, Capped(text="", policy=MaxIterationsPolicy.STOP))


def answered(turn: Turn, text: str, model_finish_reason: str) -> Completed | Capped | OverBudget:
    """The outcome of a final answer: `Capped` when FINAL_ANSWER asked for it (rule 7),
    `OverBudget` (with the answer) when the budget ran out (rule 16)."""
    if turn.over_budget is not None:
        return attrs.evolve(turn.over_budget, text=text, model_finish_reason=model_finish_reason)
    if turn.final_call:
        policy = MaxIterationsPolicy.FINAL_ANSWER
        return Capped(text=text, policy=policy, model_finish_reason=model_finish_reason)
    return Completed(text=text, model_finish_reason=model_finish_reason)


def scoped(state: State, turn: Turn) -> Spending:
    """What the budget's limits count: the turn's spending, or the session's (rule 16)."""
    budget = state.config.budget
    if budget is not None and budget.scope is BudgetScope.SESSION:
        return state.spent
    return turn.spent


def spent_on(state: State, turn: Turn, usage: Usage) -> tuple[Spending, Spending]:
    """The turn's and the session's spending after one model response with `usage`."""
    budget = state.config.budget
    price = None if budget is None else budget.price(state.config.model)
    return spent_response(turn.spent, usage, price), spent_response(state.spent, usage, price)


def charge(state: State, turn: Turn) -> tuple[Turn, tuple[Effect, ...]]:
    """With a budget, tell what was spent (counted by `spent_on`) and note a limit it passed."""
    budget = state.config.budget
    if budget is None:
        return turn, ()
    over = after_response(budget, scoped(state, turn))
    if over is not None and turn.over_budget is None:
        turn = attrs.evolve(turn, over_budget=over)
    notice = UsageReported(turn=turn.spent, session=state.spent)
    return turn, (Emit(notice=notice),)


def over_budget(state: State, turn: Turn, over: OverBudget) -> Step:
    """The budget ran out: end the turn `OverBudget`, or, under FINAL_ANSWER, one last call.

    The last call is made only when the turn has rounds to answer from and it is
    not model calls that ran out.
    """
    budget = state.config.budget
    assert budget is not None
    wants_answer = budget.on_exceeded is BudgetPolicy.FINAL_ANSWER
    if wants_answer and turn.rounds and not turn.final_call and over.limit_name != "model_calls":
        return call_model(state, attrs.evolve(turn, final_call=True, over_budget=over))
    return finish(state, turn, over)


def failed(event: ModelCallFailed) -> Failed:
    """The outcome of a model failure that is not retried: fatal, or out of retries (rule 8)."""
    code = FailureCode.RETRIES_EXHAUSTED if event.retryable else FailureCode.MODEL_ERROR
    return Failed(code=code, message=event.message, status=event.status)


def finish(
    state: State,
    turn: Turn,
    outcome: Outcome,
    *,
    reasoning: tuple[Reasoning, ...] = (),
) -> Step:
    """End the turn: record its assistant message (if it has one), then `Finish`.

    A turn that completed always records its answer; one that stopped early
    records its completed rounds, so nothing the tools did is lost.
    """
    effects: list[Effect] = []
    history = state.history
    answer = outcome.text if isinstance(outcome, Completed | Capped | OverBudget) else None
    if answer is not None or turn.rounds:
        message = turn_message(turn, answer or "", reasoning)
        history = (*history, message)
        effects.append(Persist(message=message))
    effects.append(
        Finish(outcome=outcome, rounds=turn.rounds, iterations=turn.iteration, usage=turn.usage)
    )
    state = attrs.evolve(
        state,
        phase=Phase.IDLE,
        history=history,
        turn=None,
        stream=EMPTY_STREAM,
        after_cancel=isinstance(outcome, Cancelled),
    )
    return state, tuple(effects)
