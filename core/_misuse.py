"""The caller's misuse of a turn that waits on it, worded once: `misuse(phase, event, waiting)`.

Two events come from the caller about one call: a result in manual mode
(`ToolFinished`) and a human's decision (`Approved`, `Denied`). For a call that
awaits none, `step` raises a `StepError` (core/_step.py, rules 10 and 15). A
shell that refuses such an event before feeding it (a Client answers its caller
at once, not from the turn's task) asks here instead, so the caller reads the
same words whichever refused it, and the shell's own error classes carry them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from ._events import Approved, Denied, ToolFinished
from ._round import no_decision_awaited, no_result_awaited
from ._state import StepError


def misuse(
    phase: enum.Enum, event: ToolFinished | Approved | Denied, waiting: Iterable[str]
) -> StepError | None:
    """The `StepError` `event` is in `phase` while the calls `waiting` await one; None if fine.

    `waiting`: the ids of the calls that await a result (for a `ToolFinished`),
    or a decision (for `Approved`/`Denied`), in call order.
    """
    ids = list(waiting)
    if isinstance(event, ToolFinished):
        detail = None if event.call_id in ids else no_result_awaited(event.call_id, ids)
    else:
        detail = no_decision_awaited(event.call_id, ids)
    return None if detail is None else StepError(phase, event, detail)
