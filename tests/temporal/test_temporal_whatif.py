"""A session imported from Temporal forks and reruns like any other session.

Against a real dev server (conftest.py) and the scripted calculator on 127.0.0.1:
a session workflow runs "What's 7 times 8, then add 5?" (multiply, then add),
`toolreel import --temporal` brings it into a SQLite journal, and `fork` and
`rerun` take it from there, their sessions replaying clean.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import anyio
from click.testing import CliRunner
from temporalio.client import Client

from toolreel.adapters import Session, SessionOrigin, SQLiteJournal, load_session
from toolreel.cli import cli
from toolreel.shell import AgentOptions, Edit, fork, replay, rerun
from toolreel.shell.demo import TOOLS
from toolreel.shell.scripted import ScriptedServer
from toolreel.temporal import SessionRecord, connect, run_session, session_worker

CHAINED = "What's 7 times 8, then add 5?"


def options(server: ScriptedServer, journal: SQLiteJournal) -> AgentOptions:
    return AgentOptions(
        base_url=server.url, model="scripted", api_key="scripted-key", tools=TOOLS,
        auto_execute_tools=True, journal=journal,
    )  # fmt: skip


def test_a_session_imported_from_temporal_forks_and_reruns(
    temporal_address: str, calculator: ScriptedServer, tmp_path: Path
) -> None:
    async def work() -> SessionRecord:
        client: Client = await connect(temporal_address)
        task_queue = f"q-{uuid.uuid4().hex[:8]}"
        async with session_worker(client, options(calculator, None), task_queue=task_queue):  # type: ignore[arg-type]
            return await run_session(client, CHAINED, task_queue=task_queue, session_id="tw")

    asyncio.run(asyncio.wait_for(work(), 90))
    path = tmp_path / "imported.db"
    imported = CliRunner().invoke(
        cli, ["import", "--temporal", "tw", "--temporal-address", temporal_address, str(path)]
    )
    assert imported.exit_code == 0, imported.output

    journal = SQLiteJournal(path)
    try:
        assert load_session(journal, "tw").turns[0].text == "The answer is 61."
        client = fork(
            journal, "tw", at_round=1, edit=Edit(results={"call_1_1": "10"}), into="tw-10",
            options=options(calculator, journal),
        )  # fmt: skip

        async def go_on() -> Session:
            async with client:
                await client.wait()
                return client.session()

        forked = anyio.run(go_on)
        assert forked.turns[0].text == "The answer is 15."  # 10 + 5, the add made live
        assert forked.origin is not None and forked.origin.session_id == "tw"
        shared = forked.origin.seq
        assert list(journal.entries("tw-10"))[:shared] == list(journal.entries("tw"))[:shared]
        assert isinstance(replay(journal, "tw-10"), Session)

        again = anyio.run(
            lambda: rerun(
                journal, "tw", options=options(calculator, journal), tools="strict", into="tw-again"
            )
        )
        assert isinstance(again.session, Session)
        assert again.session.turns[0].text == "The answer is 61."
        assert again.served == 2 and again.unmatched == ()  # both calls from the recording
        assert journal.origin("tw-again") == SessionOrigin(
            kind="rerun", session_id="tw", note="model scripted, tools strict"
        )
        assert isinstance(replay(journal, "tw-again"), Session)
    finally:
        journal.close()
