"""A worker process for tests/faults/test_one_writer.py: Clients of one session in many processes.

python one_writer_worker.py JOURNAL
    Prints "ready", then answers commands, one a line, until stdin ends:
    `open SESSION`: opens the session and prints "owner" (then waits for the line
    `finish`, runs one turn and prints "done") or "busy";
    `turn SESSION PROMPT`: opens the session until it is not busy, runs one turn,
    prints "done".
A command that fails otherwise prints one line, "failed: ...", saying what the worker saw
(the step and phase it opened the session at, the refusals before, the steps now in the
journal), and the whole story with the traceback on stderr; then the next command is read.
"""

from __future__ import annotations

import sys
import traceback

import anyio

from toolreel.adapters import EventModel, SessionBusy
from toolreel.core import (
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, open_journal, tool


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


class Seen:
    """What a worker saw of one session, told when a command fails."""

    def __init__(self, journal: str, session_id: str) -> None:
        """Nothing seen yet."""
        self.journal, self.session_id = journal, session_id
        self.refusals: list[str] = []  # the last few
        self.busy = 0
        self.opened: str | None = None

    def refused(self, busy: SessionBusy) -> None:
        """An open refused (kept: the last few say who held the session)."""
        self.refusals = [*self.refusals[-2:], str(busy)]
        self.busy += 1

    def open(self, client: Client) -> None:
        """The session as the client found it on opening."""
        self.opened = f"step {client.runner.seq}, phase {client.phase.name}"

    def steps(self) -> str:
        """The session's steps in the journal now: how many, and the step ending each turn."""
        journal = open_journal(self.journal)
        try:
            entries = list(journal.entries(self.session_id))
        finally:
            journal.close()
        ends = [e.seq for e in entries if any(r.get("type") == "Finish" for r in e.effects)]
        last = entries[-1].seq if entries else 0
        unfinished = ", the last turn unfinished" if last not in ends else ""
        return f"{last} steps, turns ending at {' '.join(map(str, ends)) or 'none'}{unfinished}"

    def tell(self, failure: BaseException) -> None:
        """One line on stdout for the test's assertion, the whole story on stderr."""
        try:
            steps = self.steps()
        except Exception as exc:  # the journal itself failing is worth telling too
            steps = f"unreadable ({type(exc).__name__}: {exc})"
        opened = self.opened or "not opened"
        line = (
            f"failed: {type(failure).__name__}: {failure} (session {self.session_id!r} opened at "
            f"{opened} after {self.busy} refusals; journal now: {steps})"
        )
        print(line, flush=True)
        details = "\n  ".join(self.refusals) or "none"
        trace = "".join(traceback.format_exception(failure))
        print(f"{line}\nthe last refusals:\n  {details}\n{trace}", file=sys.stderr, flush=True)


async def open_once(journal: str, session_id: str) -> None:
    """Open the session once: the owner runs a turn when told, a refused one says so."""
    seen = Seen(journal, session_id)
    try:
        async with Client(options(journal, session_id), model=EventModel(answer)) as client:
            seen.open(client)
            print("owner", flush=True)
            assert await anyio.to_thread.run_sync(line) == "finish"
            await turn(client, "owner's turn")
            print("done", flush=True)
    except SessionBusy:
        print("busy", flush=True)
    except Exception as exc:
        seen.tell(exc)


async def take_a_turn(journal: str, session_id: str, prompt: str) -> None:
    """Open the session until it is free, then run one turn."""
    seen = Seen(journal, session_id)
    try:
        while True:
            try:
                async with Client(options(journal, session_id), model=EventModel(answer)) as c:
                    seen.open(c)
                    await turn(c, prompt)
                    break
            except SessionBusy as busy:
                seen.refused(busy)
                await anyio.sleep(0.01)  # another process has it: try again
    except Exception as exc:
        seen.tell(exc)
        return
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
