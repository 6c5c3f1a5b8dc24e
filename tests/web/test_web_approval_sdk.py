"""useChat's own approval flow over `POST /api/chat`: `addToolApprovalResponse` marks the tool
part `approval-responded`, the chat posts its messages again ending with that assistant
message, and the server decides the held calls and continues the message.

The bodies are the ones the `ai` package (7.0.173) posts: `DefaultChatTransport` sends
`{id, messages, trigger: "submit-message", messageId}` with `messageId` the assistant
message's id; its tool parts are `tool-NAME` with `state` and `approval` as
`uiMessagesSchema` has them. (The real useChat flow: test_web_usechat.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_web_app import call, chat_body, ui_parts_of
from web_support import schema_errors

from toolreel.adapters import MemoryJournal
from toolreel.core import ToolResult
from toolreel.core.notices import ToolResultReady
from toolreel.shell import AgentOptions, tool
from toolreel.shell.scripted import Reply, ScriptedServer
from toolreel.web import app
from toolreel.web.streams import ui_parts, ui_start

DELETED: list[str] = []
PROMPT = "Delete a.txt"


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


def model(request: dict) -> Reply:
    """Calls `delete` on each file the prompt names (c1, c2, ...), then answers with the results."""
    messages = request["messages"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if results:
        return Reply(text="Result: " + "; ".join(results))
    prompt = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    files = prompt.removeprefix("Delete ").split(" and ")
    calls = [(f"c{i}", "delete", json.dumps({"path": f})) for i, f in enumerate(files, 1)]
    return Reply(text="On it. ", calls=tuple(calls))


@pytest.fixture
def web() -> Iterator[Any]:
    DELETED.clear()
    with ScriptedServer(model) as server:
        options = AgentOptions(model="m", base_url=server.url, api_key="sk-test", tools=[delete])
        yield app(options, journal=MemoryJournal())


def paused(web: Any, prompt: str = PROMPT) -> list[dict[str, Any]]:
    """The parts of the first turn, which pauses for approval."""
    parts = ui_parts_of(call(web, "POST", "/api/chat", chat_body(prompt)))
    assert parts[-1]["messageMetadata"]["reason"] == "awaiting_approval"
    return parts


def held_message(parts: list[dict[str, Any]], answers: dict[str, dict[str, Any]]) -> dict:
    """The assistant message useChat built from `parts`, with `answers` (call id ->
    `{approved, reason?}`) given by `addToolApprovalResponse`."""
    inputs = {p["toolCallId"]: p["input"] for p in parts if p["type"] == "tool-input-available"}
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    message_parts: list[dict[str, Any]] = [
        {"type": "step-start"},
        {"type": "text", "text": text, "state": "done"},
    ]
    for call_id, arguments in inputs.items():
        part = {"type": "tool-delete", "toolCallId": call_id, "input": arguments}
        if call_id in answers:
            approval = {"id": call_id, **answers[call_id]}
            part |= {"state": "approval-responded", "approval": approval}
        else:
            part |= {"state": "approval-requested", "approval": {"id": call_id}}
        message_parts.append(part)
    return {
        "id": parts[0]["messageId"],
        "role": "assistant",
        "metadata": parts[-1]["messageMetadata"],
        "parts": message_parts,
    }


def approval_body(assistant: dict, prompt: str = PROMPT, chat_id: str = "chat-1") -> dict:
    """What the chat posts once the approvals are answered: the messages end with `assistant`."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": prompt}]}
    return {
        "id": chat_id,
        "messages": [user, assistant],
        "trigger": "submit-message",
        "messageId": assistant["id"],
    }


def answered(web: Any, parts: list[dict[str, Any]], answers: dict) -> list[dict[str, Any]]:
    """The parts of the response to the answers, each valid against the `ai` schema."""
    body = approval_body(held_message(parts, answers))
    continued = ui_parts_of(call(web, "POST", "/api/chat", body))
    for part in continued:
        assert schema_errors(part) == [], part
    return continued


def text(parts: list[dict[str, Any]]) -> str:
    """The text the parts stream."""
    return "".join(p["delta"] for p in parts if p["type"] == "text-delta")


