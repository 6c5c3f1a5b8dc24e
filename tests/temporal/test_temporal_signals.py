"""The caller's side of a session workflow: prompts as updates, results and cancel as signals."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from temporal_workers import free_port
from temporalio.client import Client

from toolreel.adapters import structure
from toolreel.adapters.records import event_data
from toolreel.core import Cancelled, Finish, ToolCall, ToolFinished
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, tool
from toolreel.shell.demo import TOOLS
from toolreel.shell.errors import UnknownApproval
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HookDecision, PreToolUseEvent
from toolreel.shell.scripted import ScriptedServer, calculator, text, tool_calls
from toolreel.temporal import (
    SessionStart,
    SessionWorkflow,
    approve,
    connect,
    deny,
    last_finish,
    pending_approvals,
    run_session,
    session_worker,
    start_session,
)

started = asyncio.Event()


@tool
async def wait_long(seconds: float) -> str:
    """Wait a long time (until cancelled)."""
    started.set()
    await asyncio.sleep(seconds)
    return "waited"


def script(request: dict[str, Any]) -> Any:
    """`wait_long` for a prompt that asks to wait; the calculator for the rest."""
    last = request["messages"][-1]
    if last["role"] == "user" and "wait" in last["content"]:
        return tool_calls(("call_wait", "wait_long", {"seconds": 60}))
    return calculator(request)


def options(server: ScriptedServer) -> AgentOptions:
    return AgentOptions(
        base_url=server.url, model="scripted", api_key="k", tools=[*TOOLS, wait_long]
    )


def on_temporal(address: str, work: Any) -> Any:
    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(address)), 90)  # a hang fails

    return asyncio.run(main())


def test_a_session_awaiting_a_result_survives_a_worker_restart_and_goes_on_on_a_signal(
    temporal_address: str, calculator: ScriptedServer
) -> None:
    task_queue = f"q-{uuid.uuid4().hex[:8]}"

    async def work(client: Client) -> Any:
        start = SessionStart(auto_execute=False)
        async with session_worker(client, options(calculator), task_queue=task_queue):
            handle = await start_session(
                client, "What is 25 plus 17?", task_queue=task_queue, start=start
            )
            while await handle.query(SessionWorkflow.phase) != "awaiting_results":
                await asyncio.sleep(0.05)
            pending = await handle.query(SessionWorkflow.pending)
        # no worker now; a new one takes the session over when the result comes
        async with session_worker(client, options(calculator), task_queue=task_queue):
            call = structure(pending[0], ToolCall)
            result = ToolFinished(call_id=call.id, output='{"result": 42}')
            await handle.signal(SessionWorkflow.event, event_data(result))
            return pending, await handle.result()

    pending, record = on_temporal(temporal_address, work)
    assert [(data["id"], data["name"]) for data in pending] == [("call_1_1", "add")]
    finish = last_finish(record)
    assert finish is not None and finish.text == "The answer is 42."


deleted: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (a human approves each call)."""
    deleted.append(path)
    return f"deleted {path}"


def deleting(request: dict[str, Any]) -> Any:
    """Delete two files at once; then say what the tools answered."""
    last = request["messages"][-1]
    if last["role"] == "user":
        return tool_calls(
            ("call_a", "delete", {"path": "a.txt"}), ("call_b", "delete", {"path": "b.txt"})
        )
    answers = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    return text(" | ".join(answers))


def test_a_turn_paused_for_approval_survives_a_worker_restart_and_goes_on_on_decisions(
    temporal_address: str,
) -> None:
    task_queue = f"q-{uuid.uuid4().hex[:8]}"
    deleted.clear()

    async def work(client: Client) -> Any:
        with ScriptedServer(deleting) as model:
            gated = attrs.evolve(options(model), tools=[delete])
            async with session_worker(client, gated, task_queue=task_queue):
                handle = await start_session(client, "Tidy up", task_queue=task_queue)
                while await handle.query(SessionWorkflow.phase) != "awaiting_approval":
                    await asyncio.sleep(0.05)
                held = await pending_approvals(handle)
            # the first worker is gone; a new one takes the paused session over
            async with session_worker(client, gated, task_queue=task_queue):
                refused = r"can't handle event Approved\(call_id='call_zzz'\) when phase=AWAIT"
                with pytest.raises(UnknownApproval, match=refused):  # in the core's words
                    await approve(handle, "call_zzz")
                await approve(handle, "call_a")
                await deny(handle, "call_b", "b.txt is still needed")
                return held, await handle.result(), await handle.query(SessionWorkflow.rejected)

    held, record, rejected = on_temporal(temporal_address, work)
    assert [(r.call.id, r.call.name) for r in held] == [("call_a", "delete"), ("call_b", "delete")]
    assert deleted == ["a.txt"]  # the denied call never ran
    finish = last_finish(record)
    assert finish is not None and finish.reason is FinishReason.COMPLETED
    assert finish.text == "deleted a.txt | b.txt is still needed"
    assert rejected == []


