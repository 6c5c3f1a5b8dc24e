"""A worker process for tests/faults/test_one_writer.py: Clients of one session in many processes.

python one_writer_worker.py JOURNAL
    Prints "ready", then answers commands, one a line, until stdin ends:
    `open SESSION`: opens the session and prints "owner" (then waits for the line
    `finish`, runs one turn and prints "done") or "busy";
    `turn SESSION PROMPT`: opens the session until it is not busy, runs one turn,
    prints "done".
"""

from __future__ import annotations

import sys

import anyio

from toolreel.adapters import FunctionModel, SessionBusy
from toolreel.core import (
    FinishReason,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.shell import AgentOptions, Client, tool


@tool
async def note() -> str:
    """A tool that lets others run while it runs."""
    await anyio.sleep(0)
    return "noted"


def answer(request: ModelRequest) -> list[ModelEvent]:
    """Call `note`, then answer."""
    if request.messages[-1].role == "user":
        return [
            ToolCallStarted(index=0, call_id="call_note", name="note"),
            ToolCallArgumentsDelta(index=0, fragment="{}"),
            ModelResponded(finish_reason="tool_calls"),
        ]
    return [TextDelta(text="done"), ModelResponded()]


def options(journal: str, session_id: str) -> AgentOptions:
    """`session_id` in `journal`, tools run."""
    return AgentOptions(
        model="m", tools=[note], auto_execute_tools=True, journal=journal, session_id=session_id
    )


def line() -> str:
    """The next command (empty at the end of stdin)."""
    return sys.stdin.readline().strip()


async def turn(client: Client, prompt: str) -> None:
    """One turn, which must complete."""
    await client.query(prompt)
    finish = await client.wait()
    assert finish is not None and finish.reason is FinishReason.COMPLETED, finish


async def open_once(journal: str, session_id: str) -> None:
    """Open the session once: the owner runs a turn when told, a refused one says so."""
    try:
        async with Client(options(journal, session_id), model=FunctionModel(answer)) as client:
            print("owner", flush=True)
            assert await anyio.to_thread.run_sync(line) == "finish"
            await turn(client, "owner's turn")
            print("done", flush=True)
    except SessionBusy:
        print("busy", flush=True)


async def take_a_turn(journal: str, session_id: str, prompt: str) -> None:
    """Open the session until it is free, then run one turn."""
    while True:
        try:
            async with Client(options(journal, session_id), model=FunctionModel(answer)) as c:
                await turn(c, prompt)
                break
        except SessionBusy:
            await anyio.sleep(0.01)  # another process has it: try again
    print("done", flush=True)


async def main(journal: str) -> None:
    """Answer commands until stdin ends."""
    print("ready", flush=True)
    while command := await anyio.to_thread.run_sync(line):
        match command.split(" ", 2):
            case ["open", session_id]:
                await open_once(journal, session_id)
            case ["turn", session_id, prompt]:
                await take_a_turn(journal, session_id, prompt)
            case _:
                raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
