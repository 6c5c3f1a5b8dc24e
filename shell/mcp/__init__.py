"""toolreel.mcp: tools from MCP servers as ordinary toolreel tools (`pip install 'toolreel[mcp]'`).

    from toolreel.mcp import MCPServer

    files = MCPServer.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                            prefix="fs_")
    options = AgentOptions(mcp_servers=[files], auto_execute_tools=True)  # per Client
    async with Client(options) as client: ...

    async with MCPServer.http("http://127.0.0.1:8000/mcp") as server:  # or by hand
        options = AgentOptions(tools=server.tools(), auto_execute_tools=True)

A server's tools keep their input schemas as the server gave them; their
results are the text blocks joined (structured content alone: its JSON); an
`isError` result, a protocol error and a server that died mid-call are error
results the model reads, never a hang (the call ends when the transport
closes, and the tool timeout still applies). A program that is not there is
a `ConfigError`, a server that cannot be reached an `MCPConnectError`, both
raised when connecting. Built on the official `mcp` SDK (2.x).
"""

from __future__ import annotations

from ._results import result_text
from ._server import MCPConnectError, MCPConnection, MCPServer, MCPTool, MCPToolError

__all__ = [
    "MCPConnectError",
    "MCPConnection",
    "MCPServer",
    "MCPTool",
    "MCPToolError",
    "result_text",
]
