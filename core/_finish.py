"""Going on and stopping: model calls, attempts, the budget's counts, and the end of a turn.

`call_model` (through `issue`) is the only maker of a turn's `CallModel` (the
compaction policy's summary call is core/_context.py's), `finish` the only maker of
`Finish`, and `go_on` carries out what `next_step` (core/_next.py) decided once
nothing runs: pause, call again, validate, or end. Each transition that may
end a turn (core/_step.py: `_on_prompt_hook`, `_on_responded`, `_on_failed`,
`_on_validated`, `_on_cancel`, and every round's close) ends it through
`finish`. The per-delta hot path (rule 2) can never end a turn and does not
ask.

The outcomes made here: `failed` (a fatal model failure, or one out of retries,
rule 8) and, through `next_step`, every other but the two that are events: a
hook's `Blocked` decision on the prompt (rule 1) and the caller's `Cancelled`
(rule 9).
"""

from __future__ import annotations

import attrs

from ._budget import (
    BudgetScope,
    OverBudget,
    Spending,
    after_response,
    before_call,
    spent_response,
)
from ._config import PlainOutput, ReflectiveOutput
from ._context import carried, compacted, sent
from ._effects import (
    Attempts,
    AwaitApproval,
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
    Validate,
)
from ._events import Cancelled, ModelCallFailed
from ._fallback import ModelFailure, every_model_failed
from ._history import build_request, turn_message
from ._model import rounds_message
from ._next import CONTINUE, Check, Continue, End, Next, Pause, budget_next
from ._notices import AttemptStarted, UsageReported
from ._output import feedback
from ._records import Reasoning, Usage
from ._response import EMPTY_STREAM
from ._state import Phase, State, Turn

Step = tuple[State, tuple[Effect, ...]]


def call_model(state: State, turn: Turn, *, retry: int = 0, again: bool = False) -> Step:
    """Issue the turn's next model call (a new iteration unless it is a retry, or `again`:
    the same call through the model the turn fell back to).

    A new iteration is not begun when the budget forbids it (rule 16).
    """
    if retry == 0 and not again:
        budget = state.config.budget
        over = (
            None
            if budget is None
            else before_call(budget, scoped(state, turn), final=turn.final_call)
        )
        if over is not None:
            return go_on(state, turn, budget_next(state.config, turn, over))
        turn = attrs.evolve(turn, iteration=turn.iteration + 1)  # (a response reset `retry`)
        if state.config.compaction is not None:  # rule 18: compact first, maybe summarise
            state, told = compacted(state, turn)
            if state.phase is Phase.SUMMARISING:
                return state, told
            state, effects = issue(state, turn)
            return state, (*told, *effects)
    else:
        turn = attrs.evolve(turn, retry=retry)
    return issue(state, turn, retry=retry)


def issue(state: State, turn: Turn, *, retry: int = 0) -> Step:
    """Make the model call with the history the context carries (core/_context.py)."""
    request = build_request(state.config, carried(state), turn)
    # the stream is empty: a response, a failure and the end of a turn each emptied it
    state = attrs.evolve(state, phase=Phase.STREAMING, turn=turn)
    if state.config.compaction is not None:
        state = sent(state, request)
    call = CallModel(request=request, iteration=turn.iteration, retry=retry, model=turn.model)
    return state, (call,)


def first_call(state: State, turn: Turn) -> Step:
    """The turn's first model call; a structured output's attempt 1 is told first (rule 17)."""
    state, effects = call_model(state, turn)
    if state.config.structured:
        return state, (Emit(notice=AttemptStarted(attempt=turn.attempt)), *effects)
    return state, effects


def go_on(state: State, turn: Turn, next: Next) -> Step:
    """Carry out what `next_step` decided."""
    if next is CONTINUE:  # (after most rounds: no match to walk)
        return call_model(state, turn)
    match next:
        case Pause():
            return pause(state, turn)
        case Continue(final=final, past_cap=past_cap, over_budget=over):
            if final or past_cap:  # (most calls are plain: no evolve; `over` comes with `final`)
                turn = attrs.evolve(
                    turn,
                    final_call=turn.final_call or final,
                    past_cap=turn.past_cap or past_cap,
                    over_budget=over or turn.over_budget,
                )
            return call_model(state, turn)
        case Check(output=output):
            state = attrs.evolve(state, phase=Phase.VALIDATING, turn=turn)
            return state, (Validate(output=output, attempt=turn.attempt),)
        case End(outcome=outcome, text=text, reasoning=reasoning):
            return finish(state, turn, outcome, text=text, reasoning=reasoning)


