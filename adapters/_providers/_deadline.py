"""The clock of one model call: its total deadline and its idle limit.

`total` bounds the whole call however the server trickles bytes; `idle` bounds
the wait for content (the caller says when content came: a keep-alive comment
is not content). Every wait on the network — the send, each chunk of a stream,
a whole body — goes through `within`, which raises `Expired` naming the limit
that ran out first.

On asyncio one lazily re-armed loop timer does it (`LoopDeadline`, _loop_deadline.py,
imported by the first call on an asyncio loop: `import toolreel.shell` does not import
asyncio, the program's event loop does). Other event loops (trio) get `ScopedDeadline`:
a cancel scope per wait.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import anyio
import sniffio

T = TypeVar("T")


class Expired(Exception):
    """A call's total deadline or idle limit passed (turned into a retryable failure)."""


class ScopedDeadline:
    """Both limits, with a cancel scope around each wait (any event loop anyio runs on)."""

    def __init__(self, total: float, idle: float) -> None:
        """Both limits start now."""
        self.total = total
        self.idle = idle
        now = self.now()
        self.total_at = now + total
        self.idle_at = now + idle

    def now(self) -> float:
        """The event loop's clock."""
        return anyio.current_time()

    def content(self) -> None:
        """Content arrived: the idle limit starts again."""
        self.idle_at = self.now() + self.idle

    def limit(self, *, idle: bool) -> float:
        """When the wait at hand must end: the nearer limit (total alone if idle does not count)."""
        return self.idle_at if idle and self.idle_at < self.total_at else self.total_at

    async def within(self, work: Awaitable[T], *, idle: bool) -> T:
        """`work`'s result, or `Expired` naming the limit that ran out first."""
        with anyio.move_on_after(max(0.0, self.limit(idle=idle) - self.now())):
            return await work
        raise Expired(self.why(idle=idle))

    def close(self) -> None:
        """The call is over (nothing to undo: each scope ended with its wait)."""

    def why(self, *, idle: bool) -> str:
        """Which limit ran out (the idle one if it was the nearer)."""
        if idle and self.idle_at < self.total_at:
            return (
                f"no content from the model for {self.idle:g} s (idle_timeout); "
                "keep-alive comments do not count"
            )
        return f"model call exceeded its total deadline (call_timeout) of {self.total:g} s"


def call_deadline(total: float, idle: float) -> ScopedDeadline:
    """The clock for a call starting now: one timer on asyncio, a scope per wait elsewhere."""
    if sniffio.current_async_library() == "asyncio":
        from ._loop_deadline import LoopDeadline  # noqa: PLC0415 - asyncio, which runs by now

        return LoopDeadline(total, idle)
    return ScopedDeadline(total, idle)
