"""Cancelling from outside: an app's deadline, a cancelled task, a cancel scope, `interrupt()`.

Whatever way the caller cancels `run()`, `execute_agent()`, `client.wait()`,
the reading of `events()` (or `wait()`) or the `async with Client`
block itself, the turn ends CANCELLED in the journal (completed rounds kept,
the round in flight closed), what the run opened is closed, and the
cancellation propagates as anyio/asyncio define it: `move_on_after` and a
scope cancelled by hand simply return, `fail_after` and `asyncio.wait_for`
raise TimeoutError, `task.cancel()` raises CancelledError out of the task.
The session then goes on with a provider-valid history.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import SQLiteJournal, load_session
from toolreel.core._history import unanswered_calls
from toolreel.core.outcomes import FinishReason
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    Client,
    OutputTool,
    execute_agent,
    run,
    tool,
)
from toolreel.shell.scripted import ScriptedServer, text, tool_calls
from toolreel.shell.scripted._server import sse_events

BACKENDS = ["asyncio"] + (["trio"] if importlib.util.find_spec("trio") else [])
SCOPES = ["move_on_after", "fail_after", "scope_cancelled_by_hand"]
ASYNCIO_WAYS = ["task_cancel", "wait_for"]
#: What the caller sees, per way of cancelling.
OUTCOME = {
    "move_on_after": "returned, cancelled_caught",
    "scope_cancelled_by_hand": "returned, cancelled_caught",
    "fail_after": "TimeoutError",
    "wait_for": "TimeoutError",
    "task_cancel": "CancelledError",
}
SCRIPT = [
    tool_calls(("c1", "echo", {"x": "a"})),  # a round that completes
    tool_calls(("c2", "stuck", {})),  # the round in flight when the cancel comes
    text("going on"),  # the next prompt, once the session resumes
]


@tool
def echo(x: str) -> str:
    """Echo."""
    return x


def stuck_tool(started: anyio.Event) -> Any:
    """A tool that says it has started, then never ends."""

    @tool
    async def stuck() -> str:
        """Never ends."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    return stuck


async def cancel(way: str, work: Callable[[], Awaitable[Any]], started: anyio.Event) -> str:
    """Run `work` and cancel it the `way` named once `started` is set: what the caller saw."""
    if way == "task_cancel":
        task = asyncio.ensure_future(work())
        await started.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "CancelledError"
        return "returned"
    if way == "wait_for":
        try:  # the one way that cannot wait for `started`: its timeout is the cancel
            await asyncio.wait_for(work(), timeout=0.5)
        except TimeoutError:
            return "TimeoutError"
        return "returned"
    async with anyio.create_task_group() as tasks:
        try:
            with scope_for(way) as scope:
                tasks.start_soon(expire, scope, way, started)
                await work()
        except TimeoutError:
            return "TimeoutError"
    return "returned, cancelled_caught" if scope.cancelled_caught else "returned"


def scope_for(way: str) -> Any:
    """The caller's cancel scope (a deadline far away; `expire` brings it forward)."""
    if way == "move_on_after":
        return anyio.move_on_after(60)
    if way == "fail_after":
        return anyio.fail_after(60)
    return anyio.CancelScope()


async def expire(scope: anyio.CancelScope, way: str, started: anyio.Event) -> None:
    """Once `started`: the deadline passes now, or (by hand) the scope is cancelled."""
    await started.wait()
    if way == "scope_cancelled_by_hand":
        scope.cancel()
    else:
        scope.deadline = anyio.current_time()


def options(server: ScriptedServer, path: Path, started: anyio.Event, **extra: Any) -> AgentOptions:
    extra.setdefault("auto_execute_tools", True)
    return AgentOptions(
        model="test",
        base_url=server.url,
        api_key="sk-test",
        tools=[echo, stuck_tool(started)],
        journal=str(path),
        session_id="s1",
        **extra,
    )


def assert_cancelled_and_valid(path: Path, *, in_flight: bool = True) -> None:
    """The journal's first turn ended CANCELLED: the echo round kept, the stuck call answered.

    Without `in_flight` (a timeout, not a signal, was the cancel) it may have
    landed before the turn began: then there is no cancelled turn to find.
    """
    journal = SQLiteJournal(path)
    try:
        session = load_session(journal, "s1")
    finally:
        journal.close()
    assert unanswered_calls(session.history) == ()
    if in_flight:
        assert session.turns[0].reason is FinishReason.CANCELLED
        [answer] = [m for m in session.history if m.tool_rounds]
        results = [r.content for tool_round in answer.tool_rounds for r in tool_round.results]
        assert results == ["a", "Cancelled before the tool finished."]
    elif len(session.turns) > 1 or session.turns[0].prompt == "go":
        assert session.turns[0].reason is FinishReason.CANCELLED


