"""Write the sessions of `test_old_journals.py` into a SQLite and a JSONL journal.

The checked-in `bfd8293.db` and `bfd8293.jsonl` were written by this script run
with the code of main at bfd8293 (before budgets' `UsageReported` replayed), from
the repository's root, $OLD and $PP being absolute paths of empty directories:

    git archive bfd8293 core adapters shell | tar -x -C $OLD
    mkdir -p $PP/toolreel && for p in core adapters shell; do ln -s $OLD/$p $PP/toolreel/$p; done
    for p in testing web; do ln -s $OLD/shell/$p $PP/toolreel/$p; done
    PYTHONPATH=$PP .venv/bin/python tests/shell/journals/make_journals.py OUT/bfd8293

It uses only what both that code and today's offer: one session of each kind
a budget, approvals and images make (see `SESSIONS`), every model reply a fixed
list of events, so each run writes the same steps.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import attrs

from toolreel.adapters import JSONLJournal, SQLiteJournal

try:
    from toolreel.adapters import EventModel
except ImportError:  # bfd8293's name for it
    from toolreel.adapters import FunctionModel as EventModel
from toolreel.core import (
    ImagePart,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentRunOptions,
    Client,
    Connection,
    OutputTool,
    execute_agent,
    tool,
)

try:
    from toolreel.core.budget import Budget, Price
except ImportError:  # bfd8293 exported them from the shell
    from toolreel.shell import Budget, Price  # type: ignore[attr-defined,no-redef]

#: A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)
#: Usage with a provider's extra counter (Anthropic's cache reads), as pairs in the journal.
USAGE = Usage(input_tokens=7, output_tokens=3, extra=(("cache_read_input_tokens", 2),))
BUDGET = Budget(
    max_tool_calls=10,
    max_cost=1.0,
    prices={"m": Price(input_per_million=1.0, output_per_million=2.0)},
)
#: `BUDGET` with a limit per tool (for the sessions that offer `add`).
PER_TOOL = attrs.evolve(BUDGET, max_calls_per_tool={"add": 5})


@tool("add", "Add two integers", {"a": int, "b": int})
def add(args: dict[str, int]) -> dict[str, int]:
    """The sum."""
    return {"sum": args["a"] + args["b"]}


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (not really)."""
    return f"deleted {path}"


@tool
def snapshot() -> list[Any]:
    """A picture and a caption."""
    return ["the picture", ImagePart(media_type="image/png", data=PNG)]


def calls(*pairs: tuple[str, str]) -> list[Any]:
    """A response calling tools: (name, arguments JSON) each."""
    events: list[Any] = []
    for index, (name, arguments) in enumerate(pairs):
        events.append(ToolCallStarted(index=index, call_id=f"{name}_{index}", name=name))
        events.append(ToolCallArgumentsDelta(index=index, fragment=arguments))
    return [*events, ModelResponded(finish_reason="tool_calls", usage=USAGE)]


def answer(text: str) -> list[Any]:
    """A response of text."""
    return [TextDelta(text=text[:3]), TextDelta(text=text[3:]), ModelResponded(usage=USAGE)]


def scripted(*replies: list[Any]) -> EventModel:
    """A model giving `replies` in order, one a call."""
    left = list(replies)
    return EventModel(lambda _: left.pop(0))


def options(journal: Any, session_id: str, tools: list[Any]) -> AgentOptions:
    """A budgeted session of `tools` in `journal`."""
    return AgentOptions(
        model="m",
        tools=tools,
        auto_execute_tools=True,
        budget=PER_TOOL if add in tools else BUDGET,
        journal=journal,
        session_id=session_id,
    )


async def budget(journal: Any) -> None:
    """Two rounds of tool calls under a budget, then the answer (issue 20, item 4)."""
    model = scripted(
        calls(("add", '{"a":1,"b":2}')),
        calls(("add", '{"a":3,"b":4}'), ("add", '{"a":5,"b":6}')),
        answer("3, 7 and 11"),
    )
    async with Client(options(journal, "budget", [add]), model=model) as client:
        await client.query("add three times")
        await client.wait()


async def approvals(journal: Any) -> None:
    """Two held calls: one approved, one denied with a reason; budgeted."""
    model = scripted(
        calls(("delete", '{"path":"a.txt"}'), ("delete", '{"path":"b.txt"}')),
        answer("one deleted"),
    )
    async with Client(options(journal, "approvals", [delete]), model=model) as client:
        await client.query("delete a and b")
        await client.wait()
        first, second = client.pending_approvals
        await client.approve(first.call.id)
        await client.deny(second.call.id, "keep b")
        await client.wait()


async def images(journal: Any) -> None:
    """A prompt with an image and a tool answering with one; budgeted."""
    model = scripted(calls(("snapshot", "{}")), answer("a dot"))
    async with Client(options(journal, "images", [snapshot, add]), model=model) as client:
        await client.query("what is this?", images=[ImagePart(media_type="image/png", data=PNG)])
        await client.wait()


@attrs.frozen
class Total:
    """The agent's output."""

    total: int


async def agent(journal: Any) -> None:
    """An agent run with a budget: a helper call, then its output."""
    model = scripted(
        calls(("add", '{"a":20,"b":22}')),
        calls(("total", '{"total":42}')),
    )
    definition = AgentDefinition(
        build_prompt=lambda text: f"Sum: {text}",
        output=OutputTool.of(Total, name="total"),
        helpers=[add],
    )
    run_options = AgentRunOptions(connection=Connection(model="m"), budget=PER_TOOL)
    await execute_agent(
        definition, "20 + 22", run_options, model=model, journal=journal, session_id="agent"
    )


SESSIONS: list[Callable[[Any], Any]] = [budget, approvals, images, agent]


async def write(stem: str) -> None:
    """Every session into `stem`.db and `stem`.jsonl."""
    for journal in (SQLiteJournal(f"{stem}.db"), JSONLJournal(f"{stem}.jsonl")):
        try:
            for session in SESSIONS:
                await session(journal)
        finally:
            journal.close()


if __name__ == "__main__":
    anyio.run(write, sys.argv[1])
