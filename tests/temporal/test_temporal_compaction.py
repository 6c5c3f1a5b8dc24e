"""A session workflow compacts as a local session does: the worker's options carry the policy,
each request carries only the turns it keeps, and the journal the workflow makes replays.

Against a real dev server (conftest.py), with an in-process model that keeps each request.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import attrs
from temporalio.client import Client

from toolreel.core import ModelEvent, ModelRequest, ModelResponded, TextDelta, Usage
from toolreel.core.compaction import KeepTurns
from toolreel.core.notices import ContextCompacted
from toolreel.shell import AgentOptions
from toolreel.temporal import WorkflowChat, connect, session_worker


class Keeping:
    """A model that answers "ok" and keeps the user prompts of every request it is sent."""

    def __init__(self) -> None:
        self.prompts: list[list[str]] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.prompts.append([m.content for m in request.messages if m.role == "user"])
        yield TextDelta(text="ok")
        yield ModelResponded(finish_reason="stop", usage=Usage(input_tokens=1, output_tokens=1))

    async def aclose(self) -> None:
        pass


def test_a_session_workflow_carries_only_the_turns_its_policy_keeps(temporal_address: str) -> None:
    model = Keeping()
    task_queue = f"q-{uuid.uuid4().hex[:8]}"
    options = AgentOptions(model="m", base_url="http://127.0.0.1:9", api_key="k")
    options = attrs.evolve(options, compaction=KeepTurns(turns=2))
    told: list[object] = []

    async def work(client: Client) -> None:
        async with (
            session_worker(client, options, task_queue=task_queue, model=model),
            WorkflowChat(client, task_queue=task_queue) as chat,
        ):
            for prompt in ("one", "two", "three"):
                await chat.query(prompt)
                told.extend([item async for item in chat.events()])

    async def main() -> None:
        await asyncio.wait_for(work(await connect(temporal_address)), 120)  # a hang fails

    asyncio.run(main())
    assert model.prompts == [["one"], ["one", "two"], ["two", "three"]]
    [compacted] = [item for item in told if isinstance(item, ContextCompacted)]
    assert compacted.first == 0  # the first turn's messages were left out