async def resume_and_go_on(server: ScriptedServer, path: Path) -> None:
    """`Client.resume` continues the conversation; the model gets a provider-valid history."""
    async with Client.resume("s1", options(server, path, anyio.Event())) as client:
        await client.query("and now?")
        finish = await client.wait()
    assert finish.text == "going on"
    messages = server.requests[-1]["messages"]
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert answered == {"c1", "c2"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", SCOPES + ASYNCIO_WAYS)
def test_cancelling_run_records_cancelled_and_propagates(tmp_path, way: str, backend: str) -> None:
    if way in ASYNCIO_WAYS and backend != "asyncio":
        pytest.skip("an asyncio way")
    path = tmp_path / "journal.db"
    with ScriptedServer(SCRIPT) as server:

        async def main() -> str:
            started = anyio.Event()
            seen = await cancel(way, lambda: run("go", options(server, path, started)), started)
            await resume_and_go_on(server, path)
            return seen

        assert anyio.run(main, backend=backend) == OUTCOME[way]
        assert len(server.requests) == 3  # no call after the cancel, then the resumed one
    assert_cancelled_and_valid(path, in_flight=way != "wait_for")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", SCOPES + ASYNCIO_WAYS)
def test_cancelling_the_async_with_block_records_cancelled_and_closes(
    tmp_path, way: str, backend: str
) -> None:
    if way in ASYNCIO_WAYS and backend != "asyncio":
        pytest.skip("an asyncio way")
    path = tmp_path / "journal.db"
    clients: list[Client] = []
    with ScriptedServer(SCRIPT) as server:

        async def block(started: anyio.Event) -> None:
            async with Client(options(server, path, started)) as client:
                clients.append(client)
                await client.query("go")
                await anyio.sleep_forever()  # the cancel lands in the caller's own code

        async def main() -> str:
            started = anyio.Event()
            seen = await cancel(way, lambda: block(started), started)
            await resume_and_go_on(server, path)
            return seen

        assert anyio.run(main, backend=backend) == OUTCOME[way]
    assert_cancelled_and_valid(path, in_flight=way != "wait_for")
    [client] = clients
    assert client._model._client.is_closed  # the pool it opened
    with pytest.raises(Exception):  # noqa: B017 - the journal it opened is closed
        client.journal.sessions()


READERS = ["wait", "events"]


async def read(client: Client, reader: str) -> None:
    """Wait for the turn the way named."""
    if reader == "wait":
        await client.wait()
    else:
        async for _ in client.events():
            pass


READ_WAYS = [(reader, way) for reader in READERS for way in [*SCOPES, *ASYNCIO_WAYS, "interrupt"]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("reader", "way"), READ_WAYS)
def test_cancelling_a_reader_cancels_the_turn_and_the_client_goes_on(
    tmp_path, reader: str, way: str, backend: str
) -> None:
    if way in ASYNCIO_WAYS and backend != "asyncio":
        pytest.skip("an asyncio way")
    path = tmp_path / "journal.db"
    with ScriptedServer(SCRIPT) as server:

        async def main() -> tuple[str, Any, Any]:
            started = anyio.Event()
            async with Client(options(server, path, started)) as client:
                await client.query("go")
                if way == "interrupt":
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(read, client, reader)
                        await started.wait()
                        await client.interrupt()
                    seen = "returned"
                else:
                    seen = await cancel(way, lambda: read(client, reader), started)
                cancelled = client.last_finish  # the turn is over when the cancel has landed
                await client.query("and now?")
                return seen, cancelled, await client.wait()

        seen, cancelled, finish = anyio.run(main, backend=backend)
        assert seen == OUTCOME.get(way, "returned")
        assert cancelled.reason is FinishReason.CANCELLED
        assert finish.reason is FinishReason.COMPLETED and finish.text == "going on"
        assert len(server.requests) == 3
    journal = SQLiteJournal(path)
    turns = load_session(journal, "s1").turns
    journal.close()
    assert [t.reason for t in turns] == [FinishReason.CANCELLED, FinishReason.COMPLETED]


# --- a model stream in flight ----------------------------------------------------------


class HangingServer:
    """Answers a chat request with the start of an SSE stream, then never goes on.

    Notes when the client hangs up: what a provider sees of a cancelled call.
    """

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.requests = 0
        self.responding = threading.Event()
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)[1])
            while len(body) < length:
                body += conn.recv(65536)
            self.requests += 1
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            for payload in sse_events(text("Hello, this goes on forever"), False)[:2]:
                data = f"data: {payload}\n\n".encode()
                conn.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.responding.set()
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            self.closed.set()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def hanging() -> Iterator[HangingServer]:
    server = HangingServer()
    yield server
    server.close()


