"""Reading a journal again: the one fold of a session's steps through `step`.

For toolreel's own layers: the shell's `replay`, `verify`, resuming a session and
re-running a recording all read a journal this way (adapters/_fold.py).

- `fold_journal(...)`: a `JournalFold`, which gives each step with the effects
  folding it produced now, and says where it stopped.
- `AgentSessionBuilder`: an agent run's `AgentSession`, built as a fold goes.
- `request_form`: a recorded or replayed model request, in the form `diff_requests`
  compares.
- `current`: a config read from an older journal (bfd8293's agent runs), as a plain
  `LoopConfig`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._fold import JournalFold, fold_journal
from ._legacy import current

if TYPE_CHECKING:
    from ._request_diff import request_form
    from ._session import AgentSessionBuilder

#: Imported at first use: resuming a session folds its journal without them.
_LAZY = {"AgentSessionBuilder": "._session", "request_form": "._request_diff"}

__all__ = ["AgentSessionBuilder", "JournalFold", "current", "fold_journal", "request_form"]


def __getattr__(name: str) -> Any:
    """A `_LAZY` name, imported when first asked for (then kept as a module global)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name], __package__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every name, the lazy ones included."""
    return sorted({*globals(), *__all__})
