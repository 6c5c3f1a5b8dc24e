"""An agent as an MCP server: any MCP client asks it through its `chat` tool.

    python examples/mcp_server.py        # offline: this file is both the client and the server

Run plainly, it is an MCP client (the `mcp` SDK's own) that starts this file again with
`--serve` as a stdio MCP server: `toolreel.mcp.agent_server` over a calculator agent,
answered by the scripted calculator model (OPENAI_API_KEY set: gpt-4o-mini). The client
lists the tools, asks `chat` with a progress callback, then replays the session the
answer names from the journal. `toolreel mcp-serve --tools MODULE:TOOLS --journal FILE`
serves the same from the command line. Needs `pip install 'toolreel[mcp]'`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from toolreel.mcp import SESSION_META, agent_server, serve
from toolreel.shell import AgentOptions, Divergence, open_journal, replay
from toolreel.testing import ScriptedServer, calculator

JOURNAL = Path("mcp-server.db")


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


def be_the_server() -> None:
    """Serve the calculator agent over stdio until the client goes (stdout is the protocol's)."""
    with model() as (name, base_url, key):
        options = AgentOptions(
            model=name,
            base_url=base_url,
            api_key=key,
            tools=[add, multiply],
            auto_execute_tools=True,
            journal=str(JOURNAL),
        )
        anyio.run(serve, agent_server(options))


async def ask() -> str:
    """List the served tools, ask the agent, and say which session answered."""
    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        print("tools:", ", ".join(item.name for item in listed.tools))

        async def told(progress: float, total: float | None, message: str | None) -> None:
            print(f"progress {progress:g}: {message}")

        result = await session.call_tool(
            "chat", {"prompt": "What's 7 times 8, then add 5?"}, progress_callback=told
        )
    for block in result.content:
        if isinstance(block, types.TextContent):
            print("answer:", block.text)
    assert result.meta is not None
    return str(result.meta[SESSION_META])


def main() -> None:
    """Be the server (`--serve`), or the client that starts it."""
    if "--serve" in sys.argv:
        be_the_server()
        return
    session_id = anyio.run(ask)
    journal = open_journal(str(JOURNAL))
    try:
        replayed = replay(journal, session_id)
        print("replayed:", replayed if isinstance(replayed, Divergence) else "identical")
    finally:
        journal.close()


if __name__ == "__main__":
    main()
