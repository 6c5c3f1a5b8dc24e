"""Compaction's invariants (rule 18 of core/_step.py), over random sessions.

Whatever the policy and whatever happens — tool rounds, hooks, retries, cancels, summary
calls, "context too long" answers — every request is a valid history (every call answered
in its round, no result without its call), it ends with the running turn, and it carries
whole messages of the history, newest last.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from loop import ADD, WEATHER
from test_properties import SETTINGS, World, next_event

from toolreel.core import (
    CallModel,
    ChatMessage,
    Event,
    LoopConfig,
    ModelCallFailed,
    State,
    initial_state,
    step,
)
from toolreel.core._compaction import SUMMARY_HEADER
from toolreel.core._history import unanswered_calls
from toolreel.core.compaction import KeepTokens, KeepTurns, Summarise

limits = st.one_of(
    st.builds(KeepTurns, turns=st.integers(1, 3), pinned=st.integers(0, 3)),
    st.builds(KeepTokens, tokens=st.integers(1, 200), pinned=st.integers(0, 3)),
)
policies = st.one_of(limits, st.builds(Summarise, within=limits))
configs = st.builds(
    LoopConfig,
    tools=st.just((ADD, WEATHER)),
    max_iterations=st.integers(1, 4),
    compaction=policies,
)
TOO_LONG = ModelCallFailed(retryable=False, message="prompt is too long", context_too_long=True)


def simulate(data: st.DataObject, config: LoopConfig) -> list[tuple[Event, State, tuple]]:
    """Up to 120 events a world may send, "context too long" among the model's answers."""
    state, world, trace = initial_state(config), World(), []
    for _ in range(data.draw(st.integers(1, 120))):
        if world.streaming and data.draw(st.integers(0, 9)) == 0:
            event: Event = TOO_LONG
        else:
            event = next_event(data, world)
        state, effects = step(state, event)
        world.absorb(event, effects)
        trace.append((event, state, effects))
    return trace


def from_history(message: ChatMessage, history: tuple[ChatMessage, ...]) -> bool:
    """Whether a carried message is one of the history's (or a summary, or running rounds)."""
    return (
        message in history
        or message.content.startswith(SUMMARY_HEADER)
        or (message.role == "assistant" and not message.content and bool(message.tool_rounds))
    )


@SETTINGS
@given(config=configs, data=st.data())
def test_every_request_is_a_valid_history_of_whole_messages(config, data) -> None:
    for _, state, effects in simulate(data, config):
        for effect in effects:
            if not isinstance(effect, CallModel):
                continue
            messages = effect.request.messages
            assert unanswered_calls(messages) == ()
            carried = messages[:-1] if effect.summary else messages  # then the instruction
            assert all(from_history(message, state.history) for message in carried)
            if not effect.summary and state.turn is not None:  # the running turn, whole
                running = state.history[state.turn.start :]
                assert (
                    any(messages[i : i + len(running)] == running for i in range(len(messages)))
                    or not running
                )


@SETTINGS
@given(config=configs, data=st.data())
def test_the_same_events_compact_the_same_way(config, data) -> None:
    trace = simulate(data, config)
    state = initial_state(config)
    for event, recorded_state, recorded_effects in trace:
        state, effects = step(state, event)
        assert (state, effects) == (recorded_state, recorded_effects)
