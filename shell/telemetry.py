"""The observer seam: how logs and traces learn what a run does (shell/_telemetry.py).

`add_observer(observer)` registers a function that is given each turn's
`TurnInfo` as the turn starts and returns a `Turn`: the callbacks told when a
model call and a tool call start and end (with a `ModelOutcome`, a `ToolOutcome`),
when a retry waits, when a round is complete, and how the turn ended (`TurnEnd`).
`toolreel.otel.instrument()` is one such observer; `remove_observer` takes one
away. What an observer raises is logged and never breaks a run.
"""

from __future__ import annotations

from ._telemetry import (
    ModelOutcome,
    Observer,
    ToolOutcome,
    Turn,
    TurnEnd,
    TurnInfo,
    add_observer,
    remove_observer,
)

__all__ = [
    "ModelOutcome",
    "Observer",
    "ToolOutcome",
    "Turn",
    "TurnEnd",
    "TurnInfo",
    "add_observer",
    "remove_observer",
]
