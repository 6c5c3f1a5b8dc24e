"""A session workflow streams to its caller: text arrives while the model call still runs, and
the caller ends up told what a local `Client` tells (the journal's own notices).

Against a real dev server (conftest.py). The models here are in-process ports whose
calls wait on the caller between deltas: the tests assert the order things happen
in, never how long they take.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from temporalio.client import Client

from toolreel.core import (
    AwaitApproval,
    Finish,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolreel.core.notices import Notice, TextStreamed, ToolArgumentsStreamed
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, tool
from toolreel.shell import Client as LocalClient
from toolreel.shell.errors import TurnInProgress
from toolreel.temporal import (
    SessionStart,
    SessionWorkflow,
    WorkflowChat,
    connect,
    last_finish,
    session_worker,
)

USAGE = Usage(input_tokens=5, output_tokens=3)


class Waiting:
    """A model that writes "Hello", then waits for its caller to have read it, then ends.

    `log` says in which order the model and the caller did what they did.
    """

    def __init__(self) -> None:
        self.log: list[str] = []
        self.read = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield ReasoningDelta(text="A greeting.")
        yield TextDelta(text="Hello")
        self.log.append("model wrote 'Hello'")
        # a guard, not a timing: a caller that never reads it fails the order tested
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.read.wait(), 60)
        self.log.append("model ends the call")
        yield TextDelta(text=", world.")
        yield ModelResponded(finish_reason="stop", usage=USAGE)

    async def aclose(self) -> None:
        pass


def options() -> AgentOptions:
    return AgentOptions(model="m", base_url="http://127.0.0.1:9", api_key="k")


def on_temporal(address: str, work: Any) -> Any:
    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(address)), 120)  # a hang fails

    return asyncio.run(main())


def queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


async def told_locally(prompt: str) -> list[Notice | Finish | AwaitApproval]:
    """What a local Client tells of the same turn with the same model (it need not wait)."""
    model = Waiting()
    model.read.set()
    async with LocalClient(options(), model=model) as client:
        await client.query(prompt)
        return [item async for item in client.events()]


def test_text_reaches_the_caller_while_the_model_call_runs(temporal_address: str) -> None:
    model = Waiting()
    task_queue = queue()

    async def work(client: Client) -> list[Any]:
        told: list[Any] = []
        async with (
            session_worker(client, options(), task_queue=task_queue, model=model),
            WorkflowChat(client, task_queue=task_queue) as chat,
        ):
            await chat.query("Say hello")
            async for notice in chat.events():
                told.append(notice)
                if isinstance(notice, TextStreamed):
                    model.log.append(f"caller read {notice.text!r}")
                    model.read.set()
        return told

    told = on_temporal(temporal_address, work)
    assert model.log == [
        "model wrote 'Hello'",
        "caller read 'Hello'",
        "model ends the call",
        "caller read ', world.'",
    ]
    assert told == asyncio.run(told_locally("Say hello"))  # the journal's notices, no more
    assert isinstance(told[-1], Finish) and told[-1].text == "Hello, world."


class Calling:
    """A model that begins a call of `add`, writes half its arguments, waits for its caller
    to have read them, writes the rest; then, given the result, answers "5"."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.read = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if request.messages[-1].tool_rounds:
            yield TextDelta(text="5")
            yield ModelResponded(finish_reason="stop", usage=USAGE)
            return
        yield ToolCallStarted(index=0, call_id="c1", name="add")
        yield ToolCallArgumentsDelta(index=0, fragment='{"a": 2, ')
        self.log.append("model wrote half the arguments")
        with contextlib.suppress(TimeoutError):  # a guard, not a timing
            await asyncio.wait_for(self.read.wait(), 60)
        self.log.append("model ends the call")
        yield ToolCallArgumentsDelta(index=0, fragment='"b": 3}')
        yield ModelResponded(finish_reason="tool_calls", usage=USAGE)

    async def aclose(self) -> None:
        pass


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_calls_arguments_reach_the_caller_while_the_model_writes_them(
    temporal_address: str,
) -> None:
    model = Calling()
    task_queue = queue()
    with_add = attrs.evolve(options(), tools=[tool(add)], auto_execute_tools=True)

    async def work(client: Client) -> list[Any]:
        told: list[Any] = []
        async with (
            session_worker(client, with_add, task_queue=task_queue, model=model),
            WorkflowChat(client, task_queue=task_queue) as chat,
        ):
            await chat.query("Add 2 and 3")
            async for notice in chat.events():
                told.append(notice)
                if isinstance(notice, ToolArgumentsStreamed):
                    model.log.append(f"caller read {notice.fragment!r}")
                    model.read.set()
        return told

    told = on_temporal(temporal_address, work)
    assert model.log == [
        "model wrote half the arguments",
        "caller read '{\"a\": 2, '",
        "model ends the call",
        "caller read '\"b\": 3}'",
    ]

    async def locally() -> list[Any]:
        local = Calling()
        local.read.set()
        async with LocalClient(with_add, model=local) as client:
            await client.query("Add 2 and 3")
            return [item async for item in client.events()]

    assert told == asyncio.run(locally())  # each notice once, as the journal has it


