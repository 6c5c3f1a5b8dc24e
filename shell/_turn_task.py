"""TurnTask: a Runner's turn run in a task of its own, what it tells queued for one reader.

Both Clients — toolreel's (shell/_client.py) and open_agent's
(toolreel.open_agent.client) — run a turn in the background while their caller
reads what it tells; this is that lifecycle, once:

- `start(work)` runs `work()` (a Runner call: `turn`, `run`, `resume`) in a new
  task, made by the owner's `spawn` (a task group's `start_soon`, or an asyncio
  task for a client used without `async with`);
- `put` is the Runner's sink: notices queue at once; the turn's end is queued
  once the run is over (every step journaled): its `Finish` or `AwaitApproval`,
  or None when something stopped the task (a journal that gave up, a bug);
- `next()` is the reader's next item, waiting while the turn runs;
- `raise_error()` raises what stopped the task, once, in the reader's own task;
- `stop()` interrupts the turn and waits until its cancel is recorded, and
  `until_done(waiting)` does so when the caller is cancelled while waiting.

The task never raises (what stopped it is kept for the reader), except a
cancellation from outside, which it records (`end` is the Runner's `Finish`)
and lets through.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeAlias

import anyio

from toolreel.core import AwaitApproval, Finish
from toolreel.core.notices import Notice

from ._runner import Runner

#: What a turn tells its reader: its notices, then its end (None: it was stopped).
Told: TypeAlias = Notice | Finish | AwaitApproval | None
#: How the owner runs a task: `TaskGroup.start_soon`, or one that makes an asyncio task.
Spawn: TypeAlias = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]


class TurnTask:
    """One turn at a time over `runner`, run in the background by `spawn`."""

    def __init__(self, runner: Runner, spawn: Spawn) -> None:
        """Nothing runs until `start`."""
        self.runner = runner
        self.spawn = spawn
        #: How the last turn ended: its `Finish` or `AwaitApproval` (None while one runs,
        #: or when something stopped it).
        self.end: Finish | AwaitApproval | None = None
        self.error: BaseException | None = None
        self._done: anyio.Event | None = None
        self._send, self._receive = anyio.create_memory_object_stream[Told](math.inf)

    def start(self, work: Callable[[], Awaitable[Finish | AwaitApproval | None]]) -> None:
        """Run `work()` in a new task; its end goes to the reader once it is over."""
        done = self._done = anyio.Event()
        self.end = self.error = None

        async def turn() -> None:
            end: Finish | AwaitApproval | None = None
            try:
                end = await work()
            except anyio.get_cancelled_exc_class():
                end = self.runner.finish  # the cancel it recorded
                raise  # the client is closing, or a scope around it was cancelled
            except BaseException as exc:  # a journal that gave up, a real Ctrl-C, a bug
                self.error = exc
            finally:
                self.end = end
                self._send.send_nowait(end if self.error is None else None)
                done.set()

        self.spawn(turn)

    @property
    def running(self) -> bool:
        """Whether a turn is under way."""
        return self._done is not None and not self._done.is_set()

    def put(self, item: Notice | Finish) -> None:
        """The Runner's sink: a notice for the reader (the `Finish` waits for the run's end)."""
        if not isinstance(item, Finish):
            self._send.send_nowait(item)

    async def next(self) -> Told:
        """The next item told, waiting while the turn runs; None once nothing more will come."""
        try:
            return self._receive.receive_nowait()
        except anyio.WouldBlock:
            if not self.running:
                return None
            return await self._receive.receive()

    def discard(self) -> None:
        """Drop what turns that are over told and nobody read."""
        while True:
            try:
                self._receive.receive_nowait()
            except anyio.WouldBlock:
                return

    def raise_error(self) -> None:
        """Raise what stopped the turn's task (a journal error, a Ctrl-C, a bug), if anything."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    async def wait(self) -> None:
        """Wait until the turn's task is over (at once if none ran)."""
        if self._done is not None:
            await self._done.wait()

    async def stop(self) -> None:
        """Interrupt the running turn, if any, and wait until it has recorded its cancel."""
        if self.running:
            self.runner.interrupt()
            await self.wait()

    async def until_done(self, waiting: Awaitable[Any]) -> Any:
        """Await `waiting`; if the caller is cancelled meanwhile, stop the turn first.

        The turn is interrupted and its cancel journaled under a shield, then
        the caller's cancellation goes on as anyio or asyncio expects.
        """
        try:
            return await waiting
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.stop()
            raise
