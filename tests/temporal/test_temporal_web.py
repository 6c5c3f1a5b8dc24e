"""`toolreel.web.app(options, sessions=WorkflowChats(client))` serves session workflows on Temporal
as it serves local sessions: the UI message stream (text while the model writes), the plain
events, approvals both ways, the session list.

Against a real dev server (conftest.py); the app is driven in-process (ASGI) on the
same event loop as the Temporal client and an in-process worker. Where a local app
serves the same model, the parts it streams are the yardstick.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from temporalio.client import Client

from toolreel.adapters import MemoryJournal
from toolreel.core import ModelEvent, ModelRequest, ModelResponded, TextDelta, Usage
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, tool
from toolreel.shell.scripted import Reply, ScriptedServer
from toolreel.temporal import (
    SessionWorkflow,
    WorkflowChats,
    connect,
    last_finish,
    session_worker,
)
from toolreel.web import app

sys.path.append(str(Path(__file__).parents[1] / "web"))  # the UI stream's schema checks
from web_support import check_ui, schema_errors

USAGE = Usage(input_tokens=5, output_tokens=3)
DELETED: list[str] = []


class Waiting:
    """A model that writes "Hello", waits until the page has read it, then ends its call."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.read = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="Hello")
        self.log.append("model wrote 'Hello'")
        with contextlib.suppress(TimeoutError):  # a guard, not a timing
            await asyncio.wait_for(self.read.wait(), 60)
        self.log.append("model ends the call")
        yield TextDelta(text=", world.")
        yield ModelResponded(finish_reason="stop", usage=USAGE)

    async def aclose(self) -> None:
        pass


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


def deleting(request: dict[str, Any]) -> Reply:
    """Calls `delete` on a.txt (as c1), then answers with what the tool said."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(text="On it. ", calls=(("c1", "delete", json.dumps({"path": "a.txt"})),))
    return Reply(text="Result: " + results[0])


@pytest.fixture
def deleter() -> Iterator[ScriptedServer]:
    DELETED.clear()
    with ScriptedServer(deleting) as server:
        yield server


def queue() -> str:
    return f"q-{uuid.uuid4().hex[:8]}"


def on_temporal(address: str, work: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        return await asyncio.wait_for(work(await connect(address)), 120)  # a hang fails

    return asyncio.run(main())


def chat_body(text: str, chat_id: str) -> dict[str, Any]:
    """The body useChat's DefaultChatTransport posts for a new user message."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message", "messageId": None}


def sse_data(text: str) -> list[str]:
    """The `data:` payloads of SSE text, in order."""
    return [
        line.removeprefix("data: ")
        for event in text.split("\n\n")
        for line in event.split("\n")
        if line.startswith("data: ")
    ]


def ui_parts(text: str, *, continued: bool = False) -> list[dict[str, Any]]:
    """The parts of a UI message stream (ending with `[DONE]`), checked against the `ai` schema
    (a message's continuation: each part alone; its steps began in the message before)."""
    data = sse_data(text)
    assert data[-1] == "[DONE]"
    parts = [json.loads(d) for d in data[:-1]]
    if continued:
        assert [error for part in parts for error in schema_errors(part)] == []
    else:
        check_ui(parts)
    return parts


def plain(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The (type, data) pairs of a plain event stream."""
    pairs = []
    for event in (e for e in text.split("\n\n") if e):
        kind, data = event.split("\n")
        pairs.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return pairs


async def post(web: Any, path: str, body: dict[str, Any]) -> httpx2.Response:
    """One POST to the ASGI app."""
    transport = httpx2.ASGITransport(app=web)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post(path, json=body)


async def get(web: Any, path: str) -> Any:
    """One GET of JSON from the ASGI app."""
    transport = httpx2.ASGITransport(app=web)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        response = await client.get(path)
        assert response.status_code == 200, response.text
        return response.json()


async def streamed(
    web: Any,
    path: str,
    body: dict[str, Any],
    chunk: Callable[[str], None],
    leave: asyncio.Event | None = None,
) -> str:
    """POST to the ASGI app itself, telling `chunk` each body chunk as the app sends it;
    the page goes away once `leave` is set (else once the response is over)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent, done, whole = False, asyncio.Event(), []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}
        await (leave or done).wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert message["status"] == 200
        elif message["type"] == "http.response.body":
            text = message.get("body", b"").decode()
            whole.append(text)
            chunk(text)
            if not message.get("more_body", False):
                done.set()

    await web(scope, receive, send)
    return "".join(whole)


