"""MCP tools: the tools of an MCP server (stdio here) become ordinary toolreel tools.

    python examples/mcp_tools.py                   # offline: this file is also the MCP server
    OPENAI_API_KEY=sk-... python examples/mcp_tools.py --model gpt-4o-mini

Run plainly, it starts itself again with `--serve-mcp` as a stdio MCP server (written with
the `mcp` package's own server API) offering `add` and `multiply`, and the scripted
calculator model calls them. Needs `pip install 'toolreel[mcp]'`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

import anyio

from toolreel.mcp import MCPServer
from toolreel.shell import AgentOptions, run
from toolreel.testing import ScriptedServer, calculator


def serve_mcp() -> None:
    """Be the MCP server: two tools over stdio (the `mcp` SDK's server API)."""
    from mcp.server.mcpserver import MCPServer as Server  # noqa: PLC0415 (the server only)

    server: Server = Server("calculator")

    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    server.add_tool(add, name="add")
    server.add_tool(multiply, name="multiply")
    server.run("stdio")


@contextlib.contextmanager
def connection(base_url: str | None, model: str) -> Iterator[tuple[str | None, str, str | None]]:
    """The server, model and key to use: those asked for, else the offline calculator."""
    if base_url or os.environ.get("OPENAI_API_KEY"):
        yield base_url, model, None  # the key: OPENAI_API_KEY
    else:
        with ScriptedServer(calculator) as server:
            yield server.url, "calculator", "none"  # it takes any key


def main() -> None:
    """Offer the MCP server's tools to the model; print each call and the answer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve-mcp", action="store_true", help="be the stdio MCP server")
    parser.add_argument("--base-url", help="an OpenAI-compatible server's .../v1 URL")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    if args.serve_mcp:
        serve_mcp()
        return

    calculator_tools = MCPServer.stdio(sys.executable, [__file__, "--serve-mcp"])
    with connection(args.base_url, args.model) as (base_url, model, key):
        options = AgentOptions(
            base_url=base_url,
            model=model,
            api_key=key,
            mcp_servers=[calculator_tools],  # connected as the run starts, closed as it ends
            on_tool_result=lambda result: print(f"{result.name} -> {result.content}"),
        )
        result = anyio.run(run, "What's 7 times 8, then add 5?", options)
    print(result.text)


if __name__ == "__main__":
    main()
