"""The bases every toolreel record derives from, for the packages above the core.

`Record` gives attrs classes one shared `__repr__`, and `Value` adds one shared
equality and hash, so that attrs compiles neither for each class (core/_record.py
says why). Adapters and shell declare their records on them as the core does:
`@attrs.frozen(repr=False, eq=False)` on `class Name(Value)`.
"""

from __future__ import annotations

from ._record import Record, Value

__all__ = ["Record", "Value"]
