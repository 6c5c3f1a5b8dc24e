"""What is wrong with a value the model sent, in the words it reads back.

A problem is a pair (path, what): the path is a JSON path from the value
(`$` the value itself, `$.lines[0].amount` a part of it, `$['a b']` a key
that is no name), the text says what was expected and what came
("expected an integer, got 2.5"). A tool's argument error puts them as
"what @ path" after the argument's name; an output's as "path: what".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

Problem = tuple[str, str]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Mismatch(ValueError):
    """A value that is not of its declared type: the problems, as (path, what)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        """Keep the problems; the message lists them as a tool's argument error does."""
        self.problems = tuple(problems)
        super().__init__("; ".join(at(path, what) for path, what in self.problems))


def wrong(what: str, value: Any) -> Mismatch:
    """The value itself is wrong: `what` was expected, `value` came."""
    return Mismatch([("$", f"expected {what}, got {shown(value)}")])


def shown(value: Any) -> str:
    """A value as the model reads it in a problem: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def join(path: str, part: str | int) -> str:
    """The path of item `part` (an index, a field, a key) of the value at `path`."""
    if isinstance(part, int):
        return f"{path}[{part}]"
    if _NAME.fullmatch(part):
        return f"{path}.{part}"
    escaped = part.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{escaped}']"


def under(path: str, problems: Sequence[Problem]) -> list[Problem]:
    """Problems of a part, their paths (from `$`, the part) put under `path`."""
    return [(path + inner.removeprefix("$"), what) for inner, what in problems]


def at(path: str, what: str) -> str:
    """A problem as a tool argument's error says it: "what", or "what @ $.where"."""
    return what if path == "$" else f"{what} @ {path}"
