"""Going on and stopping: the loop's model calls, and the one place that ends a turn.

`call_model` is the only maker of `CallModel`, and `finish` the only maker of
`Finish`. The decisions to end are made where their rule is, each naming its
`Outcome` (core/_step.py): `Blocked` (rule 1, `_on_prompt_hook`), `Completed`
or a FINAL_ANSWER `Capped` (rules 4 and 7, `_on_responded`), `Failed` (rule 8,
`_on_failed`), `Cancelled` (rule 9, `_on_cancel`); and here, after each round,
the iteration cap: a STOP `Capped` or a RAISE `Failed` (rule 7, `advance`).
"""

from __future__ import annotations

import attrs

from ._config import MaxIterationsPolicy
from ._effects import (
    CallModel,
    Capped,
    Completed,
    Effect,
    Failed,
    FailureCode,
    Finish,
    Outcome,
    Persist,
)
from ._events import Cancelled
from ._history import build_request, turn_message
from ._records import Reasoning
from ._response import EMPTY_STREAM
from ._state import Phase, State, Turn

Step = tuple[State, tuple[Effect, ...]]


def call_model(state: State, turn: Turn, *, retry: int = 0) -> Step:
    """Issue the turn's next model call (a new iteration unless it is a retry)."""
    if retry == 0:
        turn = attrs.evolve(turn, iteration=turn.iteration + 1, retry=0)
    else:
        turn = attrs.evolve(turn, retry=retry)
    request = build_request(state.config, state.history, turn)
    state = attrs.evolve(state, phase=Phase.STREAMING, turn=turn, stream=EMPTY_STREAM)
    return state, (CallModel(request=request, iteration=turn.iteration, retry=retry),)


def advance(state: State, turn: Turn) -> Step:
    """After a round: stop at the iteration cap under the policy, or call the model again."""
    config = state.config
    if turn.iteration < config.max_iterations:
        return call_model(state, turn)
    policy = config.on_max_iterations
    if policy is MaxIterationsPolicy.FINAL_ANSWER:
        return call_model(state, attrs.evolve(turn, final_call=True))
    if policy is MaxIterationsPolicy.RAISE:
        failed = Failed(
            code=FailureCode.MAX_ITERATIONS,
            message=f"reached max_iterations={config.max_iterations} "
            "with the model still calling tools",
        )
        return finish(state, turn, failed)
    return finish(state, turn, Capped(text="", policy=MaxIterationsPolicy.STOP))


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
    answer = outcome.text if isinstance(outcome, Completed | Capped) else None
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
