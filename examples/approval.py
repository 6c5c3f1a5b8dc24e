"""Human approval: a tool that waits for a person, across processes.

    python examples/approval.py                    # asks; the turn pauses; the process exits
    python examples/approval.py yes CALL_ID        # later, any process: approve and go on
    python examples/approval.py no CALL_ID         # or deny (the model reads the reason)
    OPENAI_API_KEY=sk-... python examples/approval.py   # a real model (then decide the same way)

`delete_file` is declared `@tool(requires_approval=True)`: the model may call it, but it
runs only once someone approves. The decision is journaled (`approval.db`), so the asking
process can exit and another decide later. Offline, a function plays the model.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from toolreel.core import ChatMessage
from toolreel.shell import AgentOptions, Client, tool
from toolreel.testing import FunctionModel, ModelInfo, ToolCalls, call

SESSION = "cleanup"


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    Path(path).unlink(missing_ok=True)
    return f"deleted {path}"


def stand_in(messages: tuple[ChatMessage, ...], info: ModelInfo) -> str | ToolCalls:
    """The offline model: call delete_file, then say what came of it."""
    rounds = messages[-1].tool_rounds
    if not rounds:
        return ToolCalls([call("delete_file", path="old.log")])
    result = rounds[-1].results[0]
    return f"Could not delete it: {result.content}" if result.is_error else "Done: old.log is gone."


REAL = bool(os.environ.get("OPENAI_API_KEY"))
MODEL = None if REAL else FunctionModel(stand_in)
OPTIONS = AgentOptions(
    model="gpt-4o-mini" if REAL else "",
    tools=[delete_file],
    auto_execute_tools=True,
    journal="approval.db",
    session_id=SESSION,
)


async def ask() -> None:
    """Send the prompt; the turn pauses on the held call; print how to decide it."""
    async with Client(OPTIONS, model=MODEL) as client:
        await client.query("Delete old.log")
        finish = await client.wait()  # None: the turn is paused, not finished
        assert finish is None and client.paused is not None
        for request in client.pending_approvals:
            print("waiting for approval:", request.call.name, request.call.arguments)
            print(f"  python {sys.argv[0]} yes {request.call.id}")


async def decide(answer: str, call_id: str) -> None:
    """Another process, later: approve or deny the held call; the turn goes on."""
    async with Client.resume(SESSION, OPTIONS, model=MODEL) as client:
        if answer == "yes":
            await client.approve(call_id)
        else:
            await client.deny(call_id, "keep it: it is the only copy")
        finish = await client.wait()
        print(finish.text if finish else f"still waiting: {client.pending_approvals}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        anyio.run(decide, sys.argv[1], sys.argv[2])
    else:
        Path("old.log").write_text("old\n")
        anyio.run(ask)
