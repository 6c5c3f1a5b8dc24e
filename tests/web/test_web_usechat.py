"""A real React `useChat()` against a real `toolreel serve`: what a Next.js page gets.

chat_client.mjs renders `useChat()` from `@ai-sdk/react` (the `ai` package's Chat
and DefaultChatTransport underneath) with react-test-renderer in Node, and chats
with `toolreel serve` (scripted calculator model, temporary journal, the browser
test's tools: a `divide` that runs until stopped) in one chat id through five
turns, a remount with `resume: true` and a regenerate(); or, against a server whose
model fails, one turn; or, with `multiply` held for approval, useChat's own approval
flow (`addToolApprovalResponse` with `sendAutomaticallyWhen:
lastAssistantMessageIsCompleteWithApprovalResponses`): approve, then deny. These
tests read its summary. They run when `node` and the npm packages are installed in
`$TOOLREEL_AI_SDK` (else ~/.cache/toolreel/ai-sdk, which `.ci/run` fills) and skip
otherwise, saying why; `make test` never downloads.
The resume route's own test needs no Node.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from test_web_serve import Served
from web_support import HERE

from toolreel.shell import AgentOptions
from toolreel.shell.scripted import ScriptedServer, http_error
from toolreel.web import app

AI_SDK = Path(os.environ.get("TOOLREEL_AI_SDK") or Path.home() / ".cache/toolreel/ai-sdk")
NODE = shutil.which("node")
PACKAGES = ("ai", "@ai-sdk/react", "react", "react-test-renderer")
MISSING = [p for p in PACKAGES if not (AI_SDK / "node_modules" / p / "package.json").is_file()]


def node() -> str:
    """The `node` to run chat_client.mjs with; skips the test, saying why, if it cannot run."""
    if NODE is None:
        pytest.skip("node is not installed")
    if MISSING:
        pytest.skip(
            f"{', '.join(MISSING)} not installed in {AI_SDK} (set TOOLREEL_AI_SDK, or run "
            ".ci/run's npm install line)"
        )
    return NODE


def run_client(url: str, chat_id: str, scenario: str) -> dict[str, Any]:
    """chat_client.mjs's summary of `scenario` against the server at `url`."""
    done = subprocess.run(
        [node(), str(HERE / "chat_client.mjs"), url, chat_id, scenario],
        capture_output=True,
        text=True,
        cwd=AI_SDK,
        timeout=90,
        check=False,
    )
    assert done.stdout, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0, summary.get("failure")
    return summary


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The summary of chat_client.mjs's calculator turns against one `toolreel serve`."""
    node()
    folder = tmp_path_factory.mktemp("usechat")
    args = ["--journal", str(folder / "web.db"), "--tools", "browser_tools:TOOLS"]
    server = Served(args, folder)
    try:
        yield run_client(server.url, "usechat", "calculator")
    finally:
        server.stop()


def tool_parts(turn: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """(type, state, input, output) of each tool part of the turn's assistant message."""
    parts = turn["message"]["parts"]
    return [
        (p["type"], p["state"], p["input"], p.get("output"))
        for p in parts
        if p["type"].startswith("tool-")
    ]


def answer(turn: dict[str, Any]) -> str:
    """The text of the turn's assistant message."""
    return "".join(p["text"] for p in turn["message"]["parts"] if p["type"] == "text")


def ended_well(turn: dict[str, Any]) -> bool:
    """Ready again, with no error and onFinish saying the stream finished ("stop")."""
    return (
        turn["statuses"][-1] == "ready"
        and "error" not in turn["statuses"][1:]
        and turn["error"] is None
        and turn["errors"] == []
        and turn["finished"]
        == [{"isAbort": False, "isDisconnect": False, "isError": False, "finishReason": "stop"}]
    )


def test_usechat_shows_the_tool_call_with_its_output_and_the_answer(chat: dict[str, Any]) -> None:
    first = chat["turns"][0]
    statuses = first["statuses"]  # ready, busy ("submitted", then "streaming"), ready
    assert statuses[0] == "ready" and {"submitted", "streaming"} >= set(statuses[1:-1]) != set()
    assert ended_well(first)
    assert tool_parts(first) == [
        ("tool-add", "output-available", {"a": 25, "b": 17}, '{"result": 42.0}')
    ]
    assert "42" in answer(first)
    assert first["message"]["metadata"]["reason"] == "completed"


def test_a_second_message_continues_the_same_session(chat: dict[str, Any]) -> None:
    second = chat["turns"][1]
    assert ended_well(second)
    assert [(kind, state) for kind, state, _, _ in tool_parts(second)] == [
        ("tool-multiply", "output-available"),
        ("tool-add", "output-available"),
    ]
    assert answer(second).endswith("The answer is 61.")
    session = chat["sessions"]["end"]  # the chat's id is the session's
    assert session["id"] == "usechat"
    assert [t["prompt"] for t in session["turns"][:2]] == [
        "What is 25 plus 17?",
        "What's 7 times 8, then add 5?",
    ]


def test_stop_during_a_tool_readies_the_chat_and_the_server_journals_the_turn_cancelled(
    chat: dict[str, Any],
) -> None:
    assert chat["stopped"]["status"] == "streaming"
    assert chat["stopped"]["part"]["state"] == "input-available"  # divide is running
    stopped = chat["turns"][2]
    assert stopped["statuses"][-1] == "ready" and stopped["error"] is None
    assert stopped["finished"] == [{"isAbort": True, "isDisconnect": False, "isError": False}]
    journaled = chat["sessions"]["afterStop"]["turns"][2]
    assert journaled["outcome"] == "cancelled"
    [[call]] = [r["calls"] for r in journaled["rounds"]]
    assert call["name"] == "divide" and call["is_error"] is True
    after = chat["turns"][3]  # the chat goes on
    assert ended_well(after) and answer(after).endswith("The answer is 5.")
    assert [m["role"] for m in chat["rendered"]] == ["user", "assistant"] * 4
    assert chat["rendered"][-1]["text"].endswith("The answer is 5.")


def test_a_reloaded_chat_with_resume_finds_no_stream_and_goes_on(chat: dict[str, Any]) -> None:
    assert chat["resume"] == {"resumes": ["no stream"], "statuses": ["ready"], "errors": []}
    reloaded = chat["turns"][4]
    assert ended_well(reloaded) and answer(reloaded).endswith("The answer is 12.")
    outcomes = [t["outcome"] for t in chat["sessions"]["end"]["turns"]]
    assert outcomes == ["completed", "completed", "cancelled", "completed", "completed"]


def test_the_resume_route_says_there_is_no_stream_to_resume() -> None:
    async def get() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=app(AgentOptions(model="m")))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get("/api/chat/any-chat/stream")

    response = anyio.run(get)
    assert response.status_code == 204 and response.content == b""


