"""Well-formed events: what a session holds is what JSON, and so every journal, writes exactly.

Text must be valid Unicode (core/_text.py); a journal's numbers are 64-bit
integers and finite floats (orjson writes no others; it writes an infinite
float as `null`). Two rules, one for each side a value comes from:

1. What the caller gives -- a prompt, a denial's reason, a system prompt, a
   tool's name and description, an image's URL -- is refused where it is made:
   the record's validator (`checked_text`) raises `ConfigError`.
2. What a model, a tool or a hook sends is kept, made well-formed
   (`well_formed`): each lone surrogate becomes U+FFFD, as a UTF-8 decoder does
   with a bad byte (a pair held as two code points becomes its one character);
   an integer past JSON's range the nearest one it holds; a float that is no
   finite number None (a model event's only float is the optional `retry_after`).
   The shell applies it to every event before `step`, so the journal holds
   exactly the event the reducer saw, and a replay feeds the same.
"""

from __future__ import annotations

import functools
import math
from typing import Any, TypeVar

import attrs

from ._events import TextDelta, ToolCallArgumentsDelta
from ._text import valid_text

T = TypeVar("T")

#: The integers a journal writes (orjson: signed 64-bit up to unsigned 64-bit).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def well_formed(event: T) -> T:
    """`event` as a journal holds it exactly (rule 2); the same object when it already is.

    Any str, tuple or attrs record goes the same way (text decoded from JSON escapes
    and written out again, say).
    """
    given: Any = event
    kind = given.__class__
    if kind is TextDelta:  # the hot path: a piece of streamed text
        text = valid_text(given.text)
        return event if text is given.text else TextDelta(text=text)  # type: ignore[return-value]
    if kind is ToolCallArgumentsDelta and INT_MIN <= given.index <= INT_MAX:
        fragment = valid_text(given.fragment)
        if fragment is given.fragment:
            return event
        return ToolCallArgumentsDelta(index=given.index, fragment=fragment)  # type: ignore[return-value]
    formed: T = _value(event)
    return formed


def _value(value: Any) -> Any:
    """A str, number, tuple or attrs record made well-formed (the same object if it was)."""
    kind = value.__class__
    if kind is str:
        return valid_text(value)
    if kind is int:
        return value if INT_MIN <= value <= INT_MAX else min(max(value, INT_MIN), INT_MAX)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is tuple:
        items = tuple(_value(item) for item in value)
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return items if changed else value
    changes: dict[str, Any] = {}
    for name, alias in _fields(kind):
        old = getattr(value, name)
        new = _value(old)
        if new is not old:
            changes[alias] = new
    return attrs.evolve(value, **changes) if changes else value


@functools.cache
def _fields(kind: type) -> tuple[tuple[str, str], ...]:
    """An attrs class's fields as (attribute, init alias) pairs; () for any other class."""
    if not attrs.has(kind):
        return ()
    return tuple((field.name, field.alias or field.name) for field in attrs.fields(kind))
