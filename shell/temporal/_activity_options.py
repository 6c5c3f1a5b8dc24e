"""How the workflow starts an effect's work: activity options, background tasks, failures.

Used by `SessionWorkflow` (shell/temporal/_workflow.py): plain functions of their
arguments, so they are as deterministic inside Temporal's sandbox as the workflow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

#: Margin added to a tool's own timeout (which the worker enforces) for the activity's.
MARGIN = timedelta(seconds=30)
#: Attempts of an idempotent tool's, a hook's, a reflection's or a validation's activity.
ATTEMPTS = 3


def activity_options(
    key: str, timeout: timedelta, attempts: int, heartbeat_seconds: float
) -> dict[str, Any]:
    """An effect's activity options: its id (the effect's digest), timeouts, heartbeat, retries."""
    return {
        "activity_id": key,
        "start_to_close_timeout": timeout,
        "heartbeat_timeout": timedelta(seconds=heartbeat_seconds),
        "retry_policy": RetryPolicy(
            maximum_attempts=attempts, initial_interval=timedelta(milliseconds=200)
        ),
    }


def spawn(tasks: list[asyncio.Task[None]], work: Awaitable[None]) -> list[asyncio.Task[None]]:
    """The tasks still running, and `work` started in the background beside them."""
    return [*(task for task in tasks if not task.done()), asyncio.ensure_future(work)]


def cause(exc: ActivityError) -> str:
    """The innermost reason an activity failed (a timeout, the worker's error)."""
    inner: BaseException = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    return str(inner) or type(inner).__name__
