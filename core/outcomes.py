"""Outcomes: how a turn ended, as its one `Finish` effect says (`Finish.outcome`).

`Outcome` is a closed union, one member per way a turn ends: `Completed` (an
answer), `Produced` (a validated structured output), `Capped` (the iteration
cap), `Failed` (with a `FailureCode`), and three whose classes live with what
caused them: `Cancelled` (the caller's event, `toolreel.core`), `Blocked` (a
hook's decision, `toolreel.core.hooks`) and `OverBudget` (`toolreel.core.budget`).
`Finish.reason` sums it up as a `FinishReason`. A structured output's turn also
reports its `Attempts`, each failed attempt's problems an `AttemptErrors`.
"""

from __future__ import annotations

from ._effects import (
    Attempts,
    Capped,
    Completed,
    Failed,
    FailureCode,
    FinishReason,
    Outcome,
    Produced,
)
from ._records import AttemptErrors

__all__ = [
    "AttemptErrors",
    "Attempts",
    "Capped",
    "Completed",
    "Failed",
    "FailureCode",
    "FinishReason",
    "Outcome",
    "Produced",
]
