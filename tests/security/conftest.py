"""tests/security's fixtures: the scripted models the apps under test talk to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from guarded import DELETED, deleting_model

from toolreel.shell import scripted
from toolreel.shell.scripted import ScriptedServer


@pytest.fixture(scope="module")
def calculator() -> Iterator[ScriptedServer]:
    """The scripted calculator model, on 127.0.0.1."""
    with ScriptedServer(scripted.calculator) as server:
        yield server


@pytest.fixture
def held() -> Iterator[ScriptedServer]:
    """A model that calls `delete`, which waits for approval."""
    DELETED.clear()
    with ScriptedServer(deleting_model) as server:
        yield server
