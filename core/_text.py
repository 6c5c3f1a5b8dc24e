"""Text a session can hold: valid Unicode, which JSON (and so every journal) writes.

A Python str may hold a lone surrogate (a code point U+D800..U+DFFF, which
valid text holds only as half of a pair in UTF-16, never on its own): JSON's
`"\\ud800"` escape decodes to one, and so does each undecodable byte of a
command line, a file name or a subprocess's output read with `surrogateescape`.
No UTF-8 encoder writes it, so no journal can store it. What the caller gives
is refused (`checked_text`, a validator); what a model, a tool or a hook sends
is kept with U+FFFD in its place (`valid_text`, through `well_formed` in
core/_wellformed.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._errors import ConfigError

_LONE = re.compile("[\ud800-\udfff]")
_EXCERPT = 20


def surrogate_at(text: str) -> int | None:
    """Where the first surrogate code point of `text` is, or None (ASCII text at once).

    Valid text has none: a str holds a pair's character as one code point.
    """
    if text.isascii():
        return None
    found = _LONE.search(text)
    return None if found is None else found.start()


def valid_text(text: str) -> str:
    """`text` with each lone surrogate U+FFFD (`text` itself when it has none)."""
    if surrogate_at(text) is None:
        return text
    # UTF-16 with surrogatepass joins the pairs; decoding replaces what stays alone
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def checked_text(field: str, *, optional: bool = False) -> Callable[[Any, Any, Any], None]:
    """An attrs validator: a str (or None, if `optional`) with no lone surrogate, else
    `ConfigError` naming `field` and showing the text around the first one."""

    def check(_: object, __: object, value: Any) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str):
            raise ConfigError(field, value, "a str" + (" or None" if optional else ""))
        at = surrogate_at(value)
        if at is not None:
            raise ConfigError(
                field,
                _excerpt(value, at),
                f"text without lone surrogates ({value[at]!a} at character {at} is one: an "
                "undecodable byte read with surrogateescape, or a JSON escape of half a "
                "pair); decode bytes with errors='replace'",
            )

    return check


def _excerpt(text: str, at: int) -> str:
    """The text around position `at` (the whole of a short text)."""
    start, end = max(0, at - _EXCERPT), at + _EXCERPT
    return ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
