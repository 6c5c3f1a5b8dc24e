"""`toolreel.mcp.http_app`: the served loop's rules over streamable HTTP, in process.

Starlette's TestClient names its host `testserver`: a name the app must be told to serve.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK: pip install 'toolreel[mcp]'")

from starlette.testclient import TestClient

from toolreel.cli._mcp_serve import _ready
from toolreel.core import ConfigError
from toolreel.mcp import agent_server, http_app
from toolreel.shell import AgentOptions
from toolreel.shell.engine import access_token, is_loopback

ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def app(**given: Any) -> Any:
    """A fresh server's HTTP app (its model is never called here)."""
    options = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    return http_app(agent_server(options), **given)


def initialize(served: Any, **headers: str) -> int:
    """The status of an `initialize` POST to a fresh app (each app runs once)."""
    with TestClient(served) as client:
        answer = client.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **headers})
        return answer.status_code


def test_only_the_names_served_are_answered() -> None:
    assert initialize(app()) == 421  # `testserver` is no name of this server
    assert initialize(app(allowed_hosts=["testserver"])) == 200
    assert initialize(app(allowed_hosts=["*"])) == 200
    assert initialize(app(host="testserver")) == 200  # the host served is one of its names
    assert initialize(app(allowed_hosts=["testserver"]), Origin="http://evil.example") == 403


def test_a_token_is_required_when_given_and_too_short_a_one_refused() -> None:
    token = "s" * 20
    with TestClient(app(allowed_hosts=["testserver"], token=token)) as client:

        def status(**headers: str) -> int:
            return client.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **headers}).status_code

        assert status() == 401
        assert status(Authorization=f"Bearer {token}x") == 401
        assert status(Authorization=f"bearer {token}") == 200
    with pytest.raises(ConfigError):
        app(token="short")


def test_off_loopback_a_token_is_made_unless_given() -> None:
    assert access_token("127.0.0.1", None) is None
    assert access_token("localhost", None) is None
    assert access_token("::1", None) is None
    made = access_token("0.0.0.0", None)
    assert made is not None and len(made) >= 32
    assert access_token("192.168.1.5", "given-token-xxxxxxxx") == "given-token-xxxxxxxx"
    assert not is_loopback("example.com")


def test_mcp_serve_shows_a_token_it_made_never_one_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    made = "m" * 43
    _ready("0.0.0.0", None)("http://0.0.0.0:8000/mcp", made)
    _ready("0.0.0.0", "g" * 20)("http://0.0.0.0:8000/mcp", "g" * 20)
    _ready("127.0.0.1", "g" * 20)("http://127.0.0.1:8000/mcp", "g" * 20)
    told = capsys.readouterr().err
    assert told.count("warning: serving beyond this machine") == 2  # not on loopback
    assert f"Authorization: Bearer {made}" in told
    assert "g" * 20 not in told
