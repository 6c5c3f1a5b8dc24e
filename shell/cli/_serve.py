"""`toolreel serve`: the loop over HTTP for a browser or a `useChat()` app (toolreel.web + uvicorn).

With no API key for the provider and no `--base-url`, it serves the offline
scripted calculator model (exactly as `make demo` does), and `/api/info` says
so. It binds 127.0.0.1 unless told otherwise, and prints the URL it serves on
(its real port when `--port 0`) to stderr once it is listening.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click

from toolreel.adapters import Journal
from toolreel.adapters._providers import api_key, codec_for

from .._options import AgentOptions
from .._scripted import ScriptedServer, openai_reply

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
            auto_execute_tools=True,
            max_tool_iterations=params["max_iterations"],
        )


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

    web = app(options, journal=journal, scripted=scripted, cors_origins=cors_origins)
    config = uvicorn.Config(
        web,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        # On Ctrl-C, turns still streaming get this long, then are cancelled (and journaled so).
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    server = uvicorn.Server(config)
    label = "the offline scripted calculator model" if scripted else options.model_name
    asyncio.run(_run(server, lambda url: _announce(url, label)))
    return 0


def _announce(url: str, label: str) -> None:
    """Say where the server listens (stderr, flushed: a parent process may be waiting for it)."""
    click.echo(f"toolreel serving {label} on {url} (Ctrl-C stops)", err=True)
    sys.stderr.flush()


async def _run(server: Any, announce: Callable[[str], None]) -> None:
    """Run the server; announce its URL once it listens."""
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started:
        host, port = server.servers[0].sockets[0].getsockname()[:2]
        announce(f"http://{host}:{port}")
    await task
