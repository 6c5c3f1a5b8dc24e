"""Agent runs as Temporal workflows: the same validated output and journal as `execute_agent`.

Against a real dev server (conftest.py) and a scripted model on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner
from returns.result import Success
from temporal_tools import INVOICES, Invoice
from temporal_workers import start_worker, worker_command
from temporalio.client import Client
from temporalio.worker import Replayer

from toolreel.adapters import Journal, MemoryJournal
from toolreel.cli import cli
from toolreel.core.outcomes import Produced
from toolreel.shell import AgentOptions, AgentSuccess, execute_agent, tool
from toolreel.shell.scripted import ScriptedServer, tool_calls
from toolreel.temporal import (
    SessionRecord,
    SessionWorkflow,
    TemporalError,
    agent_finish,
    connect,
    import_record,
    run_agent,
    session_worker,
    workflow_runner,
)

SCRIPT = [  # a helper, an output the validator refuses, then one it accepts
    tool_calls(("c1", "currency_rate", {"currency": "USD"})),
    tool_calls(("c2", "record_invoice", {"number": "INV-1", "total": -1})),
    tool_calls(("c3", "record_invoice", {"number": "INV-1", "total": 40})),
]


def options(server: ScriptedServer) -> AgentOptions:
    return AgentOptions(model="test", base_url=server.url, api_key="sk-test")


def steps_of(journal: Journal, session_id: str) -> list[tuple[Any, tuple[dict[str, Any], ...]]]:
    return [(entry.event, entry.effects) for entry in journal.entries(session_id)]


def test_an_agent_run_on_temporal_gives_the_validated_output_execute_agent_gives(
    temporal_address: str,
) -> None:
    here = MemoryJournal()
    with ScriptedServer(SCRIPT) as server:
        local = asyncio.run(
            execute_agent(INVOICES, "INV-1 40", options(server), journal=here, session_id="here")
        )

    async def work(client: Client) -> tuple[SessionRecord, Any]:
        task_queue, run_id = f"q-{uuid.uuid4().hex[:8]}", f"agent-{uuid.uuid4().hex[:8]}"
        with ScriptedServer(SCRIPT) as server:
            worker = session_worker(
                client, options(server), task_queue=task_queue, agents={"invoices": INVOICES}
            )
            async with worker:
                record = await run_agent(
                    client, "invoices", "INV-1 40", task_queue=task_queue, run_id=run_id
                )
                with pytest.raises(TemporalError, match="holds no agent 'nobody'"):
                    await run_agent(client, "nobody", "x", task_queue=task_queue)
        return record, await client.get_workflow_handle(run_id).fetch_history()

    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(temporal_address)), 60)

    record, history = asyncio.run(main())

    assert isinstance(local, AgentSuccess) and local.output == Invoice(number="INV-1", total=40)
    finish = agent_finish(record)
    assert isinstance(finish.outcome, Produced)
    assert INVOICES.output.structure(finish.outcome.output) == Success(local.output)
    assert finish.attempts is not None
    assert finish.attempts.number == local.metadata.attempts == 2
    there = MemoryJournal()
    import_record(record, there, "there")
    assert steps_of(there, "there") == steps_of(here, "here")
    replayer = Replayer(workflows=[SessionWorkflow], workflow_runner=workflow_runner())
    asyncio.run(replayer.replay_workflow(history))  # deterministic in Temporal's sandbox


def test_a_worker_process_runs_the_agents_its_command_line_names(
    temporal_address: str, tmp_path: Path
) -> None:
    task_queue = f"q-{uuid.uuid4().hex[:8]}"
    with ScriptedServer(SCRIPT) as server:
        command = worker_command(temporal_address, server.url, task_queue)
        worker = start_worker([*command, "--agents", "temporal_tools:AGENTS"], {}, tmp_path / "w")

        async def work() -> SessionRecord:
            client = await connect(temporal_address)
            return await asyncio.wait_for(
                run_agent(client, "invoices", "INV-1 40", task_queue=task_queue), 60
            )

        try:
            record = asyncio.run(work())
        finally:
            worker.kill()
            worker.wait()
    finish = agent_finish(record)
    assert isinstance(finish.outcome, Produced)
    assert INVOICES.output.structure(finish.outcome.output) == Success(Invoice("INV-1", 40))


def test_a_worker_refuses_agents_that_are_no_definitions() -> None:
    on = ["worker", "--temporal", "127.0.0.1:1", "--model", "m", "--api-key", "k"]
    refused = CliRunner().invoke(cli, [*on, "--agents", "temporal_tools:TOOLS"])
    assert refused.exit_code == 2
    assert "not a dict of name -> AgentDefinition" in refused.output


@tool(requires_approval=True)
def refund(invoice: str) -> str:
    """Refund an invoice (a human approves each call)."""
    raise AssertionError("a helper that requires approval must never run unasked")


def test_an_agent_whose_helpers_require_approval_is_refused_not_run_unasked(
    temporal_address: str,
) -> None:
    gated = attrs.evolve(INVOICES, helpers=[*INVOICES.helpers, refund])

    async def work(client: Client) -> None:
        task_queue = f"q-{uuid.uuid4().hex[:8]}"
        with ScriptedServer([tool_calls(("c1", "refund", {"invoice": "INV-1"}))]) as server:
            worker = session_worker(
                client, options(server), task_queue=task_queue, agents={"gated": gated}
            )
            async with worker:
                with pytest.raises(TemporalError, match=r"require approval.*refund"):
                    await run_agent(client, "gated", "INV-1", task_queue=task_queue)
            assert server.requests == []  # refused before the model was asked

    async def main() -> None:
        await asyncio.wait_for(work(await connect(temporal_address)), 60)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("prompt", "refusal"),
    [
        (["INV-1", "40"], r"build_prompt gave a list; on Temporal a prompt is a str"),
        ("INV-1 " + b"\xff".decode("utf-8", "surrogateescape"), r"prompt="),
    ],
    ids=["not-text", "lone-surrogate"],
)
def test_an_agent_whose_prompt_no_journal_holds_is_refused_once_not_run(
    temporal_address: str, prompt: Any, refusal: str
) -> None:
    unfit = attrs.evolve(INVOICES, build_prompt=lambda source: prompt)

    async def work(client: Client) -> None:
        task_queue = f"q-{uuid.uuid4().hex[:8]}"
        with ScriptedServer(SCRIPT) as server:
            worker = session_worker(
                client, options(server), task_queue=task_queue, agents={"unfit": unfit}
            )
            async with worker:
                with pytest.raises(TemporalError, match=refusal):
                    await run_agent(client, "unfit", "INV-1", task_queue=task_queue)
            assert server.requests == []  # refused before the model was asked

    async def main() -> None:
        await asyncio.wait_for(work(await connect(temporal_address)), 60)

    asyncio.run(main())
