"""Helpers that read as specifications: build model responses, fold events, pick effects."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolreel.core import (
    Effect,
    Emit,
    Event,
    LoopConfig,
    ModelResponded,
    State,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolSpec,
    Usage,
    initial_state,
    step,
)

ADD = ToolSpec(
    name="add",
    description="Add two numbers",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
WEATHER = ToolSpec(name="weather_lookup", description="Current weather for a city")


def config(**overrides: Any) -> LoopConfig:
    """A config with the `add` and `weather_lookup` tools unless told otherwise."""
    overrides.setdefault("model", "test-model")
    overrides.setdefault("tools", (ADD, WEATHER))
    return LoopConfig(**overrides)


def text(*chunks: str) -> list[Event]:
    """Text deltas, one per chunk."""
    return [TextDelta(text=chunk) for chunk in chunks]


def call(index: int, call_id: str, name: str, arguments: str, pieces: int = 3) -> list[Event]:
    """A streamed tool call: its start, then its arguments cut into `pieces` fragments."""
    size = max(1, -(-len(arguments) // pieces))
    fragments = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    return [
        ToolCallStarted(index=index, call_id=call_id, name=name),
        *[ToolCallArgumentsDelta(index=index, fragment=f) for f in fragments],
    ]


def done(finish_reason: str = "stop", input_tokens: int = 10, output_tokens: int = 5) -> Event:
    """The end of a response, with its usage."""
    return ModelResponded(
        finish_reason=finish_reason,
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
    )


def fold(state: State, events: Iterable[Event]) -> tuple[State, list[tuple[Effect, ...]]]:
    """Feed events one by one; the final state and each step's effects."""
    per_step = []
    for event in events:
        state, effects = step(state, event)
        per_step.append(effects)
    return state, per_step


def run(cfg: LoopConfig, events: Iterable[Event]) -> tuple[State, list[Effect]]:
    """Fold events from the initial state; the final state and all effects in order."""
    state, per_step = fold(initial_state(cfg), events)
    return state, [effect for effects in per_step for effect in effects]


def of_type(effects: Sequence[Effect], kind: type) -> list[Any]:
    """The effects of one type, in order."""
    return [effect for effect in effects if isinstance(effect, kind)]


def notices(effects: Sequence[Effect], kind: type | None = None) -> list[Any]:
    """The notices emitted, optionally of one type."""
    emitted = [effect.notice for effect in effects if isinstance(effect, Emit)]
    return [n for n in emitted if kind is None or isinstance(n, kind)]
