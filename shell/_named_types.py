"""UUID and Decimal known by name, so that their modules load with the program's types.

A tool may take or return a `uuid.UUID` or a `decimal.Decimal`: the schema the
model reads, the argument checks and a result's JSON all know both. Keyed by
module and name instead of by class, those tables need neither module until a
program's own annotation or value uses it, which means the program imported it.
On Linux `uuid` imports `platform`; with `decimal` they were ~4 ms of
`import toolreel.shell` (issue 22; tests/bench/bench_import.py).
"""

from __future__ import annotations

import sys

__all__ = ["DECIMAL", "UUID", "instance_of", "name_of"]

#: A class as its module and qualified name.
Name = tuple[str, str]

UUID: Name = ("uuid", "UUID")
DECIMAL: Name = ("decimal", "Decimal")


def name_of(kind: object) -> Name:
    """A class's module and qualified name; ("", "") for what is not a class."""
    return (kind.__module__, kind.__qualname__) if isinstance(kind, type) else ("", "")


def instance_of(value: object, *names: Name) -> bool:
    """Whether `value` is an instance of one of the named classes (a loaded module's)."""
    for module, name in names:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(value, cls):
            return True
    return False
