"""`toolreel serve`: the loop over HTTP for a browser or a `useChat()` app (toolreel.web + uvicorn).

With no API key for the provider and no `--base-url`, it serves the offline
scripted calculator model (exactly as `make demo` does), and `/api/info` says
so. The budget flags give every chat served the same `Budget`. It binds
127.0.0.1 unless told otherwise, and prints the URL it serves on (its real
port when `--port 0`) to stderr once it is listening; a port it cannot listen
on is one `error:` line. Off loopback it warns, and every request must carry
an access token (`--token`, TOOLREEL_TOKEN, else one made and printed once in
the link to open); docs/guides/security.md. With `--temporal` it serves the session
workflows of a Temporal server instead (`temporal` below): no journal, no model
here, the workers of the task queue run every chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import secrets
import socket
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import click

from toolreel.adapters import Journal, api_key, codec_for
from toolreel.core.record import Value
from toolreel.shell import AgentOptions
from toolreel.shell.engine import sources_opened
from toolreel.shell.scripted import ScriptedServer, calculator

from ._budget import budget_of
from ._context import compaction_of
from ._mcp import mcp_servers
from ._temporal import Chats

#: An address `serve` listens on.
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: How long a stopping server waits for the turns still streaming before cancelling them.
GRACE_SECONDS = 3
#: The scripted model's name, as `/api/info` shows it.
SCRIPTED_MODEL = "scripted-calculator"


def wants_scripted(params: dict[str, Any]) -> bool:
    """Whether no real model is reachable: no key for the provider and no `--base-url`."""
    codec = codec_for(params["provider"])
    return (
        not params["base_url"] and bool(codec.api_key_env) and not api_key(codec, params["api_key"])
    )


@contextlib.contextmanager
def scripted_options(params: dict[str, Any]) -> Iterator[AgentOptions]:
    """Options pointed at the scripted calculator model, served on 127.0.0.1 meanwhile."""
    from toolreel.shell import demo  # noqa: PLC0415 - its tools, only when scripted

    with ScriptedServer(calculator) as server:
        yield AgentOptions(
            system_prompt=params["system"] or demo.SYSTEM,
            model=SCRIPTED_MODEL,
            base_url=server.url,
            provider="openai",
            tools=params["tools"] or demo.TOOLS,
            mcp_servers=mcp_servers(params),
            auto_execute_tools=True,
            max_tool_iterations=params["max_iterations"],
            budget=budget_of(params),
            compaction=compaction_of(params),
        )


def listening(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: a free one); a ClickException if it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise click.ClickException(f"cannot listen on {host}:{port}: {reason}") from exc


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Access(Value):
    """Who may call the server and with what: the flags `serve` passes on to `toolreel.web.app`."""

    cors_origins: Sequence[str] = ()
    #: Host names served besides the loopback ones and the address listened on.
    allowed_hosts: Sequence[str] = ()
    #: The access token given (`--token`, TOOLREEL_TOKEN); off loopback one is made if None.
    token: str | None = attrs.field(default=None, repr=False)
    #: The body limit (None: the app's default, 10 MiB).
    max_body_bytes: int | None = None


def serve(
    options: AgentOptions,
    journal: Journal | None,
    *,
    host: str,
    port: int,
    scripted: bool,
    access: Access = Access(),
    temporal: Chats | None = None,
) -> int:
    """Serve `toolreel.web.app` with uvicorn until Ctrl-C or SIGTERM; the exit code.

    Off loopback, every request must carry an access token: the one given, else
    one made here and printed once, in the link to open. `temporal`: serve the
    session workflows it opens (connected once, as serving starts).
    """
    import uvicorn  # noqa: PLC0415 - the web extra loads only when serving

    from toolreel.web import app  # noqa: PLC0415 - likewise (Starlette)

    async def serving(sock: socket.socket) -> None:
        """Connect the MCP servers (once, for every request), then serve until stopped."""
        address, bound_port = _serving_address(host, sock)
        token = access.token
        if token is None and not address.is_loopback:
            token = secrets.token_urlsafe(32)
        limits: dict[str, Any] = (
            {} if access.max_body_bytes is None else {"max_body_bytes": access.max_body_bytes}
        )
        sessions = await temporal.connected() if temporal is not None else None
        async with sources_opened(options) as opened:
            web = app(
                opened,
                journal=journal,
                scripted=scripted,
                sessions=sessions,
                cors_origins=access.cors_origins,
                allowed_hosts=[host, str(address), *access.allowed_hosts],
                token=token,
                **limits,
            )
            # Connections have queued since `listening`: the URL is told before uvicorn starts.
            label = "the offline scripted calculator model" if scripted else options.model_name
            if temporal is not None:
                label = temporal.label
            click.echo(
                f"toolreel serving {label} on http://{_netloc(address, bound_port)}", err=True
            )
            if not address.is_loopback:
                _warn_off_loopback(address, bound_port, token, made=access.token is None)
            sys.stderr.flush()  # a parent process may be waiting for the line
            config = uvicorn.Config(
                web,
                log_level="warning",
                lifespan="on",
                # On Ctrl-C, turns still streaming get this long, then are cancelled (journaled).
                timeout_graceful_shutdown=GRACE_SECONDS,
            )
            await uvicorn.Server(config).serve(sockets=[sock])

    with listening(host, port) as sock:
        asyncio.run(serving(sock))
    return 0


def _serving_address(host: str, sock: socket.socket) -> tuple[IPAddress, int]:
    """The address served (`host`'s, or for a name what it resolved to) and the port."""
    bound_host, bound_port = sock.getsockname()[:2]
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")), bound_port
    except ValueError:
        return ipaddress.ip_address(bound_host), bound_port


def _netloc(address: IPAddress, port: int) -> str:
    """`host:port` for a URL (an IPv6 address in brackets)."""
    return f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"


def _warn_off_loopback(address: IPAddress, port: int, token: str | None, *, made: bool) -> None:
    """Say that the network can reach the tools, and (once) the link with a token made here."""
    reach = "every address of this machine" if address.is_unspecified else str(address)
    click.echo(
        f"warning: serving beyond this machine ({reach}): whoever holds the access token "
        "can run its tools and spend its model key; keep the token secret",
        err=True,
    )
    if made and token is not None:
        local = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
        where = _netloc(local if address.is_unspecified else address, port)
        click.echo(
            f"open http://{where}/?token={token} (or send 'Authorization: Bearer {token}')",
            err=True,
        )
    else:
        click.echo("every request must carry the token given (--token or TOOLREEL_TOKEN)", err=True)