def test_without_live_text_the_caller_reads_it_once_the_call_is_over(
    temporal_address: str,
) -> None:
    model = Waiting()
    task_queue = queue()

    async def work(client: Client) -> list[Any]:
        start = SessionStart(stream_seconds=0)
        told: list[Any] = []
        async with (
            session_worker(client, options(), task_queue=task_queue, model=model),
            WorkflowChat(client, task_queue=task_queue, start=start) as chat,
        ):
            await chat.query("Say hello")
            waiting = asyncio.ensure_future(_first_text(chat, told, model.log))
            while not model.log:
                await asyncio.sleep(0.01)
            model.read.set()  # nothing was told while the call ran: let it end
            await waiting
        return told

    told = on_temporal(temporal_address, work)
    assert model.log == [
        "model wrote 'Hello'",
        "model ends the call",
        "caller read 'Hello'",
        "caller read ', world.'",
    ]
    assert told == asyncio.run(told_locally("Say hello"))


async def _first_text(chat: WorkflowChat, told: list[Any], log: list[str]) -> None:
    async for notice in chat.events():
        told.append(notice)
        if isinstance(notice, TextStreamed):
            log.append(f"caller read {notice.text!r}")


def test_a_second_prompt_while_a_turn_runs_is_refused(temporal_address: str) -> None:
    model = Waiting()
    task_queue = queue()

    async def work(client: Client) -> str:
        async with (
            session_worker(client, options(), task_queue=task_queue, model=model),
            WorkflowChat(client, task_queue=task_queue) as chat,
        ):
            await chat.query("Say hello")
            with pytest.raises(TurnInProgress, match="a turn is still running") as refused:
                await chat.query("And again")
            model.read.set()
            finish = await chat.wait()
            assert finish is not None and finish.reason is FinishReason.COMPLETED
            return str(refused.value)

    assert "still running" in on_temporal(temporal_address, work)


def test_a_caller_that_leaves_mid_turn_cancels_it(temporal_address: str) -> None:
    model = Waiting()
    task_queue = queue()

    async def work(client: Client) -> Any:
        async with session_worker(client, options(), task_queue=task_queue, model=model):
            async with WorkflowChat(client, task_queue=task_queue) as chat:
                await chat.query("Say hello")
                async for notice in chat.events():
                    if isinstance(notice, TextStreamed):
                        break  # the caller goes away, as a browser that closes the page
            handle = chat.handle
            while await handle.query(SessionWorkflow.phase) != "idle":
                await asyncio.sleep(0.05)
            record = await handle.query(SessionWorkflow.record)
            model.read.set()
            return record

    finish = last_finish(on_temporal(temporal_address, work))
    assert finish is not None and finish.reason is FinishReason.CANCELLED
