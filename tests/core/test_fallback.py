"""Rule 8 with a fallback: a failed model call moves on to the next model (core/_fallback.py)."""

from __future__ import annotations

import attrs
import pytest
from loop import config, done, fold, run, text

from toolreel.core import (
    CallModel,
    ConfigError,
    Emit,
    Finish,
    ModelCallFailed,
    PromptSubmitted,
    ReasoningDelta,
    StartTimer,
    TimerFired,
    initial_state,
    step,
)
from toolreel.core.notices import ModelChanged, RetryScheduled
from toolreel.core.outcomes import Completed, Failed, FailureCode
from toolreel.core.policies import FallbackPolicy, RetryPolicy

BUSY = ModelCallFailed(retryable=True, message="busy", status=503)
BAD_REQUEST = ModelCallFailed(retryable=False, message="bad request", status=400)
TOO_LONG = ModelCallFailed(
    retryable=False, message="prompt is too long", status=400, context_too_long=True
)


def fallback_config(**policy: object) -> object:
    """A config of model "a" falling back to "b" then "c", one retry per model."""
    return config(
        model="a",
        retry=RetryPolicy(max_retries=1),
        fallback=FallbackPolicy(models=("b", "c"), **policy),  # type: ignore[arg-type]
    )


def calls(effects: list[object]) -> list[CallModel]:
    """The model calls among `effects`."""
    return [effect for effect in effects if isinstance(effect, CallModel)]


def test_a_failure_out_of_retries_moves_to_the_next_model_with_the_same_call() -> None:
    cfg = fallback_config()
    state, per_step = fold(
        initial_state(cfg),
        [PromptSubmitted(text="hi"), BUSY, TimerFired(token="retry:1:1:1"), BUSY],
    )
    first = per_step[0][-1]
    assert isinstance(first, CallModel)
    assert per_step[3] == (
        Emit(notice=ModelChanged(model="b", index=1, previous="a", message="busy", status=503)),
        CallModel(request=attrs.evolve(first.request, model="b"), iteration=1, model=1),
    )
    assert state.turn is not None and state.turn.iteration == 1  # the same model call


def test_the_fallback_has_retries_of_its_own_and_its_timer_names_it() -> None:
    cfg = fallback_config()
    _, per_step = fold(
        initial_state(cfg),
        [PromptSubmitted(text="hi"), BUSY, TimerFired(token="retry:1:1:1"), BUSY, BUSY],
    )
    assert per_step[4] == (
        Emit(notice=RetryScheduled(retry=1, seconds=1.0, message="busy", status=503)),
        StartTimer(token="retry:1:1:1:1", seconds=1.0),
    )


def test_the_answer_of_the_fallback_completes_the_turn() -> None:
    cfg = fallback_config(on_status={503})
    _, effects = run(cfg, [PromptSubmitted(text="hi"), BUSY, *text("hello"), done()])
    finish = effects[-1]
    assert isinstance(finish, Finish)
    assert finish.outcome == Completed(text="hello")


def test_a_chosen_status_moves_on_at_once_without_retrying() -> None:
    cfg = fallback_config(on_status={503})
    _, per_step = fold(initial_state(cfg), [PromptSubmitted(text="hi"), BUSY])
    assert [type(effect) for effect in per_step[1]] == [Emit, CallModel]
    assert calls(list(per_step[1]))[0].model == 1


def test_a_non_retryable_400_fails_the_turn_unless_chosen() -> None:
    _, effects = run(fallback_config(), [PromptSubmitted(text="hi"), BAD_REQUEST])
    assert effects[-1] == Finish(
        outcome=Failed(code=FailureCode.MODEL_ERROR, message="bad request", status=400),
        rounds=(),
        iterations=1,
        usage=effects[-1].usage,  # type: ignore[union-attr]
    )
    _, chosen = run(fallback_config(on_status={400}), [PromptSubmitted(text="hi"), BAD_REQUEST])
    assert calls(chosen)[-1].model == 1


def test_a_context_too_long_moves_on_only_when_the_policy_says_so() -> None:
    _, kept = run(fallback_config(), [PromptSubmitted(text="hi"), TOO_LONG])
    assert isinstance(kept[-1], Finish)
    _, moved = run(fallback_config(on_context_length=True), [PromptSubmitted(text="hi"), TOO_LONG])
    assert calls(moved)[-1].model == 1


