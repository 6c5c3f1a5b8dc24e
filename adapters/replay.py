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

from ._fold import JournalFold, fold_journal
from ._legacy import current
from ._request_diff import request_form
from ._session import AgentSessionBuilder

__all__ = ["AgentSessionBuilder", "JournalFold", "current", "fold_journal", "request_form"]
