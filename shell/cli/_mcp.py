"""`--mcp "CMD ARGS"` and `--mcp-url URL`: MCP servers whose tools `run`, `chat` and `serve` offer.

toolreel.mcp (and the `mcp` SDK) is imported only when one is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from toolreel.core import ConfigError

#: `ctx.meta` key of the text of each option that a callback turned into objects, by name.
GIVEN = "toolreel.given"


def _servers(ctx: click.Context, param: click.Parameter, given: Sequence[str]) -> list[Any]:
    """Each `--mcp` command line (or `--mcp-url` URL) as an MCPServer (the text kept as given)."""
    if not given:
        return []
    ctx.meta.setdefault(GIVEN, {})[param.name] = tuple(given)
    try:
        from toolreel.mcp import MCPServer  # noqa: PLC0415 - the mcp extra, only when asked
    except ImportError as exc:
        raise click.UsageError(
            f"{param.opts[0]} needs the MCP SDK: pip install 'toolreel[mcp]' ({exc})"
        ) from exc
    make = MCPServer.http if param.name == "mcp_urls" else MCPServer.command_line
    try:
        return [make(item) for item in given]
    except ConfigError as exc:
        raise click.BadParameter(str(exc)) from exc


#: The repeatable `--mcp "CMD ARGS"` option: a stdio MCP server, run for the session.
MCP = click.option(
    "--mcp",
    "mcp_commands",
    multiple=True,
    metavar='"CMD ARGS"',
    callback=_servers,
    help="An MCP server to run (stdio) and offer the tools of (repeatable).",
)
#: The repeatable `--mcp-url URL` option: a streamable HTTP MCP server.
MCP_URL = click.option(
    "--mcp-url",
    "mcp_urls",
    multiple=True,
    metavar="URL",
    callback=_servers,
    help="An MCP server over streamable HTTP to offer the tools of (repeatable).",
)


def mcp_servers(params: dict[str, Any]) -> list[Any]:
    """The MCP servers the command line names, `--mcp` ones first."""
    return [*params.get("mcp_commands", ()), *params.get("mcp_urls", ())]
