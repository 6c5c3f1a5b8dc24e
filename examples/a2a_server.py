"""An agent as an A2A server: another agent (here a2a-sdk's own client) sends it messages.

    python examples/a2a_server.py        # offline: this file is both the client and the server

It serves `toolreel.a2a` over a calculator agent on 127.0.0.1 (a free port), answered by
the scripted calculator model (OPENAI_API_KEY set: gpt-4o-mini), with a journal file. The
client reads the agent card, streams one message (the task's states and the answer), then
reads the task back with `tasks/get`. `toolreel a2a-serve --tools MODULE:TOOLS --journal
FILE` serves the same from the command line. Needs `pip install 'toolreel[a2a]'`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_text_part
from a2a.types import GetTaskRequest, Message, Role, SendMessageRequest, TaskState

from toolreel.a2a import serve
from toolreel.shell import AgentOptions
from toolreel.testing import ScriptedServer, calculator

JOURNAL = Path("a2a-server.jsonl")


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@contextlib.contextmanager
def model() -> Iterator[tuple[str, str | None, str | None]]:
    """The model, server and key: OpenAI's with a key, else the offline calculator."""
    if os.environ.get("OPENAI_API_KEY"):
        yield "gpt-4o-mini", None, None  # the key: OPENAI_API_KEY
    else:
        with ScriptedServer(calculator) as server:
            yield "calculator", server.url, "none"  # it takes any key


async def ask(url: str) -> None:
    """Read the card, stream a message, read its task back."""
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        print("skills:", ", ".join(skill.id for skill in card.skills))
        client = await create_client(card, ClientConfig(streaming=True, httpx_client=http))
        message = Message(
            message_id="m1",
            role=Role.ROLE_USER,
            parts=[new_text_part("What's 7 times 8, then add 5?")],
        )
        task_id = ""
        async for response in client.send_message(SendMessageRequest(message=message)):
            if response.HasField("status_update"):
                task_id = response.status_update.task_id
                print("state:", TaskState.Name(response.status_update.status.state))
        task = await client.get_task(GetTaskRequest(id=task_id))
        print("answer:", get_artifact_text(task.artifacts[0]))
        turn = task.id.removeprefix(f"{task.context_id}-")
        print(f"tasks/get: {TaskState.Name(task.status.state)} (turn {turn} of the session)")


async def main() -> None:
    """Serve the agent, ask it as a client, stop."""
    with model() as (name, base_url, key):
        options = AgentOptions(model=name, base_url=base_url, api_key=key, tools=[add, multiply])
        listening: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: serve(
                    options, journal=JOURNAL, port=0, ready=lambda url, _: listening.append(url)
                )
            )
            while not listening:
                await anyio.sleep(0.01)
            await ask(listening[0])
            group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
