"""A session workflow gives the provider's prompt cache the session's id, as a local `Client` does.

Against a real dev server (conftest.py), with an in-process model that keeps each request.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

from temporalio.client import Client

from toolreel.core import ModelEvent, ModelRequest, ModelResponded, TextDelta, Usage
from toolreel.shell import AgentOptions
from toolreel.temporal import WorkflowChat, connect, session_worker


class Keeping:
    """A model that answers "ok" and keeps the cache key of every request it is sent."""

    def __init__(self) -> None:
        self.keys: list[str | None] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.keys.append(request.cache_key)
        yield TextDelta(text="ok")
        yield ModelResponded(finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=1))

    async def aclose(self) -> None:
        pass


def keys_sent(address: str, options: AgentOptions, session_id: str) -> list[str | None]:
    """The cache keys a two-turn Temporal session of `session_id` sent its model."""
    model = Keeping()
    task_queue = f"q-{uuid.uuid4().hex[:8]}"

    async def work(client: Client) -> None:
        async with (
            session_worker(client, options, task_queue=task_queue, model=model),
            WorkflowChat(client, task_queue=task_queue, session_id=session_id) as chat,
        ):
            for prompt in ("one", "two"):
                await chat.query(prompt)
                async for _ in chat.events():
                    pass

    async def main(address: str) -> None:
        await asyncio.wait_for(work(await connect(address)), 120)  # a hang fails

    asyncio.run(main(address))
    return model.keys


def test_the_hosted_api_gets_the_workflow_id_as_its_cache_key(temporal_address: str) -> None:
    hosted = AgentOptions(provider="openai", model="gpt-4o-mini", api_key="sk-test")
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    assert keys_sent(temporal_address, hosted, session_id) == [session_id, session_id]


def test_a_session_with_caching_off_sends_no_key(temporal_address: str) -> None:
    off = AgentOptions(
        provider="openai", model="gpt-4o-mini", api_key="sk-test", prompt_cache="off"
    )
    assert keys_sent(temporal_address, off, f"s-{uuid.uuid4().hex[:8]}") == [None, None]
