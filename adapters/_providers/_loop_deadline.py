"""The clock of one model call on asyncio: both limits on one lazily re-armed loop timer.

Theory of operation:
1. A cancel scope per wait cost ~5-8 µs (a scope, an event-loop timer made and
   cancelled, task lookups), about 70 µs a streamed round. One call has ONE
   loop timer instead, set for the nearer limit when the first wait starts.
2. Content only moves `idle_at` (a float). When the timer fires it re-arms for
   the limit as it is now if that moved later (the lazy re-arm); else, if the
   call is waiting on the network, it cancels the task, and the wait raises
   `Expired`. Between waits (the events are out with the caller) it never
   cancels anything: the next wait looks at the clock before it starts.
3. The call's scope is not held across the generator's `yield`s (anyio forbids
   a cancel scope open across a yield: a deadline would cancel the caller's code),
   which is why the timer cancels the task itself, and only inside `within`,
   as `asyncio.timeout` does (so, like it, not held off by an anyio shield the
   HTTP library may hold while it cleans up after an error).
4. `close` cancels the timer when the call is over.
The limits, `within`, `content` and `Expired` are as _deadline.py says; this module is
imported by `call_deadline` on an asyncio loop, so that importing toolreel imports no asyncio.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from ._deadline import Expired, ScopedDeadline

T = TypeVar("T")


class LoopDeadline(ScopedDeadline):
    """Both limits on one lazily re-armed asyncio timer (see the module's theory)."""

    def __init__(self, total: float, idle: float) -> None:
        """Both limits start now; the timer is set by the first wait."""
        self._loop = asyncio.get_running_loop()
        super().__init__(total, idle)
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[Any] | None = None
        #: While a wait runs: whether idle counts for it (None: no wait runs).
        self._waiting: bool | None = None
        #: Why the timer cancelled the task (None: it did not).
        self._fired: str | None = None

    def now(self) -> float:
        """The event loop's clock (read directly: this runs once per chunk)."""
        return self._loop.time()

    async def within(self, work: Awaitable[T], *, idle: bool) -> T:
        """`work`'s result, or `Expired` naming the limit that ran out first."""
        limit = self.limit(idle=idle)
        if self._loop.time() >= limit:
            if isinstance(work, Coroutine):
                work.close()  # never started: no "never awaited" warning
            raise Expired(self.why(idle=idle))
        if self._timer is None or self._timer.when() > limit:
            self._arm(limit)
        self._task = asyncio.current_task()
        self._waiting = idle
        try:
            result = await work
        except asyncio.CancelledError:
            if self._fired is None:
                raise  # not the limit's: the caller's cancellation goes on
            raise self._expired() from None
        finally:
            self._waiting = None
        if self._fired is not None:  # the work swallowed the cancellation
            raise self._expired()
        return result

    def close(self) -> None:
        """The call is over: its timer goes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, at: float) -> None:
        """The timer fires at `at` (a timer set for later is replaced)."""
        self.close()
        if not math.isinf(at):
            self._timer = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        """A limit may have run out: re-arm if it moved, cancel the wait if it did not."""
        self._timer = None
        idle = self._waiting
        if idle is None or self._task is None:
            return  # no wait runs: the next one looks at the clock first
        limit = self.limit(idle=idle)
        if self._loop.time() < limit:
            self._arm(limit)  # content came since the timer was set
            return
        self._fired = self.why(idle=idle)
        self._task.cancel()

    def _expired(self) -> Expired:
        """The limit that cancelled the wait, its cancellation taken back from the task."""
        assert self._task is not None and self._fired is not None
        self._task.uncancel()
        why, self._fired = self._fired, None
        return Expired(why)
