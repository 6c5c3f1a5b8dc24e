"""Whether a call's arguments are a JSON object, told in a fixed vocabulary.

The text of an invalid-arguments result goes to the model and into the journal,
so it must be the same on every interpreter: CPython's `json` messages change
between versions (3.13 added new ones) and its nesting limit follows the
process-wide recursion limit. So `json` only reads arguments that cannot nest
deeper than `MAX_DEPTH` levels (counting their brackets); every problem is
described by the small scanner below, which also decides alone when the
parser must not or could not read the arguments.

Vocabulary (N is the 0-based character offset):
"Expecting value", "Expecting property name", "Expecting ':'",
"Expecting ',' or ']'", "Expecting ',' or '}'", "Unterminated string starting",
"Invalid escape", "Invalid control character", "Extra data", each "at char N";
"Nesting deeper than 100 levels at char N"; "expected an object, got TYPE".
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._text import valid_text

PROBLEM = "arguments are not valid JSON: "
#: Deeper arguments are refused before any parser recurses into them.
MAX_DEPTH = 100

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
#: Python's json also reads these words (the core accepts what it always accepted).
_WORDS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_ESCAPES = frozenset('"\\/bfnrt')
#: A JSON escape of a surrogate code point (half a pair; paired ones decode to one character).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def arguments_object(arguments: str) -> dict[str, Any] | None:
    """The arguments text as a dict, or None when it is not a JSON object (one parse for all).

    A string escaping half a surrogate pair (`"\\ud800"`, valid JSON) reads with
    U+FFFD in its place, as the model's own text does (core/_wellformed.py): what
    is shown, hooked or sent on from the arguments is valid Unicode text.
    """
    if arguments.count("[") + arguments.count("{") > MAX_DEPTH and _scanned(arguments):
        return None  # not an object, and perhaps too deep for the parser
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if _SURROGATE_ESCAPE.search(arguments) is None:
        return value
    valid: dict[str, Any] = _valid(value)
    return valid


def _valid(value: Any) -> Any:
    """A parsed JSON value with every string valid text (keys too)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid(item) for item in value]
    if isinstance(value, dict):
        return {valid_text(key): _valid(item) for key, item in value.items()}
    return value


def arguments_error(arguments: str) -> str | None:
    """Why `arguments` is not a JSON object (for the model to read), or None when it is."""
    if arguments.count("[") + arguments.count("{") > MAX_DEPTH:
        return _scanned(arguments)  # it may nest too deep: never hand it to the parser
    try:
        value = json.loads(arguments)
    except ValueError:
        return PROBLEM + (syntax_problem(arguments) or "rejected")
    except RecursionError:  # the host's recursion limit is lower than this nesting
        return _scanned(arguments)
    if not isinstance(value, dict):
        return f"{PROBLEM}expected an object, got {type(value).__name__}"
    return None


def _scanned(arguments: str) -> str | None:
    """The scanner's verdict alone, for arguments the parser must not (or could not) read."""
    problem = syntax_problem(arguments)
    if problem is not None:
        return PROBLEM + problem
    top = arguments[_skip(arguments, 0)]
    if top == "{":
        return None
    return f"{PROBLEM}expected an object, got {'list' if top == '[' else 'str'}"


def syntax_problem(text: str) -> str | None:
    """The first syntax problem of `text` as JSON, or None: an explicit stack, no recursion."""
    stack: list[str] = []  # the closer each open container awaits
    pos = _skip(text, 0)
    want = "value"
    while True:
        if want == "key":
            if not text.startswith('"', pos):
                return f"Expecting property name at char {pos}"
            pos, problem = _string_end(text, pos)
            if problem is not None:
                return problem
            pos = _skip(text, pos)
            if not text.startswith(":", pos):
                return f"Expecting ':' at char {pos}"
            pos, want = _skip(text, pos + 1), "value"
        elif want == "value" and text[pos : pos + 1] in ("[", "{"):
            if len(stack) == MAX_DEPTH:
                return f"Nesting deeper than {MAX_DEPTH} levels at char {pos}"
            closer = "]" if text[pos] == "[" else "}"
            pos = _skip(text, pos + 1)
            if text.startswith(closer, pos):
                pos, want = pos + 1, "after"
            else:
                stack.append(closer)
                want = "value" if closer == "]" else "key"
        elif want == "value":
            pos, problem = _scalar_end(text, pos)
            if problem is not None:
                return problem
            want = "after"
        else:
            pos = _skip(text, pos)
            if not stack:
                return None if pos == len(text) else f"Extra data at char {pos}"
            if text.startswith(",", pos):
                pos = _skip(text, pos + 1)
                want = "value" if stack[-1] == "]" else "key"
            elif text.startswith(stack[-1], pos):
                stack.pop()
                pos += 1
            else:
                return f"Expecting ',' or '{stack[-1]}' at char {pos}"


def _skip(text: str, pos: int) -> int:
    """The position after any JSON whitespace at `pos`."""
    match = _WHITESPACE.match(text, pos)
    return pos if match is None else match.end()


def _scalar_end(text: str, pos: int) -> tuple[int, str | None]:
    """Where the string, number or word at `pos` ends, or the problem with it."""
    if text.startswith('"', pos):
        return _string_end(text, pos)
    for word in _WORDS:
        if text.startswith(word, pos):
            return pos + len(word), None
    number = _NUMBER.match(text, pos)
    if number is not None:
        return number.end(), None
    return pos, f"Expecting value at char {pos}"


def _string_end(text: str, start: int) -> tuple[int, str | None]:
    """Where the string opening at `start` ends, or the problem with it."""
    pos = start + 1
    while True:
        match = _PLAIN.match(text, pos)
        pos = pos if match is None else match.end()
        char = text[pos : pos + 1]
        if char == '"':
            return pos + 1, None
        if not char:
            return pos, f"Unterminated string starting at char {start}"
        if char != "\\":
            return pos, f"Invalid control character at char {pos}"
        escape = text[pos + 1 : pos + 2]
        if escape == "u" and _HEX4.match(text, pos + 2):
            pos += 6
        elif escape in _ESCAPES and escape:
            pos += 2
        elif not escape:
            return pos, f"Unterminated string starting at char {start}"
        else:
            return pos, f"Invalid escape at char {pos}"