def pause(state: State, turn: Turn) -> Step:
    """Rule 15: nothing runs but held calls wait: pause the turn (`AwaitApproval`)."""
    assert turn.pending is not None
    state = attrs.evolve(state, phase=Phase.AWAITING_APPROVAL, turn=turn)
    return state, (AwaitApproval(requests=turn.pending.approvals),)


def new_attempt(state: State, turn: Turn, problems: tuple[str, ...]) -> Step:
    """Rule 17: the attempt's rounds and the feedback join the history; the next one starts."""
    output = state.config.output
    assert isinstance(output, PlainOutput | ReflectiveOutput)
    done = rounds_message(turn.rounds)
    told = feedback(output, turn.attempt, problems)
    # no longer validating: the new attempt iterates (even if the budget ends it at once)
    state = attrs.evolve(state, history=(*state.history, done, told), phase=Phase.STREAMING)
    turn = attrs.evolve(
        turn,
        attempt=turn.attempt + 1,
        earlier=turn.iterations,
        iteration=0,
        rounds=(),
        output=None,
    )
    state, effects = first_call(state, turn)
    return state, (Persist(message=done), Persist(message=told), *effects)


def scoped(state: State, turn: Turn) -> Spending:
    """What the budget's limits count: the turn's spending, or the session's (rule 16)."""
    budget = state.config.budget
    if budget is not None and budget.scope is BudgetScope.SESSION:
        return state.spent
    return turn.spent


def spent_on(state: State, turn: Turn, usage: Usage) -> tuple[Spending, Spending]:
    """The turn's and the session's spending after one model response with `usage`."""
    budget = state.config.budget
    price = None if budget is None else budget.price(state.config.model_at(turn.model))
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


def failed(event: ModelCallFailed, tried: tuple[ModelFailure, ...] = ()) -> Failed:
    """The outcome of a model failure that is not retried: fatal, or out of retries (rule 8).

    After falling back (`tried`: each model the turn moved on from, then this one), the
    message names every model and why it failed.
    """
    code = FailureCode.RETRIES_EXHAUSTED if event.retryable else FailureCode.MODEL_ERROR
    message = every_model_failed(tried) if tried else event.message
    return Failed(code=code, message=message, status=event.status)


def finish(
    state: State,
    turn: Turn,
    outcome: Outcome,
    *,
    text: str | None = None,
    reasoning: tuple[Reasoning, ...] = (),
) -> Step:
    """End the turn: record its assistant message (if it has one), then `Finish`.

    A turn that completed always records its answer; one that stopped early
    records its completed rounds (and any text the model gave), so nothing the
    tools did is lost.
    """
    effects: list[Effect] = []
    history = state.history
    said = text
    if said is None and isinstance(outcome, Completed | Capped | OverBudget):
        said = outcome.text
    if said is not None or turn.rounds or reasoning:
        message = turn_message(turn, said or "", reasoning)
        history = (*history, message)
        effects.append(Persist(message=message))
    attempts = None
    if state.config.structured:
        validating = state.phase is Phase.VALIDATING
        attempts = Attempts(
            number=turn.attempt, iteration=turn.iteration, failed=turn.failed, validating=validating
        )
    effects.append(
        Finish(
            outcome=outcome,
            rounds=turn.rounds,
            iterations=turn.iterations,
            usage=turn.usage,
            attempts=attempts,
        )
    )
    state = attrs.evolve(
        state,
        phase=Phase.IDLE,
        history=history,
        turn=None,
        stream=EMPTY_STREAM,
        aside=attrs.evolve(state.aside, after_cancel=isinstance(outcome, Cancelled)),
    )
    return state, tuple(effects)
