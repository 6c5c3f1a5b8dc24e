"""Validators for the shell's option records: each refusal is one `ConfigError`.

attrs validators (`(instance, attribute, value)`), so they run when a record
is built, on `attrs.evolve`, and (for mutable records) on assignment. Every
message names the field, the value given and what the field accepts; a value
of the wrong type says which type it got, so `max_tool_iterations="5"` reads
as a type mistake rather than a range one.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit

import attrs

from toolreel.core import ConfigError

Check = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def kind(value: object) -> str:
    """`a str`, `a float`, ...: the type a value has, for messages."""
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _is_int(value: object) -> bool:
    """An int that is not a bool (True is not a count)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    """A finite int or float that is not a bool."""
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)  # type: ignore[arg-type]


_SHORT = reprlib.Repr()  # keyword arguments need Python 3.12
_SHORT.maxstring = _SHORT.maxother = 60


class _Shown:
    """A value as a message shows it: its repr, cut short (a Tool's repr runs to lines)."""

    def __init__(self, value: object) -> None:
        """Keep the value."""
        self.value = value

    def __repr__(self) -> str:
        """The value's repr, or its type and name when that repr is long."""
        name = getattr(self.value, "name", None)
        if isinstance(name, str) and len(repr(self.value)) > 80:
            return f"<{type(self.value).__name__} {name!r}>"
        return _SHORT.repr(self.value)


def refuse(field: str, value: object, allowed: str) -> NoReturn:
    """Raise the one error a check raises: the field, the value (shown short), what is allowed."""
    error = ConfigError(field, _Shown(value), allowed)
    error.value = value
    raise error


def _refuse(attribute: attrs.Attribute[Any], value: object, allowed: str) -> NoReturn:
    """`refuse`, naming the attribute's field."""
    refuse(attribute.name, value, allowed)


def int_at_least(minimum: int, *, optional: bool = False) -> Check:
    """An int >= `minimum` (or None when `optional`); a bool or a str is a wrong type."""
    allowed = f"an int >= {minimum}" + (" or None" if optional else "")

    def check(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not _is_int(value):
            _refuse(attribute, value, f"{allowed}, not {kind(value)}")
        if value < minimum:
            _refuse(attribute, value, allowed)

    return check


def number_in(
    low: float, high: float = math.inf, *, low_open: bool = False, optional: bool = False
) -> Check:
    """A finite number in [low, high] ((low, high] when `low_open`), or None when `optional`."""
    if high == math.inf:
        bounds = f"> {low:g}" if low_open else f">= {low:g}"
    else:
        bounds = f"in {'(' if low_open else '['}{low:g}, {high:g}]"
    allowed = f"a finite number {bounds}" + (" or None" if optional else "")

    def check(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not _is_number(value):
            what = f"not {kind(value)}" if not isinstance(value, float) else "not infinity or NaN"
            _refuse(attribute, value, f"{allowed}, {what}")
        if value > high or value < low or (low_open and value == low):
            _refuse(attribute, value, allowed)

    return check


def instance_of(kinds: type | tuple[type, ...], label: str, *, optional: bool = False) -> Check:
    """An instance of `kinds` (described as `label`), or None when `optional`."""
    allowed = label + (" or None" if optional else "")

    def check(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not isinstance(value, kinds):
            _refuse(attribute, value, f"{allowed}, not {kind(value)}")

    return check


def one_of(choices: Collection[Any], label: str) -> Check:
    """One of `choices` (compared with ==, so unhashable values are refused, not a TypeError)."""
    listed = tuple(choices)

    def check(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in listed:
            _refuse(attribute, value, label)

    return check


def callable_or_none(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None or something callable."""
    if value is not None and not callable(value):
        _refuse(attribute, value, f"a callable or None, not {kind(value)}")


def a_callable(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Something callable."""
    if not callable(value):
        _refuse(attribute, value, f"a callable, not {kind(value)}")


def name(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A non-empty str."""
    if not isinstance(value, str) or not value.strip():
        _refuse(attribute, value, "a non-empty str")


def optional_id(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None, or a non-empty str of UTF-8 text without control characters (it names files
    and rows)."""
    if value is None:
        return
    if not isinstance(value, str):
        _refuse(attribute, value, f"a non-empty str or None, not {kind(value)}")
    if not value or any(ord(char) < 32 or ord(char) == 127 for char in value):
        _refuse(attribute, value, "a non-empty str without control characters, or None")
    try:
        value.encode()
    except UnicodeEncodeError:  # a lone surrogate: an undecodable byte of a command line
        _refuse(attribute, value, "valid Unicode text (it holds a lone surrogate), or None")


def http_url(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None, or an http:// or https:// URL with a host."""
    if value is None:
        return
    allowed = "an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434/v1, or None"
    if not isinstance(value, str):
        _refuse(attribute, value, f"{allowed}, not {kind(value)}")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        _refuse(attribute, value, allowed)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        _refuse(attribute, value, allowed)


def sequence_of(item_ok: Callable[[Any], bool], label: str) -> Check:
    """A list or tuple whose items pass `item_ok`; a bad item is named by its index."""

    def check(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            _refuse(attribute, value, f"a list or tuple of {label}, not {kind(value)}")
        for index, item in enumerate(value):
            if not item_ok(item):
                refuse(f"{attribute.name}[{index}]", item, f"{label}, not {kind(item)}")

    return check


def is_function(value: object) -> bool:
    """Callable and not a class (a class is callable, but it is not a tool or a hook)."""
    return callable(value) and not isinstance(value, type)


def mapping(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A mapping (a dict)."""
    if not isinstance(value, Mapping):
        _refuse(attribute, value, f"a mapping, not {kind(value)}")


__all__ = [
    "a_callable",
    "callable_or_none",
    "http_url",
    "instance_of",
    "int_at_least",
    "is_function",
    "kind",
    "mapping",
    "name",
    "number_in",
    "one_of",
    "optional_id",
    "refuse",
    "sequence_of",
]
