"""Going on and stopping: the loop's model calls, and the one place that ends a turn.

`call_model` is the only maker of `CallModel`, and `finish` the only maker of
`Finish`. The decisions to end are made where their rule is (core/_step.py):
BLOCKED (rule 1, `_on_prompt_hook`), COMPLETED (rule 4, `_on_responded`),
FAILED (rule 8, `_on_failed`), CANCELLED (rule 9, `_on_cancel`); and here,
after each round, the iteration cap (rule 7, `advance`).
"""

from __future__ import annotations

import attrs

from ._config import MaxIterationsPolicy
from ._effects import CallModel, Effect, Emit, Failure, Finish, FinishReason, Persist
from ._history import build_request, turn_message
from ._notices import MessageRecorded
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
        failure = Failure(
            kind="max_iterations",
            message=f"reached max_iterations={config.max_iterations} "
            "with the model still calling tools",
        )
        return finish(state, turn, FinishReason.FAILED, error=failure, capped=True)
    return finish(state, turn, FinishReason.MAX_ITERATIONS, capped=True)


def finish(
    state: State,
    turn: Turn,
    reason: FinishReason,
    *,
    text: str = "",
    reasoning: tuple[Reasoning, ...] = (),
    error: Failure | None = None,
    capped: bool = False,
    model_finish_reason: str | None = None,
    block_reason: str | None = None,
) -> Step:
    """End the turn: record its assistant message (if it has one), then `Finish`.

    A turn that completed always records its answer; one that stopped early
    records its completed rounds, so nothing the tools did is lost.
    """
    effects: list[Effect] = []
    history = state.history
    if reason is FinishReason.COMPLETED or turn.rounds or text:
        message = turn_message(turn, text, reasoning)
        history = (*history, message)
        effects += [Persist(message=message), Emit(notice=MessageRecorded(message=message))]
    effects.append(
        Finish(
            reason=reason,
            text=text,
            rounds=turn.rounds,
            iterations=turn.iteration,
            usage=turn.usage,
            max_iterations_reached=capped or turn.final_call,
            error=error,
            model_finish_reason=model_finish_reason,
            block_reason=block_reason,
        )
    )
    state = attrs.evolve(
        state,
        phase=Phase.IDLE,
        history=history,
        turn=None,
        stream=EMPTY_STREAM,
        after_cancel=reason is FinishReason.CANCELLED,
    )
    return state, tuple(effects)
