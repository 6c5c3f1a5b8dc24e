"""`toolreel serve`: the loop over HTTP for a browser or a `useChat()` app (toolreel.web + uvicorn).

With no API key for the provider and no `--base-url`, it serves the offline
scripted calculator model (exactly as `make demo` does), and `/api/info` says
so. The budget flags give every chat served the same `Budget`. It binds
127.0.0.1 unless told otherwise, and prints the URL it serves on (its real
port when `--port 0`) to stderr once it is listening; a port it cannot listen
on is one `error:` line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import click

from toolreel.adapters import Journal
from toolreel.adapters._providers import api_key, codec_for

from .._client import sources_opened
from .._options import AgentOptions
from .._scripted import ScriptedServer, openai_reply
from ._budget import budget_of
from ._mcp import mcp_servers

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
    from .. import demo  # noqa: PLC0415 - its tools, only when scripted

    with ScriptedServer(openai_reply) as server:
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
        )


def listening(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: a free one); a ClickException if it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise click.ClickException(f"cannot listen on {host}:{port}: {reason}") from exc


def serve(
    options: AgentOptions,
    journal: Journal | None,
    *,
    host: str,
    port: int,
    scripted: bool,
    cors_origins: Sequence[str] = (),
) -> int:
    """Serve `toolreel.web.app` with uvicorn until Ctrl-C or SIGTERM; the exit code."""
    import uvicorn  # noqa: PLC0415 - the web extra loads only when serving

    from toolreel.web import app  # noqa: PLC0415 - likewise (Starlette)

    async def serving(sock: socket.socket) -> None:
        """Connect the MCP servers (once, for every request), then serve until stopped."""
        async with sources_opened(options) as opened:
            web = app(opened, journal=journal, scripted=scripted, cors_origins=cors_origins)
            config = uvicorn.Config(
                web,
                log_level="warning",
                lifespan="on",
                # On Ctrl-C, turns still streaming get this long, then are cancelled (journaled).
                timeout_graceful_shutdown=GRACE_SECONDS,
            )
            await uvicorn.Server(config).serve(sockets=[sock])

    with listening(host, port) as sock:
        # Connections queue from here on: the URL can be told before uvicorn starts.
        bound_host, bound_port = sock.getsockname()[:2]
        label = "the offline scripted calculator model" if scripted else options.model_name
        click.echo(f"toolreel serving {label} on http://{bound_host}:{bound_port}", err=True)
        sys.stderr.flush()  # a parent process may be waiting for the line
        asyncio.run(serving(sock))
    return 0