def test_a_chat_takes_prompts_as_updates_and_a_cancel_as_a_signal(temporal_address: str) -> None:
    task_queue = f"q-{uuid.uuid4().hex[:8]}"

    async def work(client: Client) -> list[Finish]:
        with ScriptedServer(script) as server:
            async with session_worker(client, options(server), task_queue=task_queue):
                handle = await start_session(
                    client, task_queue=task_queue, start=SessionStart(one_shot=False)
                )
                waiting = asyncio.ensure_future(
                    handle.execute_update(SessionWorkflow.prompt, "Please wait.")
                )
                await asyncio.wait_for(started.wait(), 30)
                await handle.signal(SessionWorkflow.event, event_data(Cancelled()))
                first = await waiting
                second = await handle.execute_update(SessionWorkflow.prompt, "What is 1 plus 2?")
                await handle.signal(SessionWorkflow.close)
                await handle.result()
        return [structure(first, Finish), structure(second, Finish)]

    cancelled, answered = on_temporal(temporal_address, work)
    assert cancelled.reason is FinishReason.CANCELLED
    assert answered.text == "The answer is 3."


def test_importing_toolreel_shell_does_not_load_temporalio() -> None:
    code = "import sys, toolreel.shell, toolreel.cli; print('temporalio' in sys.modules)"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout == "False\n"


def test_pre_tool_use_hooks_run_on_the_worker_and_their_decision_is_folded(
    temporal_address: str, calculator: ScriptedServer
) -> None:
    seen: list[str] = []

    def gate(event: PreToolUseEvent) -> HookDecision:
        seen.append(f"{event.tool_name} {event.tool_input} after {len(event.history)} messages")
        return HookDecision(continue_=False, reason="adding is closed today")

    hooked = attrs.evolve(options(calculator), hooks={HOOK_PRE_TOOL_USE: [gate]})
    task_queue = f"q-{uuid.uuid4().hex[:8]}"

    async def work(client: Client) -> Any:
        async with session_worker(client, hooked, task_queue=task_queue):
            return await run_session(client, "What is 25 plus 17?", task_queue=task_queue)

    record = on_temporal(temporal_address, work)
    assert seen == ["add {'a': 25, 'b': 17} after 1 messages"]  # the prompt
    decided = [data for data in record.events if data["type"] == "HookDecided"]
    assert [data["decision"] for data in decided] == [
        {"type": "Blocked", "reason": "adding is closed today"}
    ]
    results = [data for data in record.events if data["type"] == "ToolFinished"]
    assert results == []  # a blocked call never runs
    assert last_finish(record) is not None


def test_a_signal_that_is_no_event_is_refused_and_the_session_goes_on(
    temporal_address: str, calculator: ScriptedServer
) -> None:
    task_queue = f"q-{uuid.uuid4().hex[:8]}"

    async def work(client: Client) -> Any:
        async with session_worker(client, options(calculator), task_queue=task_queue):
            handle = await start_session(
                client, task_queue=task_queue, start=SessionStart(one_shot=False)
            )
            await handle.signal(SessionWorkflow.event, {"type": "NoSuchEvent"})
            finish = await handle.execute_update(SessionWorkflow.prompt, "What is 2 plus 3?")
            refused = await handle.query(SessionWorkflow.rejected)
            await handle.signal(SessionWorkflow.close)
            await handle.result()
            return refused, structure(finish, Finish)

    refused, finish = on_temporal(temporal_address, work)
    assert len(refused) == 1 and "NoSuchEvent" in refused[0]
    assert finish.text == "The answer is 5."


def test_an_unreachable_server_is_one_error_line_in_a_process_that_exits_cleanly() -> None:
    toolreel = Path(sys.executable).with_name("toolreel")
    done = subprocess.run(
        [toolreel, "run", "--temporal", f"127.0.0.1:{free_port()}", "hi"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot reach Temporal at 127.0.0.1:")
    assert len(done.stderr.splitlines()) == 1
