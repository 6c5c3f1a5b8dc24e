"""The methods every record toolreel ships shares, instead of one compiled per class.

attrs writes and compiles a `__repr__`, an `__eq__` and a `__hash__` for each
class it builds. For the ~130 records `import toolreel.shell` defines, that was
~23 ms of the import (issue 22: `import toolreel.shell` <= 1.5x `import httpx2`;
tests/bench/bench_import.py). These bases read the class's attrs fields when
asked instead, and do what attrs' own methods would:

- `Record.__repr__` prints `Name(field=value, ...)`, without the fields declared
  `repr=False` and through a field's own `repr=` callable (a secret stays hidden),
  and `...` for a record met again inside itself;
- `Value` adds equality and a hash over the fields that take part in them (all
  but those declared `eq=False`; through a field's `eq=` key), between instances
  of the same class only.

A record is declared `@attrs.frozen(repr=False, eq=False)` on `class Name(Value)`:
`eq=False` tells attrs only not to write its own methods; `Value`'s compare.
A record compared by identity, or a mutable one (`attrs.define`, attrs' own
equality and no hash), derives from `Record` alone. tests/test_shared_methods.py pins
that every class is declared one way or the other, and that both print and
compare as attrs' generated methods do.
"""

from __future__ import annotations

import reprlib
from typing import Any

import attrs

__all__ = ["Record", "Value"]


class Record:
    """The base of toolreel's attrs classes: their shared `__repr__`."""

    __slots__ = ()

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        """`Name(field=value, ...)`, as attrs' generated `__repr__` prints it."""
        shown = ", ".join(
            f"{a.name}={_shown(a.repr, getattr(self, a.name, attrs.NOTHING))}"
            for a in _fields(self)
            if a.repr is not False
        )
        return f"{type(self).__qualname__.rsplit('>.', 1)[-1]}({shown})"


class Value(Record):
    """A record equal to another of its class with equal fields, and hashed by them."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        """Field by field, as attrs' generated `__eq__` compares."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        for field in _fields(self):
            if field.eq and not _value(self, field) == _value(other, field):
                return False
        return True

    def __hash__(self) -> int:
        """The hash of the class and the hashed fields (the compared ones, unless told)."""
        hashed = [
            _value(self, field)
            for field in _fields(self)
            if (field.eq if field.hash is None else field.hash)
        ]
        return hash((self.__class__, *hashed))


def _value(record: object, field: Any) -> Any:
    """A field's value, or its key when it declares one (`eq=key`)."""
    value = getattr(record, field.name)
    return value if field.eq_key is None else field.eq_key(value)


def _fields(record: object) -> tuple[Any, ...]:
    """The attrs fields of the record's class."""
    cls: Any = record.__class__
    fields: tuple[Any, ...] = cls.__attrs_attrs__
    return fields


def _shown(how: Any, value: object) -> str:
    """A field's value as its declaration asks: `repr`, or its own callable."""
    return repr(value) if how is True else str(how(value))