def unnamed(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts without the message's id (each response makes its own)."""
    return [{k: v for k, v in p.items() if k != "messageId"} for p in parts]


def test_the_ui_stream_of_a_temporal_session_shows_text_while_the_model_writes(
    temporal_address: str,
) -> None:
    model = Waiting()
    task_queue = queue()
    options = AgentOptions(model="m", base_url="http://127.0.0.1:9", api_key="k")

    def page(chunk: str) -> None:
        for data in sse_data(chunk):
            if '"text-delta"' in data:
                model.log.append(f"page read {json.loads(data)['delta']!r}")
                model.read.set()

    async def work(client: Client) -> str:
        web = app(options, sessions=WorkflowChats(client, task_queue=task_queue))
        async with session_worker(client, options, task_queue=task_queue, model=model):
            return await streamed(web, "/api/chat", chat_body("Say hello", "web-1"), page)

    parts = ui_parts(on_temporal(temporal_address, work))
    assert model.log == [
        "model wrote 'Hello'",
        "page read 'Hello'",
        "model ends the call",
        "page read ', world.'",
    ]
    local = Waiting()
    local.read.set()

    async def locally() -> str:
        web = app(options, journal=MemoryJournal(), model=local)
        return (await post(web, "/api/chat", chat_body("Say hello", "local-1"))).text

    assert unnamed(parts) == unnamed(
        ui_parts(asyncio.run(locally()))
    )  # the parts a local app sends
    assert parts[-1]["messageMetadata"]["reason"] == "completed"


def test_a_page_that_leaves_mid_turn_cancels_the_session_workflows_turn(
    temporal_address: str,
) -> None:
    model = Waiting()
    task_queue = queue()
    options = AgentOptions(model="m", base_url="http://127.0.0.1:9", api_key="k")
    leave = asyncio.Event()

    def page(chunk: str) -> None:
        if '"text-delta"' in chunk:
            leave.set()  # the browser's Stop, while the model still writes

    async def work(client: Client) -> Any:
        web = app(options, sessions=WorkflowChats(client, task_queue=task_queue))
        async with session_worker(client, options, task_queue=task_queue, model=model):
            await streamed(web, "/api/chat", chat_body("Say hello", "web-gone"), page, leave)
            handle = client.get_workflow_handle("web-gone")
            while await handle.query(SessionWorkflow.phase) != "idle":
                await asyncio.sleep(0.05)
            record = await handle.query(SessionWorkflow.record)
            model.read.set()
            return record

    finish = last_finish(on_temporal(temporal_address, work))
    assert finish is not None and finish.reason is FinishReason.CANCELLED


def test_a_temporal_session_pauses_for_approval_and_use_chats_answer_goes_on(
    temporal_address: str, deleter: ScriptedServer
) -> None:
    task_queue = queue()
    options = AgentOptions(model="m", base_url=deleter.url, api_key="sk-test", tools=[delete])

    async def work(client: Client) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
        web = app(options, sessions=WorkflowChats(client, task_queue=task_queue))
        async with session_worker(client, options, task_queue=task_queue):
            first = ui_parts((await post(web, "/api/chat", chat_body("Delete a.txt", "w-2"))).text)
            prompt_again = await post(web, "/api/chat", chat_body("And b.txt", "w-2"))
            assert prompt_again.status_code == 409, prompt_again.text
            assert prompt_again.json()["approvals"] == ["c1"]
            held = {
                "id": first[0]["messageId"],
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "text", "text": "On it. ", "state": "done"},
                    {
                        "type": "tool-delete",
                        "toolCallId": "c1",
                        "input": {"path": "a.txt"},
                        "state": "approval-responded",
                        "approval": {"id": "c1", "approved": True},
                    },
                ],
            }
            user = chat_body("Delete a.txt", "w-2")["messages"][0]
            body = {
                "id": "w-2",
                "messages": [user, held],
                "trigger": "submit-message",
                "messageId": held["id"],
            }
            continued = ui_parts((await post(web, "/api/chat", body)).text, continued=True)
            return first, continued, await get(web, "/api/sessions/w-2")

    first, continued, detail = on_temporal(temporal_address, work)
    assert {"type": "tool-approval-request", "approvalId": "c1", "toolCallId": "c1"} in first
    assert first[-1]["messageMetadata"] == {"reason": "awaiting_approval", "approvals": ["c1"]}
    assert continued[0] == {"type": "start", "messageId": first[0]["messageId"]}
    assert not [p for p in continued if p["type"].startswith("tool-input")]  # not announced again
    output = next(p for p in continued if p["type"] == "tool-output-available")
    assert output["toolCallId"] == "c1" and output["output"] == "deleted a.txt"
    assert "".join(p["delta"] for p in continued if p["type"] == "text-delta") == (
        "Result: deleted a.txt"
    )
    assert continued[-1]["messageMetadata"]["reason"] == "completed"
    assert DELETED == ["a.txt"]  # by the worker, once
    [turn] = detail["turns"]
    assert turn["prompt"] == "Delete a.txt" and turn["outcome"] == "completed"
    assert turn["answer"] == "Result: deleted a.txt"


def test_a_denial_over_the_plain_events_reaches_the_model_and_the_session_is_listed(
    temporal_address: str, deleter: ScriptedServer
) -> None:
    task_queue = queue()
    options = AgentOptions(model="m", base_url=deleter.url, api_key="sk-test", tools=[delete])

    async def work(client: Client) -> tuple[list[Any], list[Any], Any]:
        web = app(options, sessions=WorkflowChats(client, task_queue=task_queue))
        async with session_worker(client, options, task_queue=task_queue):
            paused = plain((await post(web, "/api/events", {"id": "w-3", "message": "Go"})).text)
            body = {"id": "w-3", "call_id": "c1", "approved": False, "reason": "keep it"}
            body["protocol"] = "events"
            denied = plain((await post(web, "/api/approvals", body)).text)
            unknown = await post(web, "/api/approvals", {**body, "call_id": "c9"})
            assert unknown.status_code == 400, unknown.text
            return paused, denied, await get(web, "/api/sessions")

    paused, denied, listed = on_temporal(temporal_address, work)
    assert paused[0] == ("session", {"id": "w-3"})
    assert (
        "approval_requested",
        {"id": "c1", "name": "delete", "arguments": {"path": "a.txt"}, "reason": ""},
    ) in paused
    assert paused[-1][0] == "done" and paused[-1][1]["reason"] == "awaiting_approval"
    results = [data for kind, data in denied if kind == "tool_result"]
    assert [(r["id"], r["content"], r["is_error"]) for r in results] == [("c1", "keep it", True)]
    assert denied[-1] == (
        "done",
        {"reason": "completed", "max_turns_reached": False, "text": "Result: keep it"},
    )
    assert DELETED == []
    assert [row["id"] for row in listed["sessions"]] == ["w-3"]
