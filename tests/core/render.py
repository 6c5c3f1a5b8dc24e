"""A readable rendering of a scenario for snapshots: each event, then the effects it caused.

Values go through the project's cattrs converter (tagged with their type), and
empty fields are left out so each line says only what matters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolreel.adapters import unstructure
from toolreel.core import CallModel, Effect, Event, LoopConfig, initial_state, step


def _prune(data: Any) -> Any:
    """Drop None, empty and false fields, recursively."""
    if isinstance(data, dict):
        pruned = {key: _prune(value) for key, value in data.items()}
        return {k: v for k, v in pruned.items() if not _empty(v)}
    if isinstance(data, list):
        return [_prune(item) for item in data]
    return data


def _empty(value: Any) -> bool:
    """None, False, or an empty string, list or mapping (0 is a value)."""
    return value is None or value is False or (isinstance(value, str | list | dict) and not value)


def _line(value: Event | Effect) -> str:
    """`TypeName {fields}` on one line; a request lists its tools by name only."""
    data = _prune(unstructure(value))
    if isinstance(value, CallModel):
        data["request"]["tools"] = [tool.name for tool in value.request.tools]
    body = json.dumps(data, sort_keys=True, ensure_ascii=False) if data else ""
    return f"{type(value).__name__} {body}".rstrip()


def scenario(config: LoopConfig, events: Iterable[Event]) -> str:
    """Fold `events` from the initial state and render every step."""
    state = initial_state(config)
    lines = []
    for number, event in enumerate(events, start=1):
        state, effects = step(state, event)
        lines.append(f"{number:>3}. {_line(event)}")
        lines.extend(f"       -> {_line(effect)}" for effect in effects)
    lines.append(f"final phase: {state.phase.name}; history: {len(state.history)} messages")
    return "\n".join(lines) + "\n"
