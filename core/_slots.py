"""Filling a frozen slotted record's slots directly, for the per-delta hot path.

The reducers are pure, so every model delta makes a new partial response and
a new state. attrs' frozen `__init__` (keyword parsing, then one bound
`object.__setattr__` call per field) was most of the cost of a delta; calling
each slot's descriptor directly costs about a third of that. Only for records
without validators, converters or defaults that matter: the builders copy
every field themselves. `setters` returns one setter per field in declaration
order, so a builder that unpacks them fails at import if a field is added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

Setter = Callable[[Any, Any], None]

#: A record with no slot filled yet: the builder must fill every one.
blank = object.__new__


def setters(cls: type) -> tuple[Setter, ...]:
    """One slot setter per field of the frozen slotted attrs class `cls`, in field order."""
    return tuple(vars(cls)[field.name].__set__ for field in attrs.fields(cls))
