"""A stub `AsyncOpenAI` for the toolreel.open_agent tests: scripted streams, recorded bodies."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from toolreel.open_agent import AgentOptions


def text_chunks(*pieces: str) -> list[Any]:
    """A streamed text answer, one chunk per piece, with no finish reason (as local servers do)."""
    return [
        SimpleNamespace(choices=[SimpleNamespace(delta=SimpleNamespace(content=p))]) for p in pieces
    ]


def call_chunks(*calls: tuple[str, str, str]) -> list[Any]:
    """A streamed answer calling tools: (id, name, JSON arguments) each, split in two deltas."""
    chunks = []
    for index, (call_id, name, arguments) in enumerate(calls):
        half = len(arguments) // 2
        for part, (cid, nm) in (
            (arguments[:half], (call_id, name)),
            (arguments[half:], (None, None)),
        ):
            call = SimpleNamespace(
                index=index, id=cid, function=SimpleNamespace(name=nm, arguments=part)
            )
            delta = SimpleNamespace(content=None, tool_calls=[call])
            chunks.append(SimpleNamespace(choices=[SimpleNamespace(delta=delta)]))
    return chunks


class StubOpenAI:
    """Answers each `create` with the next scripted stream (an exception is raised)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []
        self.closed = False
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    async def _create(self, **body: Any) -> Any:
        self.bodies.append(body)
        if not self.answers:
            raise AssertionError(f"unexpected model call {len(self.bodies)}")
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Stream(answer)

    async def close(self) -> None:
        self.closed = True


class Stream:
    """An async iterator over chunks."""

    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks

    def __aiter__(self) -> Any:
        async def each() -> Any:
            for chunk in self.chunks:
                yield chunk

        return each()


def use(monkeypatch: pytest.MonkeyPatch, stub: StubOpenAI) -> StubOpenAI:
    """Make `toolreel.open_agent.client.create_client` hand out `stub`, as open_agent users do."""
    monkeypatch.setattr("toolreel.open_agent.client.create_client", lambda _options: stub)
    return stub


def options(**fields: Any) -> AgentOptions:
    """Options for the stub (fields as in AgentOptions)."""
    fields.setdefault("system_prompt", "You are a calculator.")
    fields.setdefault("model", "test-model")
    fields.setdefault("base_url", "http://localhost:1234/v1")
    return AgentOptions(**fields)
