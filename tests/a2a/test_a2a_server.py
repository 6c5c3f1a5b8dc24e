"""`toolreel.a2a`: a toolreel agent as an A2A server, driven by `a2a-sdk`'s own client over HTTP.

The app is served by uvicorn on 127.0.0.1 (a free port) in the test's event loop, with a
scripted model (FunctionModel) and a journal file; a restart serves a new app on the same file.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("a2a", reason="toolreel.a2a needs the A2A SDK: pip install 'toolreel[a2a]'")

import httpx
import uvicorn
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers import get_artifact_text, get_message_text, new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from toolreel.a2a import app
from toolreel.shell import AgentOptions, tool
from toolreel.testing import FunctionModel, ToolCalls, call

OPTIONS = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test")


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool(requires_approval=True)
def wipe(path: str) -> str:
    """Delete a file (held for approval)."""
    return f"wiped {path}"


def answers(messages: Any, info: Any) -> Any:
    """Call add once, then answer with what it gave."""
    last = messages[-1]
    if last.tool_rounds:
        return f"the sum is {last.tool_rounds[-1].results[0].content}"
    return ToolCalls([call("add", a=2, b=3)])


def wipes(messages: Any, info: Any) -> Any:
    """Call wipe (held), then answer with its result."""
    last = messages[-1]
    if last.tool_rounds:
        return f"done: {last.tool_rounds[-1].results[0].content}"
    return ToolCalls([call("wipe", path="/tmp/x")])


@contextlib.asynccontextmanager
async def served(journal: Path, model: Any, tools: list[Any], **given: Any) -> AsyncIterator[str]:
    """The app on 127.0.0.1 (a free port) for the block's life: its URL."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        options = AgentOptions(
            model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test", tools=tools
        )
        asgi = app(options, journal=journal, model=model, url=url, **given)
        server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: server.serve(sockets=[sock]))
            while not server.started:
                await anyio.sleep(0.01)
            try:
                yield url
            finally:
                server.should_exit = True


@contextlib.asynccontextmanager
async def a2a_client(url: str, *, streaming: bool = False) -> AsyncIterator[Client]:
    """a2a-sdk's client of the agent at `url` (its card read from there)."""
    async with httpx.AsyncClient(timeout=30) as http:
        yield await create_client(url, ClientConfig(streaming=streaming, httpx_client=http))


async def get_task(url: str, task_id: str) -> Task:
    """`tasks/get` of the task named."""
    async with a2a_client(url) as client:
        return await client.get_task(GetTaskRequest(id=task_id))


def ask(
    text: str = "", *, context: str = "", task: str = "", parts: Any = None
) -> SendMessageRequest:
    """A user message (text, or the parts given) in the context and task named."""
    message = Message(
        message_id=f"m-{text or 'parts'}-{id(parts)}",
        role=Role.ROLE_USER,
        parts=parts or [new_text_part(text)],
        context_id=context,
        task_id=task,
    )
    return SendMessageRequest(message=message)


async def send(
    url: str, request: SendMessageRequest, *, streaming: bool = False
) -> list[StreamResponse]:
    """What the agent answers a message, every response of it."""
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(url, ClientConfig(streaming=streaming, httpx_client=http))
        return [item async for item in client.send_message(request)]


def final_task(responses: list[StreamResponse]) -> Task:
    """The task the (non-streaming) answer is."""
    assert responses[-1].HasField("task"), responses
    return responses[-1].task


def test_the_card_names_the_chat_skill_and_each_tool(tmp_path: Path) -> None:
    async def main() -> Any:
        async with (
            served(tmp_path / "j.jsonl", FunctionModel(answers), [add]) as url,
            httpx.AsyncClient() as http,
        ):
            return await A2ACardResolver(http, url).get_agent_card()

    card = anyio.run(main)
    assert [skill.id for skill in card.skills] == ["chat", "add"]
    assert card.skills[1].description == "Add two numbers."
    assert card.capabilities.streaming
    assert card.supported_interfaces[0].url.startswith("http://127.0.0.1:")


def test_send_completes_with_the_answer_and_the_context_is_the_session(tmp_path: Path) -> None:
    async def main() -> Task:
        async with served(tmp_path / "j.jsonl", FunctionModel(answers), [add]) as url:
            return final_task(await send(url, ask("add 2 and 3")))

    task = anyio.run(main)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(task.artifacts[0]) == "the sum is 5.0"
    assert task.id == f"{task.context_id}-0"


