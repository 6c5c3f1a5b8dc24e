"""Retried model calls, as a session's transcript shows them (pure).

A model call that failed and is tried again is a step whose event is the
`ModelCallFailed` and whose effects start the backoff timer (both reducers):
its token (`retry:<scope>:<iteration>:<retry>`, core/_retry.py) says which
turn (a chat session's) or attempt (an agent run's), which model call and
which retry. A failed call that fell back to another model (core/_fallback.py)
is a step whose effects tell `ModelChanged` and make the call again: it joins
as a retry naming the model asked next. Session builders (adapters/_session.py)
collect them per turn or per run; `render_transcript` shows them where they happened.
"""

from __future__ import annotations

import attrs

from toolreel.core import CallModel, Emit, ModelCallFailed, StartTimer
from toolreel.core.notices import ModelChanged
from toolreel.core.record import Value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Retry(Value):
    """Model call `iteration` of turn (or attempt) `scope` failed; retry `retry` after `seconds`."""

    scope: int
    iteration: int
    retry: int
    seconds: float
    message: str
    status: int | None = None
    #: The model the call fell back to (None: the same model, after `seconds`).
    model: str | None = None


def retries_of(event: ModelCallFailed, effects: tuple[object, ...]) -> list[Retry]:
    """The retry a failed call's step scheduled, or the fallback it made (none: it gave up)."""
    found = []
    changed = [e.notice for e in effects if isinstance(e, Emit) and type(e.notice) is ModelChanged]
    if changed:
        calls = [effect for effect in effects if isinstance(effect, CallModel)]
        iteration = calls[-1].iteration if calls else 0
        return [
            Retry(
                scope=0,  # (a fallback is a chat's: agent runs have none)
                iteration=iteration,
                retry=0,
                seconds=0.0,
                message=event.message,
                status=event.status,
                model=changed[-1].model,
            )
        ]
    for effect in effects:
        if isinstance(effect, StartTimer) and effect.token.startswith("retry:"):
            scope, iteration, retry = (int(part) for part in effect.token.split(":")[1:4])
            found.append(
                Retry(
                    scope=scope,
                    iteration=iteration,
                    retry=retry,
                    seconds=effect.seconds,
                    message=event.message,
                    status=event.status,
                )
            )
    return found


__all__ = ["Retry", "retries_of"]