def test_regenerate_is_refused_and_usechat_says_why(chat: dict[str, Any]) -> None:
    refused = chat["regenerate"]
    assert refused["status"] == "error"
    reason = json.loads(refused["error"])["error"]  # the response body, as the transport reads it
    assert reason.startswith("trigger 'regenerate-message' is not supported")
    assert refused["errors"] == [refused["error"]]  # onError was told too


def test_a_model_error_sets_usechat_s_error_to_the_provider_s_message(tmp_path: Path) -> None:
    node()
    with ScriptedServer([http_error(401, "invalid api key")]) as model:
        server = Served(["--base-url", model.url, "--model", "m"], tmp_path)
        try:
            [failed] = run_client(server.url, "usechat-error", "model-error")["turns"]
        finally:
            server.stop()
    assert failed["statuses"][-1] == "error"
    assert failed["error"].startswith("HTTP 401: invalid api key")
    assert failed["errors"] == [failed["error"]]
    assert failed["finished"] == [{"isAbort": False, "isDisconnect": False, "isError": True}]


@pytest.fixture(scope="module")
def approvals(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The summary of chat_client.mjs's approval scenario: `multiply` held for approval."""
    node()
    folder = tmp_path_factory.mktemp("usechat-approval")
    args = ["--journal", str(folder / "web.db"), "--tools", "browser_approval_tools:TOOLS"]
    server = Served(args, folder)
    try:
        yield run_client(server.url, "usechat-approval", "approval")
    finally:
        server.stop()


def held(turn: dict[str, Any]) -> dict[str, Any]:
    """The turn's one tool part (the held multiply call)."""
    [part] = [p for p in turn["message"]["parts"] if p["type"].startswith("tool-")]
    return part


def test_a_held_call_renders_approval_requested_and_the_turn_ends_paused(
    approvals: dict[str, Any],
) -> None:
    first = approvals["turns"][0]
    assert first["statuses"][-1] == "ready" and first["errors"] == []
    assert first["finished"] == [
        {"isAbort": False, "isDisconnect": False, "isError": False, "finishReason": "tool-calls"}
    ]
    part = held(first)
    assert part["type"] == "tool-multiply" and part["state"] == "approval-requested"
    assert part["approval"] == {"id": part["toolCallId"]}
    assert first["message"]["metadata"]["reason"] == "awaiting_approval"


def test_add_tool_approval_response_approving_runs_the_tool_and_streams_the_answer(
    approvals: dict[str, Any],
) -> None:
    approved = approvals["decisions"][0]
    assert approved["error"] is None and approved["errors"] == []
    assert approved["finished"] == [
        {"isAbort": False, "isDisconnect": False, "isError": False, "finishReason": "stop"}
    ]
    assert approved["message"]["id"] == approved["held"]["id"]  # the same message went on
    assert approved["messages"] == 2  # user, assistant: nothing added beside it
    part = held(approved)
    assert part["state"] == "output-available" and "56" in part["output"]
    assert part["approval"] == {"id": part["toolCallId"], "approved": True}
    assert answer(approved).endswith("The answer is 56.")
    assert approved["message"]["metadata"]["reason"] == "completed"
    # what the chat posted by itself: its messages ending with the answered assistant message
    body = approvals["bodies"][1]
    assert body["trigger"] == "submit-message" and body["id"] == "usechat-approval"
    assert body["messageId"] == body["last"]["id"] == approved["held"]["id"]
    [sent] = [p for p in body["last"]["parts"] if p["type"] == "tool-multiply"]
    assert sent["state"] == "approval-responded"
    assert sent["approval"] == {"id": sent["toolCallId"], "approved": True}


def test_add_tool_approval_response_denying_gives_the_model_the_reason(
    approvals: dict[str, Any],
) -> None:
    denied = approvals["decisions"][1]
    assert denied["error"] is None and denied["statuses"][-1] == "ready"
    part = held(denied)
    assert part["state"] == "output-denied"
    assert part["approval"] == {"id": part["toolCallId"], "approved": False, "reason": "not now"}
    assert answer(denied).endswith("The calculation did not give a number: not now")
    journaled = approvals["sessions"]["end"]["turns"]
    assert [t["outcome"] for t in journaled] == ["completed", "completed"]
    [[call]] = [r["calls"] for r in journaled[1]["rounds"]]
    assert call["name"] == "multiply" and call["content"] == "not now" and call["is_error"]
    assert [b["trigger"] for b in approvals["bodies"]] == ["submit-message"] * 4
