"""Invariants of `step` for a structured output over random valid event sequences (hypothesis).

A small simulated world answers the effects `step` returns, sending only
events that may occur now — as a shell, a model, a validator or a caller would —
with random content: bad JSON, unknown tools, `submit` anywhere, failing tools,
failed validations, provider failures, cancels, late stragglers.
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_structured import RATE, RECORD

from toolreel.core import (
    CallModel,
    Cancelled,
    Event,
    Finish,
    LoopConfig,
    ModelCallFailed,
    ModelResponded,
    Phase,
    PlainOutput,
    PromptSubmitted,
    ReasoningDelta,
    Reflect,
    ReflectiveOutput,
    RunTool,
    StartTimer,
    State,
    TextDelta,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    Usage,
    Validate,
    ValidationFinished,
    initial_state,
    step,
)
from toolreel.core._history import unanswered_calls
from toolreel.core.policies import RetryPolicy

outputs = st.one_of(
    st.builds(PlainOutput, tool=st.just(RECORD), max_attempts=st.integers(1, 3)),
    st.builds(ReflectiveOutput, tool=st.just(RECORD), max_attempts=st.integers(1, 3)),
)
configs = st.builds(
    LoopConfig,
    output=outputs,
    tools=st.just((RATE,)),
    max_iterations=st.integers(1, 3),
    retry=st.builds(RetryPolicy, max_retries=st.integers(0, 2)),
)

FRAGMENTS = ['{"number": "A"', ', "total": 1', "}", "{}", "[", "", '"x"', "0}"]
names = st.sampled_from(["currency_rate", "record_invoice", "submit", "nope", ""])
usages = st.builds(Usage, input_tokens=st.integers(0, 50), output_tokens=st.integers(0, 50))
problems = st.lists(st.sampled_from(["$.total: wrong", "number missing"]), max_size=2)
deltas = st.one_of(
    st.builds(TextDelta, text=st.sampled_from(["", "Hm", "ok"])),
    st.builds(ReasoningDelta, text=st.just("think"), signature=st.sampled_from([None, "sig"])),
    st.builds(
        ToolCallStarted,
        index=st.integers(0, 2),
        call_id=st.sampled_from(["", "c1", "c2"]),
        name=names,
    ),
    st.builds(ToolCallArgumentsDelta, index=st.integers(0, 2), fragment=st.sampled_from(FRAGMENTS)),
)
endings = st.one_of(
    st.builds(ModelResponded, usage=usages),
    st.builds(ModelResponded, usage=usages),
    st.builds(
        ModelCallFailed,
        retryable=st.booleans(),
        message=st.just("boom"),
        retry_after=st.sampled_from([None, 0.5]),
    ),
)


@attrs.define
class World:
    """What the effects so far ask of the outside world."""

    started: bool = False
    streaming: bool = False
    deltas: int = 0
    timer: str | None = None
    runs: list[str] = attrs.Factory(list)
    validating: int | None = None
    finished: bool = False
    late: list[str] = attrs.Factory(list)

    def absorb(self, event: Event, effects: tuple[Any, ...]) -> None:
        """Update what is awaited after `event` produced `effects`."""
        if isinstance(event, ModelResponded | ModelCallFailed):
            self.streaming, self.deltas = False, 0
        for effect in effects:
            match effect:
                case CallModel():
                    self.streaming = True
                case RunTool(call=call) | Reflect(call=call):
                    self.runs.append(call.id)
                case StartTimer(token=token):
                    self.timer = token
                case Validate(attempt=attempt):
                    self.validating = attempt
                case Finish():
                    self.finished = True
                    self.late.extend(self.runs)


def next_event(data: st.DataObject, world: World) -> Event:
    """One event that may happen now (the model ends a response after at most 6 deltas)."""
    if not world.started:
        world.started = True
        return PromptSubmitted(text="extract")
    if world.finished:
        if world.late and data.draw(st.booleans()):
            return ToolFinished(call_id=data.draw(st.sampled_from(world.late)), output="late")
        return Cancelled()
    if data.draw(st.integers(0, 19)) == 0:
        return Cancelled()
    if world.streaming:
        world.deltas += 1
        return data.draw(endings if world.deltas > 6 else st.one_of(deltas, endings))
    if world.timer is not None:
        token, world.timer = world.timer, None
        return TimerFired(token=token)
    if world.runs:
        call_id = data.draw(st.sampled_from(world.runs))
        world.runs.remove(call_id)
        return ToolFinished(call_id=call_id, output="out", is_error=data.draw(st.booleans()))
    assert world.validating is not None
    attempt, world.validating = world.validating, None
    return ValidationFinished(attempt=attempt, problems=tuple(data.draw(problems)))


def simulate(data: st.DataObject, config: LoopConfig) -> list[tuple[Any, State, tuple]]:
    """Run the world against the turn until it finishes, plus a few stragglers."""
    state, world, trace = initial_state(config), World(), []
    after = data.draw(st.integers(0, 3))
    for _ in range(1000):
        if world.finished:
            if after == 0:
                break
            after -= 1
        event = next_event(data, world)
        state, effects = step(state, event)
        world.absorb(event, effects)
        trace.append((event, state, effects))
    assert world.finished, "the run must end within its limits"
    return trace


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(config=configs, data=st.data())
def test_every_run_ends_with_exactly_one_finish_as_its_last_effect(config, data) -> None:
    finishes = 0
    for _, state, effects in simulate(data, config):
        ended = [effect for effect in effects if isinstance(effect, Finish)]
        finishes += len(ended)
        if ended:
            assert ended[-1] is effects[-1]
            assert state.phase is Phase.IDLE
        if finishes:
            assert effects == () or ended
    assert finishes == 1


@SETTINGS
@given(config=configs, data=st.data())
def test_usage_never_decreases(config, data) -> None:
    previous = Usage()
    for _, state, effects in simulate(data, config):
        assert state.usage.input_tokens >= previous.input_tokens
        assert state.usage.output_tokens >= previous.output_tokens
        previous = state.usage
        for effect in effects:
            if isinstance(effect, Finish):
                assert effect.usage == state.usage


@SETTINGS
@given(config=configs, data=st.data())
def test_every_call_sent_or_kept_has_exactly_one_result(config, data) -> None:
    for _, state, effects in simulate(data, config):
        for effect in effects:
            if isinstance(effect, CallModel):
                assert unanswered_calls(effect.request.messages) == ()
            if isinstance(effect, Finish):
                assert unanswered_calls(state.history) == ()


@SETTINGS
@given(config=configs, data=st.data())
def test_limits_hold_and_submit_is_offered_only_with_reflection(config, data) -> None:
    for _, state, effects in simulate(data, config):
        if state.turn is not None:
            assert state.turn.attempt <= config.output.max_attempts
            assert state.turn.iteration <= config.max_iterations
        for effect in effects:
            if isinstance(effect, CallModel):
                offered = {spec.name for spec in effect.request.tools}
                assert ("submit" in offered) == isinstance(config.output, ReflectiveOutput)
            if isinstance(effect, Reflect):
                assert isinstance(config.output, ReflectiveOutput)


@SETTINGS
@given(config=configs, data=st.data())
def test_the_same_events_fold_to_the_same_states_and_effects(config, data) -> None:
    trace = simulate(data, config)
    state = initial_state(config)
    for event, recorded_state, recorded_effects in trace:
        state, effects = step(state, event)
        assert (state, effects) == (recorded_state, recorded_effects)
