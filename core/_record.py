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
from collections.abc import Callable
from typing import Any

import attrs

__all__ = ["Record", "Value"]

#: A field that takes part in equality: its name and its key (None: the value itself).
_Compared = tuple[tuple[str, Callable[[Any], Any] | None], ...]


class Record:
    """The base of toolreel's attrs classes: their shared `__repr__`."""

    __slots__ = ()

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        """`Name(field=value, ...)`, as attrs' generated `__repr__` prints it."""
        cls = type(self)
        fields: tuple[Any, ...] = getattr(cls, "__attrs_attrs__", ())
        shown = ", ".join(
            f"{a.name}={_shown(a.repr, getattr(self, a.name, attrs.NOTHING))}"
            for a in fields
            if a.repr is not False
        )
        return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({shown})"


class Value(Record):
    """A record equal to another of its class with equal fields, and hashed by them."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        """Field by field, as attrs' generated `__eq__` compares."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        for name, key in _compared(self.__class__):
            mine, theirs = getattr(self, name), getattr(other, name)
            if key is not None:
                mine, theirs = key(mine), key(theirs)
            if not mine == theirs:
                return False
        return True

    def __hash__(self) -> int:
        """The hash of the class and the hashed fields."""
        cls = self.__class__
        return hash((cls, *[_value(self, name, key) for name, key in _hashed(cls)]))


def _value(record: object, name: str, key: Callable[[Any], Any] | None) -> Any:
    """A field's value, or its key when it has one."""
    value = getattr(record, name)
    return value if key is None else key(value)


#: Each class's compared and hashed fields, read from its attrs fields once.
_COMPARED: dict[type, _Compared] = {}
_HASHED: dict[type, _Compared] = {}


def _compared(cls: type) -> _Compared:
    """The fields of `cls` that take part in equality, with their keys."""
    found = _COMPARED.get(cls)
    if found is None:
        found = _COMPARED[cls] = tuple((a.name, a.eq_key) for a in _fields(cls) if a.eq)
    return found


def _hashed(cls: type) -> _Compared:
    """The fields of `cls` its hash is made of: the compared ones, unless told otherwise."""
    found = _HASHED.get(cls)
    if found is None:
        found = _HASHED[cls] = tuple(
            (a.name, a.eq_key) for a in _fields(cls) if (a.eq if a.hash is None else a.hash)
        )
    return found


def _fields(cls: type) -> tuple[Any, ...]:
    """The attrs fields of `cls`."""
    fields: tuple[Any, ...] = getattr(cls, "__attrs_attrs__", ())
    return fields


def _shown(how: Any, value: object) -> str:
    """A field's value as its declaration asks: `repr`, or its own callable."""
    return repr(value) if how is True else str(how(value))
