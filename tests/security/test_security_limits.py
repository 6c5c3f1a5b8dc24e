"""Limits on what a request may hold: body size, body time, JSON depth, session ids.

- a body over `max_body_bytes` (10 MiB by default) is 413, whether its
  Content-Length says so or it streams in without one (chunked);
- a body that has not arrived within `body_timeout` seconds is 408;
- JSON nested deeper than 64 levels is 400 (not the parser's RecursionError as a 500);
- a session id is what `/api/sessions/{id}` can open again: at most 200
  printable characters, not blank, no `/`, not `.` or `..`; anything else is 400,
  and every id accepted opens.
Each refusal is `{"error": message}`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import quote

import anyio
import pytest
from guarded import (
    OWN_PAGE,
    chats,
    error_of,
    options,
    send,
)

from toolreel.adapters import MemoryJournal
from toolreel.core import ConfigError
from toolreel.shell import AgentOptions
from toolreel.web import app

JSON = {"content-type": "application/json", **OWN_PAGE}
MIB = 1024 * 1024


def test_a_body_declared_over_the_default_10_mib_is_413_unread(calculator) -> None:
    journal = MemoryJournal()
    body = b'{"message": "' + b"x" * (10 * MIB) + b'"}'
    response = send(
        app(options(calculator), journal=journal), "POST", "/api/events", content=body, headers=JSON
    )
    assert "larger than the limit of 10485760 bytes" in error_of(response, 413)
    assert chats(journal) == []


def test_a_body_just_under_the_limit_is_read(calculator) -> None:
    body = b'{"message": "What is 2 plus 2?", "pad": "' + b"x" * 1000 + b'"}'
    web = app(options(calculator), max_body_bytes=len(body))
    response = send(web, "POST", "/api/events", content=body, headers=JSON)
    assert response.status_code == 200, response.text


def test_a_streamed_body_is_counted_as_it_arrives(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, max_body_bytes=1000)
    pieces: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        """A chunked body (no Content-Length) that would go on for 100 MiB."""
        yield b'{"message": "'
        for _ in range(100 * 1024):
            pieces.append(1)
            yield b"x" * 1024

    response = send(web, "POST", "/api/events", content=chunks(), headers=JSON)
    assert "larger than the limit of 1000 bytes" in error_of(response, 413)
    assert len(pieces) < 5  # refused as soon as the limit passed, not after reading it all
    assert chats(journal) == []


def test_a_content_length_that_lies_is_no_way_past_the_limit(calculator) -> None:
    web = app(options(calculator), max_body_bytes=100)

    async def lying() -> tuple[int, bytes]:
        sent: list[dict] = []
        messages = [
            {"type": "http.request", "body": b'{"message": "' + b"x" * 80, "more_body": True},
            {"type": "http.request", "body": b"x" * 80 + b'"}', "more_body": False},
        ]

        async def receive() -> dict:
            return messages.pop(0)

        async def keep(message: dict) -> None:
            sent.append(message)

        headers = [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", b"10"),
        ]
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": "POST",
            "path": "/api/events",
            "raw_path": b"/api/events",
            "root_path": "",
            "scheme": "http",
            "query_string": b"",
            "headers": headers,
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5000),
        }
        await web(scope, receive, keep)
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    status, body = anyio.run(lying)
    assert status == 413
    assert b"larger than the limit of 100 bytes" in body


def test_a_body_that_does_not_arrive_in_time_is_408(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, body_timeout=0.2)

    async def stalled() -> AsyncIterator[bytes]:
        """The first bytes of a body, then nothing (a client that stalls)."""
        yield b'{"message": "What is'
        await anyio.sleep_forever()

    response = send(web, "POST", "/api/events", content=stalled(), headers=JSON)
    assert "did not arrive within 0.2 s" in error_of(response, 408)
    assert chats(journal) == []


def test_limits_must_be_positive() -> None:
    idle = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="max_body_bytes"):
        app(idle, max_body_bytes=0)
    with pytest.raises(ConfigError, match="body_timeout"):
        app(idle, body_timeout=0)


def nested(depth: int) -> bytes:
    """A body with the calculator question, its arrays and objects `depth` levels deep."""
    inner = depth - 1  # the body's own object is the first level
    opening, closing = b'[{"a": ' * (inner // 2), b"}]" * (inner // 2)
    if inner % 2:
        opening, closing = opening + b"[", b"]" + closing
    return b'{"message": "What is 2 plus 2?", "deep": ' + opening + b"1" + closing + b"}"


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_json_nested_deeper_than_64_levels_is_400(calculator, depth) -> None:
    response = send(
        app(options(calculator)), "POST", "/api/events", content=nested(depth), headers=JSON
    )
    assert "nested deeper than 64 levels" in error_of(response, 400)


def test_json_nested_64_levels_deep_is_read(calculator) -> None:
    response = send(
        app(options(calculator)), "POST", "/api/events", content=nested(64), headers=JSON
    )
    assert response.status_code == 200, response.text


def test_brackets_in_strings_are_no_nesting(calculator) -> None:
    body = {"message": "What is 2 plus 2?", "note": "[{" * 1000 + '\\"' + "]}" * 1000}
    response = send(app(options(calculator)), "POST", "/api/events", body=body, headers=OWN_PAGE)
    assert response.status_code == 200, response.text


SERVABLE_IDS = [
    "x" * 200,  # the documented maximum
    "a b",
    "what? #1 100%",
    "...",
    " padded ",
    "é 漢字 🙂",
    "back\\slash",
]


@pytest.mark.parametrize("session_id", SERVABLE_IDS)
def test_an_id_accepted_is_one_the_session_route_opens(calculator, session_id) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    body = {"id": session_id, "message": "What is 2 plus 2?"}
    assert send(web, "POST", "/api/events", body=body, headers=OWN_PAGE).status_code == 200
    assert chats(journal) == [session_id]
    opened = send(web, "GET", "/api/sessions/" + quote(session_id, safe=""))
    assert opened.status_code == 200, opened.text
    assert opened.json()["id"] == session_id


@pytest.mark.parametrize(
    "session_id",
    [
        "x" * 201,
        "a/b",
        "/",
        " ",
        "   ",
        "\t",
        ".",
        "..",
        "nul\x00",
        "line\nbreak",
        "del\x7f",
        "zero\u200bwidth",
        "bidi\u202e",
        "lone \ud800",
        42,
        ["a"],
    ],
)
def test_an_id_the_routes_could_not_serve_is_400(calculator, session_id) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    for path, body in [
        ("/api/events", {"id": session_id, "message": "What is 2 plus 2?"}),
        ("/api/chat", {"id": session_id, "messages": [{"role": "user", "content": "hi"}]}),
        ("/api/approvals", {"id": session_id, "call_id": "c1", "approved": True}),
    ]:
        response = send(web, "POST", path, body=body, headers=OWN_PAGE)
        message = error_of(response, 400)
        if session_id != "lone \ud800":  # (a check of every text from callers may refuse it first)
            assert "'id' must be a string of at most 200 printable characters" in message
    assert chats(journal) == []
