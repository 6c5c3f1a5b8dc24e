"""A long session continues as new between turns and stays one session.

Against a real dev server (conftest.py) and the scripted calculator on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from temporalio.client import Client
from temporalio.worker import Replayer

from toolreel.adapters import Journal, MemoryJournal, unstructure
from toolreel.cli import cli
from toolreel.core import Finish
from toolreel.shell import AgentOptions, open_journal
from toolreel.shell import Client as LocalClient
from toolreel.shell.demo import TOOLS
from toolreel.shell.scripted import ScriptedServer
from toolreel.temporal import (
    SessionRecord,
    SessionStart,
    SessionWorkflow,
    WorkflowChat,
    connect,
    fetch_record,
    import_workflow,
    open_chat,
    send_prompt,
    session_worker,
    workflow_runner,
)

PROMPTS = [
    "What is 1 plus 2?",
    "What's 7 times 8, then add 5?",
    "What is 2 plus 2?",
    "What is 10 plus 5?",
]


def options(server: ScriptedServer, **changes: Any) -> AgentOptions:
    return AgentOptions(
        base_url=server.url, model="scripted", api_key="scripted-key", tools=TOOLS, **changes
    )


def steps_of(journal: Journal, session_id: str) -> list[tuple[Any, tuple[dict[str, Any], ...]]]:
    return [(entry.event, entry.effects) for entry in journal.entries(session_id)]


def in_process(server: ScriptedServer, journal: Journal) -> tuple[list[str], Any]:
    """The same chat with the in-process Client: its answers and its history as JSON data."""

    async def chat() -> tuple[list[str], Any]:
        answers = []
        settings = options(server, journal=journal, session_id="here", auto_execute_tools=True)
        async with LocalClient(settings) as client:
            for prompt in PROMPTS:
                await client.query(prompt)
                finish = [item async for item in client.events()][-1]
                assert isinstance(finish, Finish)
                answers.append(finish.text)
            return answers, unstructure(client.history)

    return asyncio.run(chat())


def test_a_long_chat_continues_as_new_between_turns_and_stays_one_session(
    temporal_address: str, calculator: ScriptedServer, tmp_path: Path
) -> None:
    here = MemoryJournal()
    answers_here, history_here = in_process(calculator, here)
    there = MemoryJournal()
    database = tmp_path / "imported.db"

    async def work(client: Client) -> tuple[list[str], Any, SessionRecord, SessionRecord]:
        task_queue = f"q-{uuid.uuid4().hex[:8]}"
        start = SessionStart(continue_after=30)  # a turn folds 15-40 events: every turn or two
        async with session_worker(client, options(calculator), task_queue=task_queue):
            handle = await open_chat(client, task_queue=task_queue, start=start)
            answers = [(await send_prompt(handle, prompt)).text for prompt in PROMPTS]
            transcript = await handle.query(SessionWorkflow.transcript)
            own: SessionRecord = await handle.query(SessionWorkflow.record)
            whole = await fetch_record(client, handle.id)
            await import_workflow(client, handle.id, there, "there")
            await handle.signal(SessionWorkflow.close)
            await handle.result()
            await import_workflow(client, handle.id, open_journal(database), "closed")
            histories = [
                await client.get_workflow_handle(handle.id, run_id=run).fetch_history()
                for run in [*own.runs[-1:], None]  # a run that continued, the last one
            ]
        replayer = Replayer(workflows=[SessionWorkflow], workflow_runner=workflow_runner())
        for history in histories:
            await replayer.replay_workflow(history)  # deterministic, the carried state too
        return answers, transcript, own, whole

    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(temporal_address)), 90)

    answers, transcript, own, whole = asyncio.run(main())

    assert (
        answers
        == answers_here
        == [
            "The answer is 3.",
            "The answer is 61.",
            "The answer is 4.",
            "The answer is 15.",
        ]
    )
    assert len(own.runs) >= 2  # continued as new at least twice
    assert len(own.events) < len(whole.events) and whole.runs == []
    assert transcript == history_here
    assert steps_of(there, "there") == steps_of(here, "here")

    replayed = CliRunner().invoke(cli, ["replay", str(database)])
    assert replayed.exit_code == 0 and "closed" in replayed.stdout, replayed.output


def test_a_streamed_chat_reads_on_across_continuing_as_new(
    temporal_address: str, calculator: ScriptedServer
) -> None:
    async def locally() -> list[list[Any]]:
        async with LocalClient(options(calculator, auto_execute_tools=True)) as client:
            told = []
            for prompt in PROMPTS:
                await client.query(prompt)
                told.append([item async for item in client.events()])
            return told

    async def work(client: Client) -> tuple[list[list[Any]], SessionRecord]:
        task_queue = f"q-{uuid.uuid4().hex[:8]}"
        start = SessionStart(continue_after=30)  # every turn or two
        told = []
        async with (
            session_worker(client, options(calculator), task_queue=task_queue),
            WorkflowChat(client, task_queue=task_queue, start=start) as chat,
        ):
            for prompt in PROMPTS:
                await chat.query(prompt)  # on the run the last turn continued to, if it did
                told.append([item async for item in chat.events()])
            record: SessionRecord = await chat.handle.query(SessionWorkflow.record)
        return told, record

    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(temporal_address)), 90)

    told, record = asyncio.run(main())
    assert len(record.runs) >= 2  # continued as new at least twice
    assert told == asyncio.run(locally())  # each turn told whole, as a local Client tells it
