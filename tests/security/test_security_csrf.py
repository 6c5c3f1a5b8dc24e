"""Cross-site request forgery: a page on another site cannot start a chat or decide a held call.

A browser sends a `<form>` or a `fetch(..., {mode: "no-cors"})` text/plain POST to
any address without asking (a CORS "simple request"); here each such request is
refused with 403 `{"error": ...}` before a route reads it, and nothing runs. The
server's own page (`Sec-Fetch-Site: same-origin`, or its own `Origin`), the
`cors_origins` pages and callers that are no browser (no `Origin`) go on.
(In a real browser: test_security_browser.py.)
"""

from __future__ import annotations

import pytest
from guarded import (
    DELETED,
    ORIGIN,
    OWN_PAGE,
    chat_body,
    chats,
    error_of,
    held_options,
    options,
    send,
)

from toolreel.adapters import MemoryJournal
from toolreel.web import app

BODY = (
    b'{"id": "forged", "messages": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]}'
)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",  # fetch(..., {mode: "no-cors", body: "..."}), <form enctype="text/plain">
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",  # a plain <form>
        "multipart/form-data; boundary=x",
    ],
)
def test_a_simple_request_body_is_refused_and_starts_no_chat(calculator, content_type) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    for path in (
        "/api/chat",
        "/api/events",
        "/api/approvals",
        "/api/agui",
        "/api/sessions/chat-1/fork",
        "/api/sessions/chat-1/continue",
    ):
        response = send(web, "POST", path, content=BODY, headers={"content-type": content_type})
        assert "Content-Type: application/json" in error_of(response, 403)
    assert chats(journal) == []


def test_a_post_without_any_content_type_is_refused(calculator) -> None:
    journal = MemoryJournal()
    response = send(app(options(calculator), journal=journal), "POST", "/api/chat", content=BODY)
    assert "JSON body" in error_of(response, 403)
    assert chats(journal) == []


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example", "sec-fetch-site": "cross-site"},
        {"origin": "https://evil.example"},  # a browser without Sec-Fetch-Site
        {"sec-fetch-site": "cross-site"},
        {"origin": "http://127.0.0.1:3000", "sec-fetch-site": "same-site"},  # another local port
        {"origin": "http://127.0.0.1:3000"},
        {"origin": "null"},  # a sandboxed frame, a file:// page
        {"origin": "http://localhost:8000", "sec-fetch-site": "cross-site"},
    ],
)
def test_json_from_a_page_on_another_origin_is_refused(calculator, headers) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    response = send(web, "POST", "/api/chat", body=chat_body("hi"), headers=headers)
    message = error_of(response, 403)
    assert "another site" in message
    assert "--cors-origin" in message
    assert chats(journal) == []


def test_an_ag_ui_run_from_a_page_on_another_origin_is_refused(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }
    response = send(web, "POST", "/api/agui", body=body, headers={"origin": "https://evil.example"})
    assert "another site" in error_of(response, 403)
    assert chats(journal) == []


def test_a_forged_approval_leaves_the_call_held(held) -> None:
    journal = MemoryJournal()
    web = app(held_options(held), journal=journal)
    started = send(web, "POST", "/api/chat", body=chat_body("Delete a.txt"), headers=OWN_PAGE)
    assert started.status_code == 200
    decision = b'{"id": "chat-1", "call_id": "c1", "approved": true}'
    forged = [
        send(
            web, "POST", "/api/approvals", content=decision, headers={"content-type": "text/plain"}
        ),
        send(
            web,
            "POST",
            "/api/approvals",
            content=decision,
            headers={"content-type": "application/json", "origin": "https://evil.example"},
        ),
    ]
    assert [r.status_code for r in forged] == [403, 403]
    assert DELETED == []
    listed = send(web, "GET", "/api/sessions").json()["sessions"]
    assert [(s["id"], s["outcome"], s["approvals"]) for s in listed] == [
        ("chat-1", "awaiting_approval", 1)
    ]


@pytest.mark.parametrize(
    "headers",
    [
        OWN_PAGE,
        {"origin": ORIGIN},  # a browser without Sec-Fetch-Site, on this server's page
        {"sec-fetch-site": "none"},  # a request the user made directly
        {},  # no browser: curl, a server, Node's fetch
    ],
)
def test_json_from_the_own_page_or_from_no_browser_runs(calculator, headers) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    response = send(
        web, "POST", "/api/events", body={"message": "What is 2 plus 2?"}, headers=headers
    )
    assert response.status_code == 200, response.text
    assert "The answer is 4." in response.text
    assert len(chats(journal)) == 1


def test_a_json_content_type_with_parameters_or_capitals_is_json(calculator) -> None:
    web = app(options(calculator))
    for content_type in ("application/json; charset=utf-8", "Application/JSON"):
        response = send(
            web,
            "POST",
            "/api/events",
            content=b'{"message": "What is 2 plus 2?"}',
            headers={"content-type": content_type, **OWN_PAGE},
        )
        assert response.status_code == 200, response.text


def test_a_cors_origin_may_post_json_and_reads_its_refusals(calculator) -> None:
    trusted = "http://localhost:3000"
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, cors_origins=[trusted])
    headers = {"origin": trusted, "sec-fetch-site": "same-site"}
    posted = send(
        web, "POST", "/api/events", body={"message": "What is 2 plus 2?"}, headers=headers
    )
    assert posted.status_code == 200, posted.text
    assert posted.headers["access-control-allow-origin"] == trusted
    plain = send(
        web,
        "POST",
        "/api/events",
        content=b'{"message": "hi"}',
        headers={"content-type": "text/plain", **headers},
    )
    assert "JSON body" in error_of(plain, 403)
    assert plain.headers["access-control-allow-origin"] == trusted  # the page can read why
    assert len(chats(journal)) == 1


def test_reads_from_any_origin_are_answered_but_unreadable_to_it(calculator) -> None:
    web = app(options(calculator))
    response = send(web, "GET", "/api/sessions", headers={"origin": "https://evil.example"})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers  # the browser hides it
