"""A runner's journaling: the steps it keeps and when they become durable.

The runner (shell/_runner.py) keeps every step in a `StepLog` as it reduces it,
and puts `FLUSH` (save, then start the step's tools) last in one that must be
durable; the `StepLog` saves the steps kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import attrs

from toolreel.adapters import Journal, Step
from toolreel.core import Effect, Event
from toolreel.core.record import Value

if TYPE_CHECKING:
    import anyio.to_thread


@attrs.frozen(repr=False, eq=False)
class Flush(Value):
    """The runner's own effect, last in a step that must be durable: save, then start tools."""


FLUSH = Flush()


class StepLog:
    """The steps of one session not yet saved, and the number of the last one."""

    def __init__(self, journal: Journal | None, session_id: str, *, inline: bool = False) -> None:
        """A log saving to `journal` (None: nothing is kept).

        `inline`: the journal's `append` does no I/O (one made in memory, not
        the caller's), so it runs in the event loop rather than a worker thread.
        """
        self.journal = journal
        self.session_id = session_id
        self.inline = inline
        self.seq = 0
        self._unsaved: list[Step] = []

    def record(self, event: Event, effects: tuple[Effect, ...]) -> None:
        """Keep a step under the next number."""
        self.seq += 1
        self._unsaved.append(Step(seq=self.seq, event=event, effects=effects))

    async def save(self) -> None:
        """Make the unsaved steps durable (forget them when nothing journals the session)."""
        steps, self._unsaved = self._unsaved, []
        if self.journal is None or not steps:
            return
        if self.inline:
            self.journal.append(self.session_id, steps)
            return
        with anyio.CancelScope(shield=True):  # a cancel never loses journaled steps
            await anyio.to_thread.run_sync(self.journal.append, self.session_id, steps)
