"""Human approval over HTTP: a held call is a `tool-approval-request` part and the message
ends paused; `POST /api/approvals` decides it and streams the turn that goes on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_web_app import call, chat_body, plain_events_of, ui_parts_of
from web_support import check_ui

from toolreel.adapters import MemoryJournal
from toolreel.shell import AgentOptions, tool
from toolreel.shell.scripted import Reply, ScriptedServer
from toolreel.web import app

DELETED: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


def model(request: dict) -> Reply:
    """Calls `delete` once (as c1), then answers with the tool result it read."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(calls=(("c1", "delete", json.dumps({"path": "a.txt"})),))
    return Reply(text="Result: " + results[0])


@pytest.fixture
def web() -> Iterator[Any]:
    DELETED.clear()
    with ScriptedServer(model) as server:
        options = AgentOptions(model="m", base_url=server.url, api_key="sk-test", tools=[delete])
        yield app(options, journal=MemoryJournal())


def test_a_held_call_is_an_approval_request_and_approving_goes_on(web: Any) -> None:
    parts = ui_parts_of(call(web, "POST", "/api/chat", chat_body("Delete a.txt")))
    check_ui(parts)
    assert {"type": "tool-approval-request", "approvalId": "c1", "toolCallId": "c1"} in parts
    assert parts[-1]["type"] == "finish" and parts[-1]["finishReason"] == "tool-calls"
    assert parts[-1]["messageMetadata"] == {"reason": "awaiting_approval", "approvals": ["c1"]}
    body = {"id": "chat-1", "call_id": "c1", "approved": True}
    parts = ui_parts_of(call(web, "POST", "/api/approvals", body))
    check_ui(parts)
    assert {"type": "tool-output-available", "toolCallId": "c1"}.items() <= next(
        p for p in parts if p["type"] == "tool-output-available"
    ).items()
    assert "Result: deleted a.txt" in "".join(p.get("delta", "") for p in parts)
    assert DELETED == ["a.txt"]


def test_a_denial_over_the_plain_stream_gives_the_model_the_reason(web: Any) -> None:
    events = plain_events_of(
        call(web, "POST", "/api/events", {"id": "chat-2", "message": "Delete a.txt"})
    )
    assert (
        "approval_requested",
        {"id": "c1", "name": "delete", "arguments": {"path": "a.txt"}, "reason": ""},
    ) in events
    assert events[-1] == (
        "done",
        {
            "reason": "awaiting_approval",
            "max_turns_reached": False,
            "text": "",
            "approvals": ["c1"],
        },
    )
    body = {
        "id": "chat-2",
        "call_id": "c1",
        "approved": False,
        "reason": "no",
        "protocol": "events",
    }
    events = plain_events_of(call(web, "POST", "/api/approvals", body))
    assert events[-1][1]["text"] == "Result: no" and DELETED == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"id": "chat-1", "call_id": "nope", "approved": True}, 400),
        ({"id": "unknown", "call_id": "c1", "approved": True}, 404),
        ({"id": "chat-1", "call_id": "c1", "approved": "yes"}, 400),
        ({"id": "chat-1", "approved": True}, 400),
    ],
)
def test_a_bad_decision_is_an_error_not_a_stream(web: Any, body: dict, status: int) -> None:
    ui_parts_of(call(web, "POST", "/api/chat", chat_body("Delete a.txt")))
    response = call(web, "POST", "/api/approvals", body)
    assert response.status_code == status, response.text
    assert "error" in response.json()


def test_a_prompt_while_paused_is_refused(web: Any) -> None:
    ui_parts_of(call(web, "POST", "/api/chat", chat_body("Delete a.txt")))
    response = call(web, "POST", "/api/chat", chat_body("something else"))
    assert response.status_code == 409 and "waits for approval" in response.json()["error"]
    assert response.json()["approvals"] == ["c1"]


def test_the_session_list_marks_a_session_waiting_for_approval(web: Any) -> None:
    ui_parts_of(call(web, "POST", "/api/chat", chat_body("Delete a.txt")))
    [row] = call(web, "GET", "/api/sessions").json()["sessions"]
    assert row["outcome"] == "awaiting_approval" and row["approvals"] == 1
    [turn] = call(web, "GET", "/api/sessions/chat-1").json()["turns"]
    assert turn["outcome"] == "awaiting_approval"
    assert turn["approvals"] == [
        {"id": "c1", "name": "delete", "arguments": {"path": "a.txt"}, "reason": ""}
    ]
    ui_parts_of(
        call(web, "POST", "/api/approvals", {"id": "chat-1", "call_id": "c1", "approved": True})
    )
    [row] = call(web, "GET", "/api/sessions").json()["sessions"]
    assert row["outcome"] == "completed" and row["approvals"] == 0