def test_when_every_model_fails_the_turn_fails_naming_each_and_why() -> None:
    cfg = fallback_config(on_status={503})
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            BUSY,  # a: at once
            ModelCallFailed(retryable=True, message="overloaded", status=529),  # b: retried
            TimerFired(token="retry:1:1:1:1"),
            ModelCallFailed(retryable=True, message="overloaded", status=529),  # b: spent
            BAD_REQUEST,  # c: the last
        ],
    )
    finish = effects[-1]
    assert isinstance(finish, Finish)
    assert finish.outcome == Failed(
        code=FailureCode.MODEL_ERROR,
        message=(
            "every model failed: a: HTTP 503: busy; "
            "b: HTTP 529: overloaded (after 1 retries); c: HTTP 400: bad request"
        ),
        status=400,
    )
    assert [call.model for call in calls(effects)] == [0, 1, 1, 2]


def test_without_a_fallback_out_of_retries_fails_as_ever() -> None:
    cfg = config(retry=RetryPolicy(max_retries=0))
    _, effects = run(cfg, [PromptSubmitted(text="hi"), BUSY])
    finish = effects[-1]
    assert isinstance(finish, Finish)
    assert finish.outcome == Failed(code=FailureCode.RETRIES_EXHAUSTED, message="busy", status=503)


def test_the_next_turn_starts_with_the_first_model_again() -> None:
    cfg = fallback_config(on_status={503})
    state, effects = run(cfg, [PromptSubmitted(text="hi"), BUSY, *text("hello"), done()])
    state, second = step(state, PromptSubmitted(text="again"))
    call = second[-1]
    assert isinstance(call, CallModel)
    assert (call.model, call.request.model) == (0, "a")


def test_a_reasoning_block_keeps_the_provider_that_sent_it() -> None:
    cfg = config()
    state, _ = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            ReasoningDelta(text="thinking"),
            ReasoningDelta(signature="sig", provider="anthropic"),
            *text("hello"),
            done(),
        ],
    )
    (block,) = state.history[-1].reasoning
    assert (block.text, block.signature, block.provider) == ("thinking", "sig", "anthropic")


def test_a_fallback_names_at_least_one_model_and_real_statuses() -> None:
    with pytest.raises(ConfigError):
        FallbackPolicy(models=())
    with pytest.raises(ConfigError):
        FallbackPolicy(models="b")
    with pytest.raises(ConfigError):
        FallbackPolicy(models=("b",), on_status={200})


def test_a_model_moved_to_at_once_still_has_all_its_retries() -> None:
    """The retries the first model spent before a chosen status moved it on are not the next's."""
    cfg = fallback_config(on_status={503})
    overloaded = ModelCallFailed(retryable=True, message="overloaded", status=529)
    _, per_step = fold(
        initial_state(cfg),
        [PromptSubmitted(text="hi"), overloaded, TimerFired(token="retry:1:1:1"), BUSY, overloaded],
    )
    assert calls(list(per_step[3]))[0].model == 1  # a's 503: on to b at once
    assert per_step[4] == (
        Emit(notice=RetryScheduled(retry=1, seconds=1.0, message="overloaded", status=529)),
        StartTimer(token="retry:1:1:1:1", seconds=1.0),
    )


def test_the_failures_named_say_the_status_once_and_only_when_there_is_one() -> None:
    cfg = fallback_config(on_status={503, 502})
    _, effects = run(
        cfg,
        [
            PromptSubmitted(text="hi"),
            ModelCallFailed(retryable=True, message="HTTP 503 busy", status=503),  # a: named
            ModelCallFailed(retryable=True, message="bad gateway", status=502),  # b: prefixed
            ModelCallFailed(retryable=False, message="connection reset"),  # c: no status
        ],
    )
    finish = effects[-1]
    assert isinstance(finish, Finish) and isinstance(finish.outcome, Failed)
    assert finish.outcome.message == (
        "every model failed: a: HTTP 503 busy; b: HTTP 502: bad gateway; c: connection reset"
    )


def test_the_last_model_failing_with_a_chosen_status_retries_then_ends_the_turn() -> None:
    """A chosen status moves on at once while there is a next model; the last one retries."""
    events = [PromptSubmitted(text="hi"), BUSY, BUSY, BUSY, TimerFired(token="retry:1:1:1:2"), BUSY]
    _, effects = run(fallback_config(on_status={503}), events)
    finish = effects[-1]
    assert isinstance(finish, Finish) and isinstance(finish.outcome, Failed)
    assert finish.outcome.message == (
        "every model failed: a: HTTP 503: busy; b: HTTP 503: busy; "
        "c: HTTP 503: busy (after 1 retries)"
    )
    assert [call.model for call in calls(effects)] == [0, 1, 2, 2]
