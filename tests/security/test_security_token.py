"""The access token: with `app(token=...)` every route wants it; the page gets it as a cookie.

A request carries it as `Authorization: Bearer <token>` or as the cookie that
opening `/?token=<token>` sets (HttpOnly, SameSite=Strict; the answer is a
redirect to the same address without the token). Without it: 401 `{"error":
...}` with `WWW-Authenticate: Bearer`, and the token is in no answer. Tokens are
compared in constant time. (`toolreel serve` off loopback: test_security_serve.py.)
"""

from __future__ import annotations

import hmac

import pytest
from guarded import (
    OWN_PAGE,
    chat_body,
    chats,
    error_of,
    options,
    send,
)
from starlette.applications import Starlette
from starlette.routing import Mount

from toolreel.adapters import MemoryJournal
from toolreel.core import ConfigError
from toolreel.shell import AgentOptions
from toolreel.web import app

TOKEN = "tok-0123456789abcdefghij"
BEARER = {"authorization": f"Bearer {TOKEN}"}
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
def test_every_route_wants_the_token(calculator, method, path) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, token=TOKEN)
    body = chat_body("What is 2 plus 2?") if method == "POST" else None
    for headers in (
        {},
        {"authorization": "Bearer wrong-token-0123456789"},
        {"authorization": TOKEN},
    ):
        response = send(web, method, path, body=body, headers={**headers, **OWN_PAGE})
        assert "access token" in error_of(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in response.text
    assert chats(journal) == []


def test_the_bearer_header_lets_every_route_through(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, token=TOKEN)
    for scheme in ("Bearer", "bearer"):
        headers = {"authorization": f"{scheme} {TOKEN}", **OWN_PAGE}
        assert send(web, "GET", "/api/info", headers=headers).status_code == 200
    posted = send(web, "POST", "/api/chat", body=chat_body("What is 2 plus 2?"), headers={**BEARER})
    assert posted.status_code == 200, posted.text
    assert chats(journal) == ["chat-1"]


def test_the_token_link_sets_a_strict_http_only_cookie_and_drops_the_token(calculator) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal, token=TOKEN)
    linked = send(web, "GET", f"/?token={TOKEN}&x=1")
    assert linked.status_code == 303
    assert linked.headers["location"] == "/?x=1"
    cookie = linked.headers["set-cookie"]
    assert cookie.startswith(f"toolreel_token_8000={TOKEN};")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert "Secure" not in cookie  # plain http: the browser would drop a Secure cookie
    jar = {"toolreel_token_8000": TOKEN}
    assert send(web, "GET", "/", cookies=jar).status_code == 200  # the page
    posted = send(
        web, "POST", "/api/chat", body=chat_body("What is 2 plus 2?"), headers=OWN_PAGE, cookies=jar
    )
    assert posted.status_code == 200, posted.text
    assert chats(journal) == ["chat-1"]


def test_a_wrong_link_a_posted_link_or_another_port_s_cookie_is_401(calculator) -> None:
    web = app(options(calculator), token=TOKEN)
    assert "wrong" in error_of(send(web, "GET", "/?token=not-the-token-at-all"), 401)
    posted = send(
        web, "POST", f"/api/events?token={TOKEN}", body={"message": "hi"}, headers=OWN_PAGE
    )
    error_of(posted, 401)
    other_port = send(web, "GET", "/api/info", cookies={"toolreel_token_9000": TOKEN})
    error_of(other_port, 401)


def test_mounted_the_link_and_the_cookie_keep_to_the_mount(calculator) -> None:
    site = Starlette(routes=[Mount("/agent", app=app(options(calculator), token=TOKEN))])
    linked = send(site, "GET", f"/agent/?token={TOKEN}")
    assert linked.status_code == 303
    assert linked.headers["location"] == "/agent/"
    assert "Path=/agent" in linked.headers["set-cookie"]


def test_a_link_never_redirects_off_the_server(calculator) -> None:
    web = app(options(calculator), token=TOKEN)
    linked = send(web, "GET", f"http://127.0.0.1:8000//evil.example/?token={TOKEN}")
    assert linked.status_code == 303
    assert linked.headers["location"] == "/evil.example/"


def test_tokens_are_compared_in_constant_time(calculator, monkeypatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    web = app(options(calculator), token=TOKEN)
    assert send(web, "GET", "/api/info", headers=BEARER).status_code == 200
    assert compared == [(TOKEN.encode(), TOKEN.encode())]


@pytest.mark.parametrize(
    "token", ["", "short", "has space in it 0123", "semi;colon0123456789", "é" * 20]
)
def test_a_token_too_short_or_unfit_for_a_header_is_refused_without_showing_it(token) -> None:
    with pytest.raises(ConfigError) as refused:
        app(AgentOptions(model="m", base_url="http://127.0.0.1:9/v1"), token=token)
    assert "at least 16 characters" in str(refused.value)
    assert token == "" or token not in str(refused.value)
