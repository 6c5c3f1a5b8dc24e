"""DNS rebinding: only requests naming this server in their Host header are served.

A page on `rebind.example` whose name is switched to 127.0.0.1 reaches the server
as its own origin and could read `/api/sessions` and post approvals; its requests
name `rebind.example`, and every route answers them 400 `{"error": ...}`.
Served: 127.0.0.1, localhost and [::1] (with any port), the names given in
`allowed_hosts` (`toolreel serve` adds `--host` and `--allowed-host`), any IP
address when the server listens on every address ("0.0.0.0" / "::"), and
anything with "*". (In a real browser: test_security_browser.py.)
"""

from __future__ import annotations

import anyio
import pytest
from guarded import (
    chats,
    error_of,
    options,
    send,
)

from toolreel.adapters import MemoryJournal
from toolreel.web import app

ROUTES = [
    ("GET", "/"),
    ("GET", "/api/info"),
    ("GET", "/api/sessions"),
    ("GET", "/api/sessions/chat-1"),
    ("GET", "/api/chat/chat-1/stream"),
    ("POST", "/api/chat"),
    ("POST", "/api/events"),
    ("POST", "/api/approvals"),
    ("POST", "/api/agui"),
    ("POST", "/api/sessions/chat-1/fork"),
    ("POST", "/api/sessions/chat-1/continue"),
    ("GET", "/api/sessions/chat-1/diff/chat-2"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_refuses_a_host_it_is_not_served_by(calculator, method, path) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    response = send(
        web,
        method,
        path,
        body={"message": "What is 2 plus 2?"} if method == "POST" else None,
        base="http://rebind.example:8000",
        headers={"origin": "http://rebind.example:8000", "sec-fetch-site": "same-origin"},
    )
    assert "'rebind.example:8000' is not served here" in error_of(response, 400)
    assert chats(journal) == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8000",
        "127.0.0.1",
        "localhost:8000",
        "LOCALHOST:1234",
        "[::1]:8000",
        "[::1]",
        "[0:0:0:0:0:0:0:1]:80",
    ],
)
def test_the_loopback_names_are_served_at_any_port(calculator, host) -> None:
    response = send(app(options(calculator)), "GET", "/api/info", headers={"host": host})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "host",
    [
        "rebind.example",
        "localhost.rebind.example",
        "127.0.0.1.nip.io",
        "10.0.0.5:8000",  # an address the server was not told
        "[::2]:8000",
        "[::1",  # malformed
        "a b",
        "",
    ],
)
def test_other_hosts_are_400(calculator, host) -> None:
    response = send(app(options(calculator)), "GET", "/api/info", headers={"host": host})
    assert "is not served here" in error_of(response, 400)


def test_a_request_without_a_host_header_is_400(calculator) -> None:
    web = app(options(calculator))

    async def without_host() -> tuple[int, bytes]:
        sent: list[dict] = []

        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def keep(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "http_version": "1.0",
            "method": "GET",
            "path": "/api/info",
            "raw_path": b"/api/info",
            "root_path": "",
            "scheme": "http",
            "query_string": b"",
            "headers": [],
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5000),
        }
        await web(scope, receive, keep)
        return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])

    status, body = anyio.run(without_host)
    assert status == 400
    assert b"no Host header" in body


def test_allowed_hosts_adds_names_and_addresses(calculator) -> None:
    web = app(options(calculator), allowed_hosts=["Agent.Example", "192.168.1.5", "::5"])
    for host in ("agent.example", "agent.example:443", "192.168.1.5:8000", "[::5]:8000"):
        assert send(web, "GET", "/api/info", headers={"host": host}).status_code == 200, host
    for host in ("other.example", "192.168.1.6", "sub.agent.example"):
        assert send(web, "GET", "/api/info", headers={"host": host}).status_code == 400, host


def test_listening_on_every_address_serves_any_address_but_not_any_name(calculator) -> None:
    for wildcard in ("0.0.0.0", "::"):
        web = app(options(calculator), allowed_hosts=[wildcard])
        for host in ("192.168.1.5:8000", "[fe80::1]:8000", "10.1.2.3"):
            assert send(web, "GET", "/api/info", headers={"host": host}).status_code == 200
        assert send(web, "GET", "/api/info", headers={"host": "rebind.example"}).status_code == 400


def test_a_star_serves_any_host(calculator) -> None:
    web = app(options(calculator), allowed_hosts=["*"])
    assert send(web, "GET", "/api/info", headers={"host": "rebind.example"}).status_code == 200


def test_a_post_from_the_page_under_an_allowed_name_runs(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, allowed_hosts=["agent.example"])
    response = send(
        web,
        "POST",
        "/api/events",
        body={"message": "What is 2 plus 2?"},
        base="http://agent.example:8000",
        headers={"origin": "http://agent.example:8000"},
    )
    assert response.status_code == 200, response.text
    assert len(chats(journal)) == 1
