"""What `mcp-serve` and `a2a-serve` share: their HTTP flags and what they say once listening."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import click

from toolreel.shell import AgentOptions
from toolreel.shell.engine import DatabaseUrl, is_loopback

from . import agent_options, check_journal, check_key, test_model

#: The largest request body a server takes unless told (413 beyond).
MAX_BODY = 4 * 1024 * 1024


def http_options(where: str, token_help: str) -> list[Callable[[Any], Any]]:
    """--host, --port, --allowed-host, --token, --max-body; `where` ("HTTP: " or "") starts
    the help of those that hold over HTTP only."""

    def said(text: str) -> str:
        """`text` after `where`, or capitalised alone."""
        return f"{where}{text}" if where else text[:1].upper() + text[1:]

    return [
        click.option(
            "--host",
            default="127.0.0.1",
            show_default=True,
            help=said("the address to listen on (off loopback an access token is required)."),
        ),
        click.option(
            "--port",
            type=click.IntRange(0, 65535),
            default=8000,
            show_default=True,
            help="0: any free.",
        ),
        click.option(
            "--allowed-host",
            "hosts",
            multiple=True,
            metavar="NAME",
            help=said("another host name to answer to (repeatable; '*': any)."),
        ),
        click.option("--token", envvar="TOOLREEL_TOKEN", metavar="TOKEN", help=token_help),
        click.option(
            "--max-body",
            type=click.IntRange(min=1),
            default=MAX_BODY,
            metavar="BYTES",
            help=said("the largest request body accepted (413 beyond) [default: 4 MiB]."),
        ),
    ]


def ready(
    host: str, given: str | None, listening: Callable[[str], str | None]
) -> Callable[[str, str | None], None]:
    """What to say once a server listens: `listening(url)` (None: nothing, e.g. over stdio),
    then off loopback the warning and the token a client must send (shown only when made here,
    never one given)."""

    def told(url: str, token: str | None) -> None:
        said = listening(url)
        if said is None:
            return
        click.echo(said, err=True)
        if is_loopback(host):
            return
        click.echo(
            "warning: serving beyond this machine: whoever holds the token can run its tools "
            "and spend its model key; keep it secret",
            err=True,
        )
        shown = "the token given (--token or TOOLREEL_TOKEN)" if given else token
        click.echo(f"every request must carry 'Authorization: Bearer {shown}'", err=True)

    return told


def served(params: dict[str, Any]) -> tuple[AgentOptions, str | Path | None, bool]:
    """The options the flags describe for a server (no session of its own, streamed), the
    journal given (checked; a database by its URL, unmasked, as a server opens it), and
    whether the model is the stand-in `test` (else the key is checked)."""
    params.update(session=None, no_stream=False)
    path: Path | DatabaseUrl | None = params["journal"]
    if path is not None:
        check_journal(path, must_exist=False)
    testing = params["model"] == "test"
    options = agent_options(params, None)
    if not testing:
        check_key(options)
    journal = path.url if isinstance(path, DatabaseUrl) else path
    return options, journal, testing


def serving(run: Callable[[], Awaitable[object]], testing: bool) -> int:
    """Run a server until it stops (exit 0) or Ctrl-C (130), with the stand-in model if asked."""
    try:
        with test_model() if testing else contextlib.nullcontext():
            anyio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0
