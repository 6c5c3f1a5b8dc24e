"""An MCP server for the tests, written with the `mcp` package's own server API.

    python mcp_demo_server.py                 # over stdio
    python mcp_demo_server.py --http          # streamable HTTP on 127.0.0.1, a free port,
                                              # printed as the first line of stdout
    python mcp_demo_server.py --only echo     # just these tools (repeatable)

Its tools: `echo` (text), `add` (text), `forecast` (structured content), `fail`
(raises: an error result), `crash` (kills its own process mid-call), `wait`
(never answers), `pid` (its process id), `header` (a request header), `paths`
(a schema with a nested object and an enum) and `snapshot` (a caption, a PNG image
and a WAV sound).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any, Literal, TypedDict

import anyio
import uvicorn
from mcp.server.mcpserver import Audio, Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

#: The smallest PNG (a 1x1 transparent pixel): what `snapshot` shows.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class Forecast(TypedDict):
    """A day's weather."""

    city: str
    high: int
    sky: str


def build(only: list[str] | None = None) -> MCPServer:
    """The server with its tools (all, or those named in `only`)."""
    server: MCPServer = MCPServer("demo")

    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    def forecast(city: str) -> Forecast:
        """Tomorrow's weather in a city."""
        return {"city": city, "high": 21, "sky": "clear"}

    def fail(reason: str) -> str:
        """Always fails, saying why."""
        raise ToolError(f"cannot do that: {reason}")

    def crash() -> str:
        """Kill this server's own process in the middle of the call."""
        sys.stdout.flush()
        os._exit(3)

    async def wait() -> str:
        """Never answer (until the client gives up)."""
        await anyio.sleep(3600)
        return "late"

    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    def header(name: str, ctx: Context) -> str:
        """The value of one header of this request (over HTTP), else "none"."""
        return (ctx.headers or {}).get(name, "none")

    def paths(root: dict[str, Any], mode: Literal["read", "write"] = "read") -> str:
        """A tool whose schema has a nested object and an enum."""
        return f"{mode} {root}"

    def snapshot() -> CallToolResult:
        """A caption, a picture and a sound."""
        picture = Image(data=PIXEL, format="png").to_image_content()
        sound = Audio(data=b"RIFF", format="wav").to_audio_content()
        return CallToolResult(content=[TextContent(type="text", text="the pixel"), picture, sound])

    tools = {
        "echo": echo,
        "add": add,
        "forecast": forecast,
        "fail": fail,
        "crash": crash,
        "wait": wait,
        "pid": pid,
        "header": header,
        "paths": paths,
        "snapshot": snapshot,
    }
    for name, function in tools.items():
        if only is None or name in only:
            server.add_tool(function, name=name)
    return server


def serve_http(server: MCPServer) -> None:
    """Serve streamable HTTP on a free port of 127.0.0.1; print the port first."""
    sock = socket.create_server(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    """Serve over stdio, or over HTTP with --http."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--only", action="append")
    given = parser.parse_args()
    server = build(given.only)
    if given.http:
        serve_http(server)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
