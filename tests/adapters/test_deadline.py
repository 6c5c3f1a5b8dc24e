"""The clock of one model call (adapters/_providers/_deadline.py): a wait past the total deadline
or the idle limit raises `Expired` naming the limit; content restarts the idle limit; a limit
never cancels the caller's own code between waits, nor swallows the caller's cancellation; on
asyncio one lazily re-armed timer does it (`LoopDeadline`), elsewhere a scope per wait
(`ScopedDeadline`), with the same behaviour. The sleeps stand for a server that says nothing;
the margins are wide (limits of 0.05-0.3 s against waits of 5 s)."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from toolreel.adapters._providers._deadline import Expired, ScopedDeadline, call_deadline
from toolreel.adapters._providers._loop_deadline import LoopDeadline

KINDS = pytest.mark.parametrize("kind", [LoopDeadline, ScopedDeadline])
IDLE = "no content from the model for 0.05 s (idle_timeout); keep-alive comments do not count"
TOTAL = "model call exceeded its total deadline (call_timeout) of 0.3 s"


def run(main: Any) -> Any:
    return anyio.run(main, backend="asyncio")


@KINDS
def test_a_silent_wait_ends_at_the_idle_limit(kind: type[ScopedDeadline]) -> None:
    async def main() -> str:
        clock = kind(total=60, idle=0.05)
        with pytest.raises(Expired) as expired:
            await clock.within(anyio.sleep(5), idle=True)
        clock.close()
        return str(expired.value)

    assert run(main) == IDLE


@KINDS
def test_content_restarts_the_idle_limit_until_the_total_deadline(
    kind: type[ScopedDeadline],
) -> None:
    async def main() -> tuple[int, str]:
        clock = kind(total=0.3, idle=0.05)
        waits = 0
        with pytest.raises(Expired) as expired:
            while True:  # content every 10 ms: never idle, but the total runs out
                await clock.within(anyio.sleep(0.01), idle=True)
                clock.content()
                waits += 1
        clock.close()
        return waits, str(expired.value)

    waits, why = run(main)
    assert why == TOTAL
    assert waits >= 5  # well past the idle limit of 5 such waits


@KINDS
def test_a_whole_body_wait_counts_only_the_total_deadline(kind: type[ScopedDeadline]) -> None:
    async def main() -> str:
        clock = kind(total=0.3, idle=0.05)
        with pytest.raises(Expired) as expired:
            await clock.within(anyio.sleep(5), idle=False)
        clock.close()
        return str(expired.value)

    assert run(main) == TOTAL


@KINDS
def test_a_limit_never_cancels_the_callers_code_between_waits(kind: type[ScopedDeadline]) -> None:
    async def main() -> tuple[bool, str]:
        clock = kind(total=0.1, idle=0.05)
        await clock.within(anyio.sleep(0), idle=True)
        with anyio.move_on_after(0.3) as callers:  # the caller holds the events: past both
            await anyio.sleep(0.2)
        with pytest.raises(Expired) as expired:  # the next wait finds the limit passed
            await clock.within(anyio.sleep(0), idle=True)
        clock.close()
        return callers.cancelled_caught, str(expired.value)

    assert run(main) == (False, IDLE)


@KINDS
def test_the_callers_cancellation_is_not_taken_for_a_limit(kind: type[ScopedDeadline]) -> None:
    async def main() -> int:
        clock = kind(total=60, idle=30)
        with anyio.move_on_after(0.05):
            await clock.within(anyio.sleep(5), idle=True)
            raise AssertionError("not cancelled")
        clock.close()
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    assert run(main) == 0


@KINDS
def test_after_a_limit_the_task_goes_on_uncancelled(kind: type[ScopedDeadline]) -> None:
    async def main() -> int:
        clock = kind(total=60, idle=0.05)
        with pytest.raises(Expired):
            await clock.within(anyio.sleep(5), idle=True)
        clock.close()
        await anyio.sleep(0.1)  # would raise if a cancellation were left pending
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    assert run(main) == 0


def test_a_closed_call_leaves_no_timer_behind() -> None:
    async def main() -> None:
        clock = LoopDeadline(total=0.05, idle=0.05)
        assert await clock.within(asyncio.sleep(0, "done"), idle=True) == "done"
        clock.close()
        await anyio.sleep(0.2)  # past both limits: nothing may fire into the task

    run(main)


def test_on_asyncio_a_call_gets_the_loop_timer() -> None:
    async def main() -> type:
        return type(call_deadline(60, 30))

    assert run(main) is LoopDeadline
