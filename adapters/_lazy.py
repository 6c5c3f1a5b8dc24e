"""Names a package imports at first use (PEP 562), so that importing it stays cheap.

A package lists the names a program may never touch, with the module each comes
from (relative to the package); `lazy_names` makes the module `__getattr__` that
imports one when it is first asked for and keeps it as a module global. The
package still imports them under `TYPE_CHECKING`, so type checkers see them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def imported(package: str, where: str) -> Any:
    """The object `where` names, "module:attribute" (the module relative to `package`)."""
    module, _, attribute = where.partition(":")
    return getattr(import_module(module, package), attribute)


def lazy_names(namespace: dict[str, Any], table: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of the module whose globals are `namespace`: a name of `table`
    imported from its module when first asked for, then kept; any other an AttributeError."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        """A lazy name, imported and kept; else no such attribute."""
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = imported(package, f"{table[name]}:{name}")
        namespace[name] = value
        return value

    return __getattr__