@attrs.frozen
class Answer:
    value: str


def call(target: str, server: HangingServer, path: Path) -> Callable[[], Awaitable[Any]]:
    """The call to cancel: a run, or an agent, whose model call hangs mid-stream."""
    opts = AgentOptions(
        model="test", base_url=server.url, api_key="sk-test", journal=str(path), session_id="s1"
    )
    if target == "run":
        return lambda: run("go", opts)
    definition = AgentDefinition(build_prompt=str, output=OutputTool.of(Answer, name="answer"))
    return lambda: execute_agent(definition, "go", opts)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", SCOPES + ASYNCIO_WAYS)
@pytest.mark.parametrize("target", ["run", "execute_agent"])
def test_a_cancel_closes_the_model_stream_in_flight(
    hanging: HangingServer, tmp_path, target: str, way: str, backend: str
) -> None:
    if way in ASYNCIO_WAYS and backend != "asyncio":
        pytest.skip("an asyncio way")
    path = tmp_path / "journal.db"

    async def main() -> str:
        responding = anyio.Event()

        async def watch() -> None:
            await anyio.to_thread.run_sync(hanging.responding.wait, abandon_on_cancel=True)
            responding.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            seen = await cancel(way, call(target, hanging, path), responding)
            tasks.cancel_scope.cancel()
        return seen

    assert anyio.run(main, backend=backend) == OUTCOME[way]
    assert hanging.closed.wait(5)  # the connection was closed, not left streaming
    assert hanging.requests == 1  # and no call was made after the cancel
    if target == "run":
        assert_cancelled_and_valid(path, in_flight=False)


# --- sync tools in worker threads ------------------------------------------------------


def test_a_tool_blocking_a_worker_thread_is_abandoned_and_its_late_result_ignored(
    tmp_path,
) -> None:
    release = threading.Event()
    entered = threading.Event()

    @tool
    def blocking() -> str:
        """Blocks its worker thread until released."""
        entered.set()
        release.wait()
        return "late"

    path = tmp_path / "journal.db"
    with ScriptedServer([tool_calls(("c1", "blocking", {}))]) as server:
        opts = AgentOptions(
            model="test",
            base_url=server.url,
            api_key="sk-test",
            tools=[blocking],
            journal=str(path),
            session_id="s1",
        )

        async def main() -> bool:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tasks:

                    async def cancel_when_entered() -> None:
                        await anyio.to_thread.run_sync(entered.wait)
                        scope.cancel()

                    tasks.start_soon(cancel_when_entered)
                    await run("go", opts)
            release.set()  # the thread's result arrives after the run is over
            await anyio.sleep(0.05)
            return scope.cancelled_caught

        try:
            assert anyio.run(main) is True
        finally:
            release.set()
    journal = SQLiteJournal(path)
    session = load_session(journal, "s1")
    journal.close()
    assert session.turns[-1].reason is FinishReason.CANCELLED
    [answer] = [m for m in session.history if m.tool_rounds]
    assert answer.tool_rounds[0].results[0].content == "Cancelled before the tool finished."


def test_an_interrupt_right_after_the_query_makes_no_model_call(
    hanging: HangingServer, tmp_path
) -> None:
    opts = AgentOptions(
        model="test",
        base_url=hanging.url,
        api_key="sk-test",
        journal=str(tmp_path / "journal.db"),
        session_id="s1",
    )

    async def main() -> Any:
        with anyio.fail_after(10):  # a model call made after all would hang here
            async with Client(opts) as client:
                await client.query("go")
                await client.interrupt()  # before the turn's task has even begun
                return client.last_finish

    assert anyio.run(main).reason is FinishReason.CANCELLED
    assert hanging.requests == 0
