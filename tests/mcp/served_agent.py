"""Tools and agents that tests/mcp/test_mcp_serve.py serves with `toolreel mcp-serve`."""

from __future__ import annotations

import anyio
import attrs

from toolreel.shell import AgentDefinition, OutputTool, tool


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool(requires_approval=True)
def wipe(path: str) -> str:
    """Delete a file (held for approval)."""
    return f"wiped {path}"


async def slow() -> str:
    """Take a minute (a call the client gives up on)."""
    await anyio.sleep(60)
    return "done"


TOOLS = [add]
SLOW = [slow]
GUARDED = [add, wipe]


@attrs.frozen
class Summary:
    """What the summarise agent outputs."""

    title: str
    words: int


def summarise_prompt(text: str) -> str:
    """The prompt of the summarise agent."""
    return f"Summarise, with a title and the number of words:\n{text}"


AGENTS = {
    "summarise": AgentDefinition(
        build_prompt=summarise_prompt, output=OutputTool.of(Summary, name="record_summary")
    )
}


def tidy_prompt(folder: str) -> str:
    """The prompt of the tidy agent, whose helper `wipe` is held for approval."""
    return f"Tidy {folder}, then summarise what you did."


GUARDED_AGENTS = {
    "tidy": AgentDefinition(
        build_prompt=tidy_prompt,
        output=OutputTool.of(Summary, name="record_summary"),
        helpers=[wipe],
    )
}
