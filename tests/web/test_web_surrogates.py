"""The web app and text that is valid JSON but not valid UTF-8 (`"\\ud800"`, issue 20, item 3).

In a request body it is refused with 400 before any session begins; from a
model it is streamed, shown and journaled with U+FFFD in its place (the session
page answers 200, never a 500 it cannot get out of).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2

from toolreel.adapters import EventModel, Session, SQLiteJournal
from toolreel.core import ModelResponded, TextDelta, ToolCallArgumentsDelta, ToolCallStarted
from toolreel.shell import AgentOptions, replay, tool
from toolreel.web import app

LONE, FFFD = "\ud800", "\ufffd"
#: Bodies go as JSON text with `\uXXXX` escapes (valid UTF-8), as a browser's JSON.stringify does.
JSON = {"content-type": "application/json"}


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (not really)."""
    return f"deleted {path}"


def answer(request: Any) -> list[Any]:
    """Text with half a pair, a held call whose arguments escape half a pair; then text."""
    if len(request.messages) == 1:
        return [
            TextDelta(text=f"deleting {LONE}"),
            ToolCallStarted(index=0, call_id="c1", name="delete"),
            ToolCallArgumentsDelta(index=0, fragment='{"path": "\\ud800 a"}'),
            ModelResponded(finish_reason="tool_calls"),
        ]
    return [TextDelta(text=f"kept {LONE}"), ModelResponded()]


def requests(path: Path, *calls: tuple[str, str, Any]) -> list[httpx2.Response]:
    """The responses to these requests, in order, to one app journaling to `path`."""

    async def send() -> list[httpx2.Response]:
        journal = SQLiteJournal(path)
        web = app(
            AgentOptions(model="m", tools=[delete]), journal=journal, model=EventModel(answer)
        )
        transport = httpx2.ASGITransport(app=web)
        try:
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                return [
                    await client.request(m, url, content=body and json.dumps(body), headers=JSON)
                    for m, url, body in calls
                ]
        finally:
            journal.close()

    return anyio.run(send)


def chat(text: str, chat_id: str) -> dict[str, Any]:
    """useChat's body for a new user message."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message"}


def test_a_prompt_with_half_a_pair_is_a_400_and_begins_no_session(tmp_path: Path) -> None:
    chat_refused, events_refused, listed = requests(
        tmp_path / "j.db",
        ("POST", "/api/chat", chat(f"hi {LONE}", "chat-1")),
        ("POST", "/api/events", {"message": f"hi {LONE}", "id": "events-1"}),
        ("GET", "/api/sessions", None),
    )
    for refused in (chat_refused, events_refused):
        assert refused.status_code == 400
        assert refused.json()["error"].startswith("prompt='hi \\ud800' is not allowed")
    assert listed.json() == {"sessions": []}


def test_a_model_sending_half_a_pair_is_streamed_shown_and_journaled_replaced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    streamed, page, denied, decided, page_after = requests(
        path,
        ("POST", "/api/events", {"message": "delete a", "id": "s1"}),
        ("GET", "/api/sessions/s1", None),
        ("POST", "/api/approvals", {"id": "s1", "call_id": "c1", "approved": False,
                                    "reason": f"no {LONE}", "protocol": "events"}),
        ("POST", "/api/approvals", {"id": "s1", "call_id": "c1", "approved": False,
                                    "reason": "no", "protocol": "events"}),
        ("GET", "/api/sessions/s1", None),
    )  # fmt: skip
    assert streamed.status_code == 200
    assert f"deleting {FFFD}" in streamed.text and f'"path":"{FFFD} a"' in streamed.text
    assert page.status_code == 200
    assert page.json()["turns"][0]["approvals"][0]["arguments"] == {"path": f"{FFFD} a"}
    assert denied.status_code == 400 and denied.json()["error"].startswith("reason=")
    assert decided.status_code == 200 and f"kept {FFFD}" in decided.text
    assert page_after.status_code == 200
    assert f"{FFFD} a" in json.dumps(page_after.json()["transcript"], ensure_ascii=False)
    journal = SQLiteJournal(path)
    try:
        assert isinstance(replay(journal, "s1"), Session)
    finally:
        journal.close()


def test_a_fork_whose_edit_holds_half_a_pair_is_a_400_and_writes_no_fork(tmp_path: Path) -> None:
    """A replaced result, prompt or system prompt is the caller's text: refused, not replaced."""
    path = tmp_path / "j.db"
    done = requests(path, ("POST", "/api/chat", chat("hi", "chat-1")))
    assert done[0].status_code == 200
    forks = [
        {"at_turn": 1, "at_round": 1, "results": {"c1": f"ok {LONE}"}},
        {"at_turn": 1, "prompt": f"hi {LONE}"},
        {"at_turn": 1, "system": f"be {LONE}"},
    ]
    *refused, listed = requests(
        path,
        *(("POST", "/api/sessions/chat-1/fork", body) for body in forks),
        ("GET", "/api/sessions", None),
    )
    for response, field in zip(refused, ("results['c1']", "prompt", "system"), strict=True):
        assert response.status_code == 400
        assert response.json()["error"].startswith(f"{field}=")
    assert [item["id"] for item in listed.json()["sessions"]] == ["chat-1"]
