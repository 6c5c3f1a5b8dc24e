"""`toolreel mcp-serve`: the agent the flags describe, served as an MCP server (stdio or HTTP).

toolreel.mcp (and the `mcp` SDK) is imported only when the command runs.
Over stdio, stdout is the protocol's: everything else goes to stderr.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
import click

from toolreel.shell.engine import DatabaseUrl

from . import (
    CONNECTION,
    JOURNAL_HELP,
    JOURNAL_TYPE,
    MAX_HELP,
    RECOVERY,
    _with,
    agent_options,
    check_journal,
    check_key,
    test_model,
)
from . import _budget as budgets
from . import _temporal as agents_option


def _ready(host: str, given: str | None) -> Callable[[str, str | None], None]:
    """What to say once the server listens: where (HTTP), and the token a client must send
    (shown only when made here, never one given); over stdio nothing (a client shows a
    server's stderr as its own, e.g. `toolreel run --mcp`)."""

    def told(url: str, token: str | None) -> None:
        if url == "stdio":
            return
        click.echo(f"toolreel MCP server on {url}", err=True)
        if _loopback(host):
            return
        click.echo(
            "warning: serving beyond this machine: whoever holds the token can run its tools "
            "and spend its model key; keep it secret",
            err=True,
        )
        shown = "the token given (--token or TOOLREEL_TOKEN)" if given else token
        click.echo(f"every request must carry 'Authorization: Bearer {shown}'", err=True)

    return told


def _loopback(host: str) -> bool:
    """Whether `host` is `localhost` or a loopback address."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


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
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP: the address to listen on (off loopback an access token is required).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0: any free."
)
@click.option(
    "--allowed-host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="HTTP: another host name to answer to (repeatable; '*': any).",
)
@click.option(
    "--token",
    envvar="TOOLREEL_TOKEN",
    metavar="TOKEN",
    help="HTTP: the token every request carries (Authorization: Bearer). Off loopback one is "
    "required: made and printed if not given.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    default=4 * 1024 * 1024,
    metavar="BYTES",
    help="HTTP: the largest request body accepted (413 beyond) [default: 4 MiB].",
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
    params.update(session=None, no_stream=False)
    path: Path | DatabaseUrl | None = params["journal"]
    if path is not None:
        check_journal(path, must_exist=False)
    testing = params["model"] == "test"
    options = agent_options(params, None)
    if not testing:
        check_key(options)
    if path is not None:  # opened by the server, named in its held-call messages
        options = attrs.evolve(options, journal=path.url if isinstance(path, DatabaseUrl) else path)
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
    try:
        with test_model() if testing else contextlib.nullcontext():
            anyio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0
