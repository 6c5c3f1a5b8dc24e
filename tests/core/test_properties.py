"""Invariants of `step` over random valid event sequences (hypothesis).

A small simulated world answers the effects `step` returns: it only sends
events that may occur in the loop's situation, as a shell, a model or a user
would — but with random content (bad JSON, unknown tools, failures, cancels).
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loop import ADD, WEATHER

from toolreel.core import (
    AskHook,
    CallModel,
    Cancelled,
    Emit,
    Event,
    Finish,
    HookDecided,
    LoopConfig,
    ModelCallFailed,
    ModelResponded,
    PromptSubmitted,
    ReasoningDelta,
    RunTool,
    StartTimer,
    State,
    TextDelta,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    Usage,
    initial_state,
    step,
)
from toolreel.core._history import unanswered_calls
from toolreel.core.hooks import Allowed, Blocked, HookPoint, Replaced
from toolreel.core.notices import ResultsRequested
from toolreel.core.policies import MaxIterationsPolicy, RetryPolicy

configs = st.builds(
    LoopConfig,
    tools=st.just((ADD, WEATHER)),
    max_iterations=st.integers(1, 4),
    on_max_iterations=st.sampled_from(list(MaxIterationsPolicy)),
    retry=st.builds(RetryPolicy, max_retries=st.integers(0, 2)),
    hooks=st.frozensets(st.sampled_from(list(HookPoint))),
    auto_execute=st.booleans(),
)

FRAGMENTS = ['{"a": ', "1", "2.5", ', "b": ', "3}", "}", "[", "", '"x"', "{}"]
names = st.sampled_from(["add", "weather_lookup", "nope", ""])
decisions = st.one_of(
    st.builds(Allowed),
    st.builds(Blocked, reason=st.sampled_from(["no", "forbidden"])),
    st.builds(Replaced, value=st.sampled_from(['{"a": 1, "b": 2}', "[", "hello"])),
)
usages = st.builds(Usage, input_tokens=st.integers(0, 50), output_tokens=st.integers(0, 50))


@attrs.define
class World:
    """What the effects so far ask of the outside world."""

    idle: bool = True
    streaming: bool = False
    timer: str | None = None
    hooks: list[str] = attrs.Factory(list)
    runs: list[str] = attrs.Factory(list)
    requested: list[str] = attrs.Factory(list)
    late: list[str] = attrs.Factory(list)

    def absorb(self, event: Event, effects: tuple[Any, ...]) -> None:
        """Update what is awaited after `event` produced `effects`."""
        if isinstance(event, ModelResponded | ModelCallFailed):
            self.streaming = False
        if isinstance(event, TimerFired):
            self.timer = None
        if isinstance(event, PromptSubmitted):
            self.idle = False
        for effect in effects:
            self._absorb_effect(effect)

    def _absorb_effect(self, effect: Any) -> None:
        match effect:
            case CallModel():
                self.streaming = True
            case RunTool(call=call):
                self.runs.append(call.id)
            case AskHook(hook_id=hook_id):
                self.hooks.append(hook_id)
            case StartTimer(token=token):
                self.timer = token
            case Emit(notice=ResultsRequested(calls=calls)):
                self.requested.extend(call.id for call in calls)
            case Finish():
                self.late.extend(self.runs)
                self.__init__(late=self.late)  # type: ignore[misc]


def next_event(data: st.DataObject, world: World) -> Event:
    """One event that may happen now."""
    if world.late and data.draw(st.integers(0, 9)) == 0:
        return ToolFinished(call_id=data.draw(st.sampled_from(world.late)), output="late")
    if world.idle:
        return PromptSubmitted(text=data.draw(st.sampled_from(["hi", "add 1 and 2"])))
    if data.draw(st.integers(0, 14)) == 0:
        return Cancelled()
    if world.hooks:
        hook_id = data.draw(st.sampled_from(world.hooks))
        world.hooks.remove(hook_id)
        return HookDecided(hook_id=hook_id, decision=data.draw(decisions))
    if world.streaming:
        return data.draw(model_events)
    if world.timer is not None:
        return TimerFired(token=world.timer)
    if world.runs:
        call_id = data.draw(st.sampled_from(world.runs))
        world.runs.remove(call_id)
        return ToolFinished(call_id=call_id, output="out", is_error=data.draw(st.booleans()))
    call_id = data.draw(st.sampled_from(world.requested))
    world.requested.remove(call_id)
    return ToolFinished(call_id=call_id, output="out")


model_events = st.one_of(
    st.builds(TextDelta, text=st.sampled_from(["", "Hel", "lo"])),
    st.builds(
        ReasoningDelta,
        text=st.sampled_from(["", "think"]),
        signature=st.sampled_from([None, "sig"]),
    ),
    st.builds(
        ToolCallStarted,
        index=st.integers(0, 2),
        call_id=st.sampled_from(["", "c1", "c2"]),
        name=names,
    ),
    st.builds(ToolCallArgumentsDelta, index=st.integers(0, 2), fragment=st.sampled_from(FRAGMENTS)),
    st.builds(ModelResponded, usage=usages),
    st.builds(ModelResponded, usage=usages),
    st.builds(
        ModelCallFailed,
        retryable=st.booleans(),
        message=st.just("boom"),
        retry_after=st.sampled_from([None, 1.5]),
    ),
)


def simulate(data: st.DataObject, config: LoopConfig) -> list[tuple[Event, State, tuple]]:
    """Run the world against the loop for up to 80 events; every step as it happened."""
    state, world, trace = initial_state(config), World(), []
    for _ in range(data.draw(st.integers(1, 80))):
        event = next_event(data, world)
        state, effects = step(state, event)
        world.absorb(event, effects)
        trace.append((event, state, effects))
    return trace


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(config=configs, data=st.data())
def test_every_call_in_a_request_or_the_history_has_exactly_one_result(config, data) -> None:
    for _, state, effects in simulate(data, config):
        assert unanswered_calls(state.history) == ()
        for effect in effects:
            if isinstance(effect, CallModel):
                assert unanswered_calls(effect.request.messages) == ()


@SETTINGS
@given(config=configs, data=st.data())
def test_each_turn_finishes_exactly_once(config, data) -> None:
    open_turns = 0
    for event, _, effects in simulate(data, config):
        if isinstance(event, PromptSubmitted):
            assert open_turns == 0
            open_turns += 1
        finishes = [e for e in effects if isinstance(e, Finish)]
        assert len(finishes) <= 1
        if finishes:
            assert open_turns == 1
            assert finishes[-1] is effects[-1]  # nothing follows the Finish
            open_turns -= 1


@SETTINGS
@given(config=configs, data=st.data())
def test_usage_totals_never_decrease(config, data) -> None:
    previous = Usage()
    for _, state, _ in simulate(data, config):
        assert state.usage.input_tokens >= previous.input_tokens
        assert state.usage.output_tokens >= previous.output_tokens
        previous = state.usage


@SETTINGS
@given(config=configs, data=st.data())
def test_the_same_events_fold_to_the_same_states_and_effects(config, data) -> None:
    trace = simulate(data, config)
    state = initial_state(config)
    for event, recorded_state, recorded_effects in trace:
        state, effects = step(state, event)
        assert (state, effects) == (recorded_state, recorded_effects)
