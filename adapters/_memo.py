"""IdentityMemo: a value computed once per live object, forgotten when the object dies.

Requests repeat the whole history, but the history is made of the same frozen
round records from one call to the next; encoding each once keeps the cost
of a request flat instead of growing with the session. Keys are held weakly
and compared by identity (hashing a record would cost as much as encoding it).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """Values by the identity of live keys."""

    def __init__(self) -> None:
        """Empty."""
        self._values: dict[int, tuple[weakref.ref[K], V]] = {}

    def __len__(self) -> int:
        """How many keys are remembered."""
        return len(self._values)

    def peek(self, key: K) -> V | None:
        """The value for `key` if it was computed, else None."""
        found = self._values.get(id(key))
        if found is not None and found[0]() is key:
            return found[1]
        return None

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        """The value for `key`, computed on first use."""
        ident = id(key)
        found = self._values.get(ident)
        if found is not None and found[0]() is key:
            return found[1]
        value = compute(key)
        values = self._values
        self._values[ident] = (weakref.ref(key, lambda _: values.pop(ident, None)), value)
        return value
