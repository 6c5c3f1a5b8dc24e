"""`toolreel mcp-serve`: the agent the flags describe, served as an MCP server (stdio or HTTP).

toolreel.mcp (and the `mcp` SDK) is imported only when the command runs.
Over stdio, stdout is the protocol's: everything else goes to stderr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import click

from . import (
    CONNECTION,
    JOURNAL_HELP,
    JOURNAL_TYPE,
    MAX_HELP,
    RECOVERY,
    _with,
)
from . import _budget as budgets
from . import _temporal as agents_option
from ._serving import http_options, ready, served, serving


def _listening(url: str) -> str | None:
    """Where the server listens over HTTP; over stdio nothing (a client shows a server's
    stderr as its own, e.g. `toolreel run --mcp`)."""
    return None if url == "stdio" else f"toolreel MCP server on {url}"


def _ready(host: str, given: str | None) -> Callable[[str, str | None], None]:
    """What this command says once its server listens (`ready` with `_listening`)."""
    return ready(host, given, _listening)


@click.command("mcp-serve")
@_with(CONNECTION)
@click.option(
    "--agents",
    multiple=True,
    metavar="MODULE:ATTR",
    callback=agents_option._agents_option,
    help="Structured-output agents to serve, one MCP tool each: a dict of name -> "
    "AgentDefinition (repeatable).",
)
@click.option("--expose-tools", is_flag=True, help="Also list the plain tools as MCP tools.")
@click.option("--journal", type=JOURNAL_TYPE, help=JOURNAL_HELP)
@click.option("--system", metavar="TEXT", help="System prompt of the chat tool.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=5, metavar="N", help=MAX_HELP)
@RECOVERY
@_with(budgets.options())
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: for a client that starts this command; http: streamable HTTP at /mcp.",
)
@_with(
    http_options(
        "HTTP: ",
        "HTTP: the token every request carries (Authorization: Bearer). Off loopback one is "
        "required: made and printed if not given.",
    )
)
def mcp_serve(
    *,
    agents: dict[str, Any],
    expose_tools: bool,
    transport: str,
    host: str,
    port: int,
    hosts: tuple[str, ...],
    token: str | None,
    max_body: int,
    **params: Any,
) -> int:
    """Serve the agent as an MCP server: a `chat` tool, one tool per --agents entry.

    `chat` takes {"prompt": ...} and answers with the turn's text; an agent's
    tool takes its build_prompt's parameter and answers with the validated
    output as structured content. Each call is a session in --journal (its id
    in the result's _meta "toolreel/session_id"); progress is notified per
    round. --expose-tools lists the plain tools too. A call held for approval
    is asked of the client (MCP elicitation), or answered with an error saying
    how to decide it. `toolreel run --mcp "toolreel mcp-serve ..."` uses it.
    Runs until stdin ends (stdio) or Ctrl-C (exit 130).
    """
    options, journal, testing = served(params)
    if journal is not None:  # opened by the server, named in its held-call messages
        options = attrs.evolve(options, journal=journal)
    try:
        from toolreel.mcp import agent_server, serve  # noqa: PLC0415 - the mcp extra
    except ImportError as exc:
        raise click.UsageError(
            f"mcp-serve needs the MCP SDK: pip install 'toolreel[mcp]' ({exc})"
        ) from exc
    server = agent_server(options, agents=agents, expose_tools=expose_tools)
    run = functools.partial(
        serve,
        server,
        transport="http" if transport == "http" else "stdio",
        host=host,
        port=port,
        allowed_hosts=hosts,
        token=token,
        max_body_bytes=max_body,
        ready=_ready(host, token),
    )
    return serving(run, testing)
