"""Shared by tests/security: the apps' options, one request to an app, the chats its journal holds.

Requests go through httpx's ASGI transport to `toolreel.web.app` (no socket); the
URL is http://127.0.0.1:8000 unless a test names another host, so the Host and
an own-origin `Origin` are "127.0.0.1:8000".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("starlette", reason="toolreel.web needs Starlette: pip install 'toolreel[web]'")

import anyio
import httpx2

from toolreel.adapters import MemoryJournal
from toolreel.shell import AgentOptions, tool
from toolreel.shell.demo import SYSTEM, TOOLS
from toolreel.shell.scripted import Reply, ScriptedServer

#: Where the app is reached, unless a test names another host.
ORIGIN = "http://127.0.0.1:8000"
#: The header a request from this server's own page carries.
OWN_PAGE = {"origin": ORIGIN, "sec-fetch-site": "same-origin"}
#: What the tool held for approval did (the tests check it did nothing).
DELETED: list[str] = []


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    """The calculator agent's options, pointed at `server`."""
    return AgentOptions(
        model="scripted-calculator", base_url=server.url, tools=TOOLS, system_prompt=SYSTEM, **extra
    )


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


def deleting_model(request: dict[str, Any]) -> Reply:
    """Calls `delete` once (as c1), then answers with the tool result it read."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(calls=(("c1", "delete", json.dumps({"path": "a.txt"})),))
    return Reply(text="Result: " + results[0])


def held_options(server: ScriptedServer) -> AgentOptions:
    """Options whose one tool, `delete`, is held for approval."""
    return AgentOptions(model="m", base_url=server.url, api_key="sk-test", tools=[delete])


def chat_body(text: str, chat_id: str | None = "chat-1") -> dict[str, Any]:
    """The body DefaultChatTransport posts for a new user message."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": chat_id, "messages": [user], "trigger": "submit-message", "messageId": None}


def send(
    web: Any,
    method: str,
    path: str,
    *,
    body: Any = None,
    content: bytes | AsyncIterator[bytes] | None = None,
    headers: dict[str, str] | None = None,
    base: str = ORIGIN,
    cookies: dict[str, str] | None = None,
) -> httpx2.Response:
    """One request to the ASGI app: `body` as JSON, or `content` as it is (with `headers`)."""

    async def sending() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=web)
        async with httpx2.AsyncClient(
            transport=transport, base_url=base, cookies=cookies
        ) as client:
            if content is not None:
                return await client.request(method, path, content=content, headers=headers)
            if body is not None:  # as JSON, escaped: lone surrogates ("\ud800") travel too
                encoded = json.dumps(body).encode()
                typed = {"content-type": "application/json", **(headers or {})}
                return await client.request(method, path, content=encoded, headers=typed)
            return await client.request(method, path, headers=headers)

    return anyio.run(sending)


def chats(journal: MemoryJournal) -> list[str]:
    """The sessions the journal holds: a chat that started left one."""
    return list(journal.sessions())


def error_of(response: httpx2.Response, status: int) -> str:
    """The `error` of a refusal with `status` (checked: `{"error": message}` as JSON)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"]
    assert isinstance(body["error"], str)
    return body["error"]