def outputs(parts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, call id) of each tool output part."""
    return [(p["type"], p["toolCallId"]) for p in parts if p["type"].startswith("tool-output")]


def test_an_approval_response_runs_the_call_and_continues_the_same_message(web: Any) -> None:
    parts = paused(web)
    continued = answered(web, parts, {"c1": {"approved": True}})
    assert continued[0] == {"type": "start", "messageId": parts[0]["messageId"]}
    assert not [p for p in continued if p["type"].startswith("tool-input")]  # not announced again
    assert outputs(continued) == [("tool-output-available", "c1")]
    assert next(p for p in continued if p["type"] == "tool-output-available")["output"] == (
        "deleted a.txt"
    )
    assert text(continued) == "Result: deleted a.txt"
    assert continued[-1]["messageMetadata"]["reason"] == "completed"
    assert DELETED == ["a.txt"]


def test_a_denial_is_output_denied_and_the_model_reads_the_reason(web: Any) -> None:
    parts = paused(web)
    continued = answered(web, parts, {"c1": {"approved": False, "reason": "keep it"}})
    assert outputs(continued) == [("tool-output-denied", "c1")]
    assert {"type": "tool-output-denied", "toolCallId": "c1"} in continued
    assert text(continued) == "Result: keep it"
    assert DELETED == []
    [turn] = call(web, "GET", "/api/sessions/chat-1").json()["turns"]
    [[held]] = [r["calls"] for r in turn["rounds"]]
    assert held["content"] == "keep it" and held["is_error"] is True


@pytest.mark.parametrize(
    ("first", "second"),
    [(False, True), (True, False), (False, False), (True, True)],
)
def test_several_held_calls_are_decided_in_one_request(web: Any, first: bool, second: bool) -> None:
    parts = paused(web, "Delete a.txt and b.txt")
    answers = {"c1": {"approved": first, "reason": "no a"}, "c2": {"approved": second}}
    continued = answered(web, parts, answers)
    kind = {True: "tool-output-available", False: "tool-output-denied"}
    assert sorted(outputs(continued), key=lambda o: o[1]) == [
        (kind[first], "c1"),
        (kind[second], "c2"),
    ]
    expected = ["a.txt"] * first + ["b.txt"] * second
    assert sorted(DELETED) == expected  # approved calls run in parallel: any order
    assert continued[-1]["messageMetadata"]["reason"] == "completed"


def test_answers_given_a_few_at_a_time_leave_the_turn_paused_until_the_last(web: Any) -> None:
    parts = paused(web, "Delete a.txt and b.txt")
    first = answered(web, parts, {"c1": {"approved": True}})
    assert outputs(first) == []  # approved calls run once every held call is decided
    assert first[-1]["messageMetadata"] == {"reason": "awaiting_approval", "approvals": ["c2"]}
    again = answered(web, parts, {"c1": {"approved": True}})  # sent again alone: still waiting
    assert [p["type"] for p in again] == ["start", "finish"] and again[-1] == first[-1]
    # c1's part is still `approval-responded` in the client's message: sent again, passed over
    both = answered(web, parts, {"c1": {"approved": True}, "c2": {"approved": True}})
    ran = [("tool-output-available", "c1"), ("tool-output-available", "c2")]
    assert sorted(outputs(both)) == ran
    assert sorted(DELETED) == ["a.txt", "b.txt"]  # run in parallel: any order


def test_responses_for_calls_not_held_are_a_400_naming_them_and_nothing_is_applied(
    web: Any,
) -> None:
    parts = paused(web)
    message = held_message(parts, {"c1": {"approved": True}})
    message["parts"].append(
        {
            "type": "tool-delete",
            "toolCallId": "ghost",
            "state": "approval-responded",
            "input": {"path": "b.txt"},
            "approval": {"id": "ghost", "approved": True},
        }
    )
    response = call(web, "POST", "/api/chat", approval_body(message))
    assert response.status_code == 400
    error = response.json()["error"]  # the core's words, for the one call not held
    assert "Approved(call_id='ghost')" in error and "Approved(call_id='c1')" not in error
    assert error.endswith(
        "call 'ghost' awaits no approval (unknown, or already decided); awaiting approval: ['c1']"
    )
    assert response.json()["unknown"] == ["ghost"] and response.json()["approvals"] == ["c1"]
    assert DELETED == []
    [row] = call(web, "GET", "/api/sessions").json()["sessions"]
    assert row["outcome"] == "awaiting_approval"


def test_responses_sent_again_after_the_turn_went_on_are_a_400(web: Any) -> None:
    parts = paused(web)
    answered(web, parts, {"c1": {"approved": True}})
    body = approval_body(held_message(parts, {"c1": {"approved": True}}))
    response = call(web, "POST", "/api/chat", body)
    assert response.status_code == 400
    assert "no call awaits approval" in response.json()["error"]
    assert DELETED == ["a.txt"]  # not run twice, and the old prompt is not asked again


def test_a_new_message_while_calls_wait_is_a_409_naming_them(web: Any) -> None:
    parts = paused(web)
    message = held_message(parts, {})  # the approval still requested
    user = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "hello?"}]}
    body = approval_body(message) | {"messages": [*approval_body(message)["messages"], user]}
    response = call(web, "POST", "/api/chat", body)
    assert response.status_code == 409
    assert response.json()["approvals"] == ["c1"]
    assert "waits for approval of delete (c1)" in response.json()["error"]
    # the bare resend of a message whose approval is not answered yet: the same
    response = call(web, "POST", "/api/chat", approval_body(message))
    assert response.status_code == 409 and response.json()["approvals"] == ["c1"]


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"id": "unknown"}, 404),
        ({"id": None}, 400),
        ({"approval": {"id": "c1", "approved": "yes"}}, 400),
        ({"approval": {"id": "c1", "approved": False, "reason": 3}}, 400),
    ],
)
def test_a_bad_approval_request_is_an_error_not_a_stream(
    web: Any, change: dict, status: int
) -> None:
    parts = paused(web)
    message = held_message(parts, {"c1": {"approved": True}})
    body = approval_body(message)
    if "approval" in change:
        message["parts"][-1]["approval"] = change["approval"]
    else:
        body |= change
    response = call(web, "POST", "/api/chat", body)
    assert response.status_code == status, response.text
    assert "error" in response.json() and DELETED == []


def test_the_fold_ends_a_call_denied_in_the_client_s_message_output_denied() -> None:
    denied = ToolResult(call_id="c1", name="delete", content="keep it", is_error=True)
    failed = ToolResult(call_id="c2", name="delete", content="boom", is_error=True)
    stream, _ = ui_start("msg_1", denied=["c1"])
    _, parts = ui_parts(stream, ToolResultReady(result=denied), 0.0)
    assert parts == [{"type": "tool-output-denied", "toolCallId": "c1"}]
    _, parts = ui_parts(stream, ToolResultReady(result=failed), 0.0)
    assert parts == [{"type": "tool-output-error", "toolCallId": "c2", "errorText": "boom"}]
