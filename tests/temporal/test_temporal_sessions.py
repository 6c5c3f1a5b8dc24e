"""Sessions as Temporal workflows: the same session as in-process, across worker deaths, at scale.

Against a real dev server (conftest.py) and the scripted model on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner, Result
from temporal_workers import start_worker, worker_command
from temporalio.client import Client
from temporalio.worker import Replayer

from toolreel.adapters import Journal, MemoryJournal
from toolreel.adapters.records import event_of
from toolreel.cli import cli
from toolreel.core import ModelResponded, ToolInterrupted
from toolreel.core import _finish as rules
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, run
from toolreel.shell.demo import TOOLS
from toolreel.shell.scripted import ScriptedServer, text, tool_calls
from toolreel.shell.scripted._local import LocalServer, Request
from toolreel.shell.scripted._server import sse_events
from toolreel.temporal import (
    SessionRecord,
    SessionStart,
    SessionWorkflow,
    connect,
    import_record,
    last_finish,
    run_session,
    session_worker,
    start_session,
    workflow_runner,
)

CHAINED = "What's 7 times 8, then add 5?"

INTERRUPTED = "interrupted; outcome unknown"  # what the model reads of a lost outcome


def options(server: ScriptedServer, **changes: Any) -> AgentOptions:
    return AgentOptions(
        base_url=server.url, model="scripted", api_key="scripted-key", tools=TOOLS, **changes
    )


def on_temporal(address: str, work: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run `work` with a client of the dev server, in a loop of its own."""

    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(address)), 90)  # a hang fails

    return asyncio.run(main())


def steps_of(journal: Journal, session_id: str) -> list[tuple[Any, tuple[dict[str, Any], ...]]]:
    return [(entry.event, entry.effects) for entry in journal.entries(session_id)]


def queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


def test_a_session_on_temporal_journals_what_the_in_process_client_journals(
    temporal_address: str, calculator: ScriptedServer
) -> None:
    here = MemoryJournal()
    answer = asyncio.run(
        run(CHAINED, options(calculator, journal=here, session_id="here", max_tool_iterations=5))
    )

    async def work(client: Client) -> SessionRecord:
        task_queue = queue()
        async with session_worker(client, options(calculator), task_queue=task_queue):
            return await run_session(client, CHAINED, task_queue=task_queue)

    record = on_temporal(temporal_address, work)
    there = MemoryJournal()
    import_record(record, there, "there")

    finish = last_finish(record)
    assert finish is not None and finish.text == answer.text == "The answer is 61."
    assert steps_of(there, "there") == steps_of(here, "here")


def test_the_command_line_runs_a_session_on_a_worker_and_imports_it(
    temporal_address: str, calculator: ScriptedServer, tmp_path: Path
) -> None:
    task_queue = queue()
    worker = start_worker(
        worker_command(temporal_address, calculator.url, task_queue),
        {"TOOLREEL_TEST_RUNS": str(tmp_path / "runs.txt")},
        tmp_path / "worker.log",
    )
    try:
        on = ["--temporal", temporal_address, "--task-queue", task_queue]
        done = invoke("run", *on, "--session", "cli-session", "What is 25 plus 17?")
        chatted = invoke("chat", *on, "--session", "cli-chat", input="What is 1 plus 2?\n")
        again = invoke("chat", *on, "--session", "cli-chat", input="What is 2 plus 2?\n/exit\n")
        chat_journal = tmp_path / "chat.db"
        address = ["--temporal-address", temporal_address]
        chat_imported = invoke("import", "--temporal", "cli-chat", *address, chat_journal)
    finally:
        worker.kill()
        worker.wait()
    assert done.exit_code == 0, done.output
    assert done.stdout == "The answer is 42.\n"

    journal = tmp_path / "imported.db"
    imported = invoke("import", "--temporal", "cli-session", *address, journal)
    assert imported.exit_code == 0, imported.output
    replayed = invoke("replay", journal)
    assert replayed.exit_code == 0 and "cli-session" in replayed.stdout, replayed.output
    shown = invoke("show", journal, "cli-session").stdout
    assert "What is 25 plus 17?" in shown and "The answer is 42." in shown

    assert (chatted.stdout, again.stdout) == ("The answer is 3.\n", "The answer is 4.\n")
    assert chat_imported.exit_code == 0, chat_imported.output
    conversation = invoke("show", chat_journal, "cli-chat").stdout
    assert "## Turn 2" in conversation and "The answer is 4." in conversation


