"""Session workflows and text that is valid JSON but not valid UTF-8 (issue 20, item 3): what
the model and the tools send is folded with U+FFFD in its place, so the record imports into a
journal and replays; a prompt with a lone surrogate is refused before any workflow starts.

Against a real dev server (conftest.py) and the scripted model on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from toolreel.adapters import Session, SQLiteJournal
from toolreel.core import ConfigError
from toolreel.shell import AgentOptions, replay, tool
from toolreel.shell.scripted import ScriptedServer, text, tool_calls
from toolreel.temporal import (
    connect,
    import_record,
    last_finish,
    open_chat,
    run_session,
    send_prompt,
    session_worker,
    start_session,
)

LONE, FFFD = "\ud800", "\ufffd"


@tool
def read(name: str) -> str:
    """A file's text, one byte of which is no UTF-8."""
    return f"{name}: " + b"\xff".decode("utf-8", "surrogateescape")


def on_temporal(address: str, work: Any) -> Any:
    """Run `work(client)` against the dev server, in a loop of its own (a hang fails)."""

    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(address)), 90)

    return asyncio.run(main())


def test_a_session_workflow_folds_such_text_replaced_and_its_record_replays(
    temporal_address: str, tmp_path: Path
) -> None:
    script = [tool_calls(("c1", "read", {"name": "a"}), text=f"reading {LONE}"), text(f"ok {LONE}")]
    with ScriptedServer(script) as server:
        options = AgentOptions(base_url=server.url, model="m", api_key="sk-x", tools=[read])

        async def work(client: Client) -> Any:
            queue = f"q-{uuid.uuid4().hex[:8]}"
            async with session_worker(client, options, task_queue=queue):
                return await run_session(client, "read a", task_queue=queue)

        record = on_temporal(temporal_address, work)
    finish = last_finish(record)
    assert finish is not None and finish.text == f"ok {FFFD}"
    assert finish.rounds[0].results[0].content == f"a: {FFFD}"
    journal = SQLiteJournal(tmp_path / "j.db")
    try:
        import_record(record, journal, "s")
        assert isinstance(replay(journal, "s"), Session)
    finally:
        journal.close()


@pytest.mark.parametrize("how", ["start", "run", "prompt"])
def test_a_prompt_with_a_lone_surrogate_is_refused_before_the_workflow(
    temporal_address: str, how: str
) -> None:
    async def work(client: Client) -> Any:
        bad = f"hi {LONE}"
        if how == "start":
            return await start_session(client, bad, task_queue="nowhere")
        if how == "run":
            return await run_session(client, bad, task_queue="nowhere")
        handle = await open_chat(client, task_queue="nowhere")
        try:
            return await send_prompt(handle, bad)
        finally:
            await handle.terminate()

    with pytest.raises(ConfigError, match=r"^prompt="):
        on_temporal(temporal_address, work)
