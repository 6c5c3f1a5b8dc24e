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

The other way round, a toolreel agent as an MCP server (`toolreel mcp-serve`;
docs/guides/mcp-server.md):

    server = agent_server(options, agents={"invoice": definition}, expose_tools=False)
    await serve(server)                                   # stdio
    await serve(server, transport="http", port=8000)      # http://127.0.0.1:8000/mcp
    app = http_app(server)                                # an ASGI app to mount yourself

Its tools: `chat` (one turn of the loop), one per agent (structured output),
optionally the plain tools; each call a journaled session named in the result's
`_meta[SESSION_META]`.
"""

from __future__ import annotations

from ._agent_server import agent_server
from ._results import result_text
from ._server import MCPConnectError, MCPConnection, MCPServer, MCPTool, MCPToolError
from ._serving import http_app, serve
from ._tool_results import SESSION_META

__all__ = [
    "SESSION_META",
    "MCPConnectError",
    "MCPConnection",
    "MCPServer",
    "MCPTool",
    "MCPToolError",
    "agent_server",
    "http_app",
    "result_text",
    "serve",
]