def invoke(*args: str | Path, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], input=input)


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def record_script(request: dict[str, Any]) -> Any:
    """Call `record` once, then answer with what it returned."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return text(f"Done ({last['content']}).")
    return tool_calls(("call_rec", "record", {"note": "pay the invoice"}))


def test_a_worker_killed_mid_tool_never_runs_a_non_idempotent_tool_twice(
    temporal_address: str, tmp_path: Path
) -> None:
    runs, hold = tmp_path / "runs.txt", tmp_path / "hold"
    hold.touch()
    env = {"TOOLREEL_TEST_RUNS": str(runs), "TOOLREEL_TEST_HOLD": str(hold)}
    task_queue = queue()
    with ScriptedServer(record_script) as model:
        command = worker_command(temporal_address, model.url, task_queue)
        first = start_worker(command, env, tmp_path / "first.log")

        async def work(client: Client) -> SessionRecord:
            start = SessionStart(heartbeat_seconds=1.0)
            handle = await start_session(
                client, "Note: pay the invoice.", task_queue=task_queue, start=start
            )
            await asyncio.to_thread(wait_for, runs.exists, "the tool to start")
            first.send_signal(signal.SIGKILL)
            first.wait()
            hold.unlink()
            second = start_worker(command, env, tmp_path / "second.log")
            try:
                return await handle.result()
            finally:
                second.kill()
                second.wait()

        record = on_temporal(temporal_address, work)

    assert runs.read_text() == "pay the invoice\n"  # run once, by the killed worker
    lost = [event for event in map(event_in, record.events) if isinstance(event, ToolInterrupted)]
    assert lost == [ToolInterrupted(call_id="call_rec")]
    finish = last_finish(record)
    assert finish is not None and finish.reason is FinishReason.COMPLETED
    assert finish.text == f"Done ({INTERRUPTED})."


def event_in(data: dict[str, Any]) -> Any:
    return event_of(data)


class StallsFirstStream:
    """A model whose first answer stops mid-stream (and waits); later ones stream whole."""

    def __init__(self) -> None:
        self.requests = 0
        self.stalled = threading.Event()
        self.server = LocalServer(self.answer)

    async def answer(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        self.requests += 1
        body = json.loads(request.body)
        events = sse_events(text("The answer is 42.", chunk_size=3), include_usage=True)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        writer.write(b"transfer-encoding: chunked\r\n\r\n")
        for number, payload in enumerate(events):
            if self.requests == 1 and number == 2:
                self.stalled.set()
                await asyncio.sleep(60)  # mid-stream, until the worker dies
            data = f"data: {payload}\n\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        assert body["stream"]
        return True


def test_a_worker_killed_mid_stream_is_replaced_and_the_call_made_again(
    temporal_address: str, tmp_path: Path
) -> None:
    model = StallsFirstStream()
    model.server.start()
    url = f"http://127.0.0.1:{model.server.port}/v1"
    task_queue = queue()
    command = worker_command(temporal_address, url, task_queue)
    env = {"TOOLREEL_TEST_RUNS": str(tmp_path / "runs.txt")}
    try:
        first = start_worker(command, env, tmp_path / "first.log")

        async def work(client: Client) -> SessionRecord:
            start = SessionStart(heartbeat_seconds=1.0)
            handle = await start_session(
                client, "What is 25 plus 17?", task_queue=task_queue, start=start
            )
            await asyncio.to_thread(model.stalled.wait, 30)
            first.send_signal(signal.SIGKILL)
            first.wait()
            second = start_worker(command, env, tmp_path / "second.log")
            try:
                return await handle.result()
            finally:
                second.kill()
                second.wait()

        record = on_temporal(temporal_address, work)
    finally:
        model.server.stop()

    finish = last_finish(record)
    assert finish is not None and finish.text == "The answer is 42."
    assert model.requests == 2
    folded = [event_in(data) for data in record.events]
    assert sum(isinstance(event, ModelResponded) for event in folded) == 1
    assert "".join(getattr(event, "text", "") for event in folded[1:]) == "The answer is 42."


def test_fifty_sessions_on_two_worker_processes_keep_to_themselves(
    temporal_address: str, calculator: ScriptedServer, tmp_path: Path
) -> None:
    task_queue = queue()
    command = worker_command(temporal_address, calculator.url, task_queue)
    env = {"TOOLREEL_TEST_RUNS": str(tmp_path / "runs.txt")}
    workers = [start_worker(command, env, tmp_path / f"worker{n}.log") for n in range(2)]

    async def work(client: Client) -> list[SessionRecord]:
        return await asyncio.gather(
            *(
                run_session(client, f"What is {n} plus 1000?", task_queue=task_queue)
                for n in range(50)
            )
        )

    try:
        records = on_temporal(temporal_address, work)
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
    for n, record in enumerate(records):
        finish = last_finish(record)
        assert finish is not None and finish.text == f"The answer is {n + 1000}."
        prompts = [data["text"] for data in record.events if data["type"] == "PromptSubmitted"]
        assert prompts == [f"What is {n} plus 1000?"]


def test_the_replayer_catches_a_reducer_that_would_change_past_effects(
    temporal_address: str, calculator: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def work(client: Client) -> Any:
        task_queue = queue()
        async with session_worker(client, options(calculator), task_queue=task_queue):
            handle = await start_session(client, CHAINED, task_queue=task_queue)
            await handle.result()
        return await handle.fetch_history()

    history = on_temporal(temporal_address, work)
    replayer = Replayer(workflows=[SessionWorkflow], workflow_runner=workflow_runner())
    asyncio.run(replayer.replay_workflow(history))  # today's reducer: the same effects

    build = rules.build_request
    monkeypatch.setattr(  # an "upgrade" that asks the model differently
        rules, "build_request", lambda *a: attrs.evolve(build(*a), temperature=0.5)
    )
    with pytest.raises(Exception, match=r"(?i)nondetermin"):
        asyncio.run(replayer.replay_workflow(history))