def test_stream_tells_working_then_the_text_then_completed(tmp_path: Path) -> None:
    async def main() -> list[StreamResponse]:
        async with served(tmp_path / "j.jsonl", FunctionModel(answers), [add]) as url:
            return await send(url, ask("add 2 and 3"), streaming=True)

    responses = anyio.run(main)
    states = [r.status_update.status.state for r in responses if r.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    chunks = [r.artifact_update for r in responses if r.HasField("artifact_update")]
    assert chunks and get_artifact_text(chunks[-1].artifact) == "the sum is 5.0"
    assert chunks[-1].last_chunk and not chunks[-1].append  # the whole answer replaces chunks
    final = responses[-1].status_update.status.message
    assert get_message_text(final) == "the sum is 5.0"


def test_a_held_call_asks_for_input_and_a_second_message_approves_it(tmp_path: Path) -> None:
    async def main() -> tuple[Task, Task]:
        async with served(tmp_path / "j.jsonl", FunctionModel(wipes), [wipe]) as url:
            held = final_task(await send(url, ask("wipe /tmp/x")))
            decision = new_data_part({"approve": ["call_1"]})
            again = ask(parts=[decision], context=held.context_id, task=held.id)
            return held, final_task(await send(url, again))

    held, done = anyio.run(main)
    assert held.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    asked = held.status.message
    assert "call_1: wipe" in get_message_text(asked)
    listed = [MessageToDict(p.data) for p in asked.parts if p.HasField("data")]
    assert listed == [
        {"approvals": [{"call_id": "call_1", "name": "wipe", "arguments": {"path": "/tmp/x"}}]}
    ]
    assert done.id == held.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(done.artifacts[0]) == "done: wiped /tmp/x"


def test_no_denies_every_held_call_and_a_muddled_answer_asks_again(tmp_path: Path) -> None:
    async def main() -> tuple[Task, Task]:
        async with served(tmp_path / "j.jsonl", FunctionModel(wipes), [wipe]) as url:
            held = final_task(await send(url, ask("wipe /tmp/x")))
            muddled = final_task(await send(url, ask("maybe", context=held.context_id)))
            return muddled, final_task(await send(url, ask("no", context=held.context_id)))

    muddled, done = anyio.run(main)
    # A message to the context of a paused turn goes to that turn's task.
    assert muddled.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "'maybe' decides nothing" in get_message_text(muddled.status.message)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert "denied" in get_artifact_text(done.artifacts[0])


def test_a_restarted_server_reads_the_task_from_the_journal(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"

    async def main() -> tuple[Task, Task, Task]:
        async with served(journal, FunctionModel(answers), [add]) as url:
            sent = final_task(await send(url, ask("add 2 and 3")))
        async with served(journal, FunctionModel(answers), [add]) as url:
            async with a2a_client(url) as client:
                got = await client.get_task(GetTaskRequest(id=sent.id))
            second = final_task(await send(url, ask("again", context=sent.context_id)))
        return sent, got, second

    sent, got, second = anyio.run(main)
    assert (got.id, got.context_id) == (sent.id, sent.context_id)
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_artifact_text(got.artifacts[0]) == "the sum is 5.0"
    assert get_message_text(got.history[0]) == "add 2 and 3"
    # The same context goes on with the same session: its second turn, a second task.
    assert second.id == f"{sent.context_id}-1"


async def slow() -> str:
    """Take a minute (a call the client cancels)."""
    await anyio.sleep(60)
    return "done"


def calls_slow(messages: Any, info: Any) -> Any:
    """Call slow, then answer."""
    return "late" if messages[-1].tool_rounds else ToolCalls([call("slow")])


def test_cancel_interrupts_a_running_turn_and_the_journal_says_cancelled(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"

    async def main() -> tuple[Task, Task, Task]:
        async with served(journal, FunctionModel(calls_slow), [slow]) as url:
            request = ask("be slow")
            request.configuration.return_immediately = True
            started = final_task(await send(url, request))
            async with a2a_client(url) as client:
                cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
        async with served(journal, FunctionModel(calls_slow), [slow]) as url:
            read = await get_task(url, started.id)
        return started, cancelled, read

    started, cancelled, read = anyio.run(main)
    assert started.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert read.status.state == TaskState.TASK_STATE_CANCELED  # the journal's turn: cancelled


def test_cancel_of_a_paused_turn_cancels_its_held_calls(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"

    async def main() -> tuple[Task, Task]:
        async with served(journal, FunctionModel(wipes), [wipe]) as url:
            held = final_task(await send(url, ask("wipe /tmp/x")))
            async with a2a_client(url) as client:
                cancelled = await client.cancel_task(CancelTaskRequest(id=held.id))
        async with served(journal, FunctionModel(wipes), [wipe]) as url:
            read = await get_task(url, held.id)
        return cancelled, read

    cancelled, read = anyio.run(main)
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert read.status.state == TaskState.TASK_STATE_CANCELED


async def rpc(url: str, body: Any, **headers: str) -> httpx.Response:
    """A raw JSON-RPC POST (bytes as they are, else as JSON)."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0", **headers}
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, content=content, headers=headers)


def test_malformed_requests_and_unknown_ids_are_answered_with_the_protocols_errors(
    tmp_path: Path,
) -> None:
    def send_params(message: dict[str, Any]) -> dict[str, Any]:
        """A SendMessage request."""
        return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}

    text = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}

    async def main() -> dict[str, Any]:
        async with served(tmp_path / "j.jsonl", FunctionModel(answers), [add]) as url:
            get = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x-0"}}
            return {
                "parse": await rpc(url, b"{not json"),
                "method": await rpc(url, {**get, "method": "Nope"}),
                "get": await rpc(url, get),
                "task": await rpc(url, send_params({**text, "taskId": "nowhere-3"})),
                "empty": await rpc(url, send_params({**text, "parts": [{"text": "  "}]})),
                "context": await rpc(url, send_params({**text, "contextId": "bad\x07id"})),
                "shape": await rpc(url, send_params({"role": 7})),
            }

    got = anyio.run(main)
    codes = {name: answer.json()["error"]["code"] for name, answer in got.items()}
    assert codes == {
        "parse": -32700,
        "method": -32601,
        "get": -32001,  # TaskNotFoundError
        "task": -32001,
        "empty": -32602,
        "context": -32602,
        "shape": -32602,
    }


def test_a_0_3_client_s_message_send_is_answered_too(tmp_path: Path) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "messageId": "m1",
                "role": "user",
                "parts": [{"kind": "text", "text": "add 2 and 3"}],
            }
        },
    }

    async def main() -> Any:
        async with served(tmp_path / "j.jsonl", FunctionModel(answers), [add]) as url:
            return (await rpc(url, body, **{"A2A-Version": "0.3"})).json()["result"]

    task = anyio.run(main)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "the sum is 5.0"}]


def wipes_two(messages: Any, info: Any) -> Any:
    """Call wipe twice (both held), then answer with both results."""
    last = messages[-1]
    if last.tool_rounds:
        return " | ".join(result.content for result in last.tool_rounds[-1].results)
    return ToolCalls([call("wipe", path="/a"), call("wipe", path="/b")])


def test_calls_decided_one_message_at_a_time_and_a_denial_s_reason_reaches_the_model(
    tmp_path: Path,
) -> None:
    async def main() -> tuple[Task, Task]:
        async with served(tmp_path / "j.jsonl", FunctionModel(wipes_two), [wipe]) as url:
            held = final_task(await send(url, ask("wipe both")))
            ids = [p["call_id"] for p in held_calls(held)]
            first = new_data_part({"approve": ids[:1]})
            half = final_task(await send(url, ask(parts=[first], task=held.id)))
            second = new_data_part({"deny": {ids[1]: "not /b, it is shared"}})
            return half, final_task(await send(url, ask(parts=[second], task=held.id)))

    half, done = anyio.run(main)
    assert half.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert [p["arguments"] for p in held_calls(half)] == [{"path": "/b"}]  # still held
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    answer = get_artifact_text(done.artifacts[0])
    assert answer.startswith("wiped /a | ")
    assert "not /b, it is shared" in answer


def held_calls(task: Task) -> list[dict[str, Any]]:
    """The calls an input-required task's status message lists as held."""
    data = [MessageToDict(p.data) for p in task.status.message.parts if p.HasField("data")]
    return list(data[0]["approvals"])


def test_a_message_to_a_context_whose_turn_runs_is_refused_until_it_ends(tmp_path: Path) -> None:
    async def main() -> tuple[dict[str, Any], Task]:
        async with served(tmp_path / "j.jsonl", FunctionModel(calls_slow), [slow]) as url:
            request = ask("be slow")
            request.configuration.return_immediately = True
            started = final_task(await send(url, request))
            again = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "messageId": "m2",
                        "role": "ROLE_USER",
                        "contextId": started.context_id,
                        "parts": [{"text": "and now?"}],
                    }
                },
            }
            refused = (await rpc(url, again)).json()
            async with a2a_client(url) as client:
                cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
            return refused, cancelled

    refused, cancelled = anyio.run(main)
    assert refused["error"]["code"] == -32004  # UnsupportedOperationError
    assert "a turn is running" in refused["error"]["message"]
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
