"""`toolreel.a2a.app`'s HTTP rules, in process (Starlette's TestClient names its host
`testserver`: a name the app must be told to serve)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("a2a", reason="toolreel.a2a needs the A2A SDK: pip install 'toolreel[a2a]'")

from starlette.testclient import TestClient

from toolreel.a2a import app
from toolreel.core import ConfigError
from toolreel.shell import AgentOptions

CARD = "/.well-known/agent-card.json"
GET = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x-0"}}
OPTIONS = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test")


def status(served: Any, path: str = "/", body: Any = GET, **headers: str) -> int:
    """The status of a request to a fresh app (a POST of `body`; a GET of the card)."""
    with TestClient(served) as client:
        if path == CARD:
            return client.get(CARD, headers=headers).status_code
        return client.post(path, json=body, headers={"A2A-Version": "1.0", **headers}).status_code


def test_only_the_names_served_are_answered() -> None:
    assert status(app(OPTIONS)) == 421  # `testserver` is no name of this server
    assert status(app(OPTIONS, allowed_hosts=["testserver"])) == 200
    assert status(app(OPTIONS, allowed_hosts=["*"])) == 200
    assert status(app(OPTIONS, host="testserver")) == 200
    refused = status(app(OPTIONS, allowed_hosts=["testserver"]), Origin="http://evil.example")
    assert refused == 403
    assert status(app(OPTIONS, allowed_hosts=["testserver"]), Origin="http://testserver:80") == 200


def test_a_token_guards_every_request_but_the_card_and_too_short_a_one_is_refused() -> None:
    token = "s" * 20
    served = app(OPTIONS, allowed_hosts=["testserver"], token=token)
    assert status(served) == 401
    assert status(served, Authorization=f"Bearer {token}x") == 401
    assert status(served, Authorization=f"bearer {token}") == 200
    assert status(served, CARD) == 200  # discovery: the card says nothing secret
    with pytest.raises(ConfigError):
        app(OPTIONS, token="short")


def test_a_body_past_the_limit_is_refused() -> None:
    served = app(OPTIONS, allowed_hosts=["testserver"], max_body_bytes=200)
    assert status(served, body={**GET, "pad": "x" * 300}) == 413
    assert status(served) == 200


def test_deep_json_and_half_a_surrogate_pair_are_refused_before_the_sdk_reads_them() -> None:
    deep: Any = []
    for _ in range(100):
        deep = [deep]
    bodies = {"deep": {**GET, "pad": deep}, "half": {**GET, "pad": "half \ud800 a pair"}}
    bodies["pair"] = {**GET, "pad": "a whole pair \U0001f600"}
    with TestClient(app(OPTIONS, allowed_hosts=["testserver"])) as client:
        answered = {
            name: client.post(  # as JSON text with \uXXXX escapes, as a browser sends it
                "/",
                content=json.dumps(body),
                headers={"A2A-Version": "1.0", "content-type": "application/json"},
            ).status_code
            for name, body in bodies.items()
        }
    assert answered == {"deep": 400, "half": 400, "pair": 200}
