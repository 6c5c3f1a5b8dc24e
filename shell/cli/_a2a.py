"""`toolreel a2a-serve`: the agent the flags describe, served as an A2A server over HTTP.

toolreel.a2a (and `a2a-sdk`) is imported only when the command runs.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
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
from ._mcp_serve import _loopback


def _ready(host: str, given: str | None) -> Callable[[str, str | None], None]:
    """What to say once the server listens: where, and the token a client must send (shown
    only when made here, never one given)."""

    def told(url: str, token: str | None) -> None:
        click.echo(
            f"toolreel A2A server on {url} (card: {url}.well-known/agent-card.json)", err=True
        )
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


@click.command("a2a-serve")
@_with(CONNECTION)
@click.option("--journal", type=JOURNAL_TYPE, help=JOURNAL_HELP)
@click.option("--system", metavar="TEXT", help="System prompt of the agent.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=5, metavar="N", help=MAX_HELP)
@RECOVERY
@_with(budgets.options())
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on (off loopback an access token is required).",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="0: any free."
)
@click.option(
    "--allowed-host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="Another host name to answer to (repeatable; '*': any).",
)
@click.option(
    "--token",
    envvar="TOOLREEL_TOKEN",
    metavar="TOKEN",
    help="The token every request but the agent card's carries (Authorization: Bearer). "
    "Off loopback one is required: made and printed if not given.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    default=4 * 1024 * 1024,
    metavar="BYTES",
    help="The largest request body accepted (413 beyond) [default: 4 MiB].",
)
def a2a_serve(
    *,
    host: str,
    port: int,
    hosts: tuple[str, ...],
    token: str | None,
    max_body: int,
    **params: Any,
) -> int:
    """Serve the agent as an A2A server: its card at /.well-known/agent-card.json, JSON-RPC at /.

    Each message is a turn of the session its contextId names (in --journal);
    a task is one turn, `<contextId>-<n>`, readable with tasks/get after a
    restart. A call held for approval makes the task input-required: the next
    message decides it ("yes"/"no", or a data part {"approve": [ids], "deny":
    [ids]}). tasks/cancel interrupts the turn. Runs until Ctrl-C (exit 130).
    """
    params.update(session=None, no_stream=False)
    path: Path | DatabaseUrl | None = params["journal"]
    if path is not None:
        check_journal(path, must_exist=False)
    testing = params["model"] == "test"
    options = agent_options(params, None)
    if not testing:
        check_key(options)
    try:
        from toolreel.a2a import serve  # noqa: PLC0415 - the a2a extra
    except ImportError as exc:
        raise click.UsageError(
            f"a2a-serve needs the A2A SDK: pip install 'toolreel[a2a]' ({exc})"
        ) from exc
    journal = None if path is None else path.url if isinstance(path, DatabaseUrl) else path
    run = functools.partial(
        serve,
        options,
        journal=journal,
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
