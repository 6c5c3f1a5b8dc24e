"""The model port's contract with the shell: who closes a port, and which of its errors are fatal.

A Client (or `execute_agent`) closes the model it made itself through the
port's `aclose()`, whatever its class; a model the caller passed in is the
caller's and is never closed. A `ReplayError` a port raises (a recording that
cannot answer) reaches the caller as is, never as the model's failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import EventModel, MemoryJournal
from toolreel.core import ModelCallFailed, ModelEvent, ModelRequest, ModelResponded, TextDelta
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    Client,
    OutputTool,
    Recording,
    _connection,
    execute_agent,
)
from toolreel.shell.errors import RequestMismatch

OPTIONS = AgentOptions(model="m", base_url="http://127.0.0.1:9/v1", system_prompt="Be brief.")


class ClosingModel:
    """A model port that answers "hi" and counts how often it was closed."""

    def __init__(self) -> None:
        """Never closed yet."""
        self.closed = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """One short answer."""
        yield TextDelta(text="hi")
        yield ModelResponded()

    async def aclose(self) -> None:
        """Count the close."""
        self.closed += 1


def made_by_toolreel(monkeypatch: pytest.MonkeyPatch, module: Any) -> ClosingModel:
    """The model `module` makes from the options' connection (in place of an HTTP model)."""
    made = ClosingModel()
    monkeypatch.setattr(module, "http_model", lambda *args, **kwargs: made)
    return made


async def one_turn(client_model: ClosingModel | None) -> None:
    """A Client on the options (with `client_model` if given), one prompt, closed."""
    async with Client(OPTIONS, model=client_model) as client:
        await client.query("hello")
        await client.wait()


def test_client_closes_the_model_it_made_through_the_port(monkeypatch) -> None:
    made = made_by_toolreel(monkeypatch, _connection)
    anyio.run(one_turn, None)
    assert made.closed == 1


def test_client_never_closes_the_callers_model() -> None:
    mine = ClosingModel()
    anyio.run(one_turn, mine)
    assert mine.closed == 0


@attrs.frozen
class Answer:
    """What the agent must return (the model's "hi" is not it: the run just ends)."""

    value: int


def agent() -> AgentDefinition[str, Answer]:
    """An agent the closing model can never satisfy (its outcome does not matter here)."""
    return AgentDefinition(build_prompt=lambda text: text, output=OutputTool.of(Answer))


def test_execute_agent_closes_the_model_it_made_through_the_port(monkeypatch) -> None:
    made = made_by_toolreel(monkeypatch, _connection)
    anyio.run(lambda: execute_agent(agent(), "hello", OPTIONS.connection))
    assert made.closed == 1


def test_execute_agent_never_closes_the_callers_model() -> None:
    mine = ClosingModel()
    anyio.run(lambda: execute_agent(agent(), "hello", OPTIONS.connection, model=mine))
    assert mine.closed == 0


def test_a_mismatch_raised_mid_stream_reaches_the_caller_not_the_history() -> None:
    async def half_then_mismatch(request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(text="hal")
        raise RequestMismatch("model call 1 differs from the recording: (diff)")

    class Halting(EventModel):
        def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            return half_then_mismatch(request)

    journal = MemoryJournal()

    async def main() -> None:
        async with Client(attrs.evolve(OPTIONS, journal=journal), model=Halting(list)) as client:
            await client.query("hello")
            with pytest.raises(RequestMismatch, match=r"model call 1 differs.*\(diff\)"):
                await client.wait()

    anyio.run(main)
    (session,) = journal.sessions()
    failures = [e for e in journal.entries(session) if isinstance(e.event, ModelCallFailed)]
    assert failures == []  # the program's bug, not a failure of the model to retry or record


def recorded() -> MemoryJournal:
    """A journal holding one session: "hello" answered "hi"."""
    journal = MemoryJournal()
    anyio.run(one_turn_into, journal)
    return journal


async def one_turn_into(journal: MemoryJournal) -> None:
    """One turn of a Client journaling into `journal`."""
    options = attrs.evolve(OPTIONS, journal=journal)
    async with Client(options, model=ClosingModel()) as client:
        await client.query("hello")
        await client.wait()


def test_a_recording_driven_directly_raises_its_mismatch_from_wait() -> None:
    recording = Recording(recorded())
    changed = attrs.evolve(OPTIONS, system_prompt="Be verbose.")

    async def main() -> None:
        async with Client(changed, model=recording) as client:
            await client.query("hello")
            with pytest.raises(RequestMismatch, match="model call 1 differs") as mismatch:
                await client.wait()
        assert "+Be verbose." in str(mismatch.value)

    anyio.run(main)


def test_rerun_raises_the_mismatch_with_its_diff() -> None:
    recording = Recording(recorded())
    with pytest.raises(RequestMismatch, match="model call 1 differs") as mismatch:
        anyio.run(recording.rerun, attrs.evolve(OPTIONS, system_prompt="Be verbose."))
    assert "system prompt:\n  -Be brief.\n  +Be verbose." in str(mismatch.value)
    assert Recording(recorded()).prompts == ["hello"]
