"""tests/security's fixtures: the scripted models the apps under test talk to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from guarded import DELETED, deleting_model

from toolreel.shell._scripted import ScriptedServer, openai_reply


@pytest.fixture(scope="module")
def calculator() -> Iterator[ScriptedServer]:
    """The scripted calculator model, on 127.0.0.1."""
    with ScriptedServer(openai_reply) as server:
        yield server


@pytest.fixture
def held() -> Iterator[ScriptedServer]:
    """A model that calls `delete`, which waits for approval."""
    DELETED.clear()
    with ScriptedServer(deleting_model) as server:
        yield server
