"""Retrying a failed model call: the backoff decision and its timer.

A retryable `ModelCallFailed` is retried after `RetryPolicy.delay` seconds
until `max_retries` retries were made; a fatal one is not. The timer's token
names the call it repeats, so a stale `TimerFired` is caught as misuse.
"""

from __future__ import annotations

import attrs

from ._config import RetryPolicy
from ._effects import StartTimer
from ._events import ModelCallFailed
from ._record import Value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RetryTimer(Value):
    """The backoff timer before retry `retry` (1-based) of model call `iteration`.

    `scope` is the turn's (`Turn.scope`: its number, advanced by each further
    attempt of a structured output). On the wire (in `StartTimer` and
    `TimerFired`) it is the text `token`.
    """

    scope: int
    iteration: int
    retry: int
    #: The model retried (core/_fallback.py): named in the token past the first only.
    model: int = 0

    @property
    def token(self) -> str:
        """The timer's token: `retry:<scope>:<iteration>:<retry>`, `:<model>` after a fallback."""
        token = f"retry:{self.scope}:{self.iteration}:{self.retry}"
        return f"{token}:{self.model}" if self.model else token

    def awaited(self) -> str:
        """The misuse message's detail when another timer fires."""
        return f"awaiting timer {self.token!r}"


def backoff(
    policy: RetryPolicy, retries: int, failure: ModelCallFailed, timer: RetryTimer
) -> StartTimer | None:
    """The timer to wait before retrying after `retries` retries, or None: give up now."""
    if not failure.retryable or retries >= policy.max_retries:
        return None
    return StartTimer(token=timer.token, seconds=policy.delay(retries, failure.retry_after))
