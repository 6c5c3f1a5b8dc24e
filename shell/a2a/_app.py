"""`app` and `serve`: a toolreel agent as an A2A server (the `a2a-sdk` server pieces).

The agent card is at `/.well-known/agent-card.json`; JSON-RPC (A2A 1.0, and
0.3's `message/send`-style names) at `/`. Each message is a turn of the
journaled session its contextId names (shell/a2a/_executor.py); tasks are the
journal's turns (shell/a2a/_tasks.py). The rules of shell/a2a/_guards.py apply.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    Task,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette
from starlette.types import ASGIApp

from toolreel.adapters import Journal, ModelPort
from toolreel.shell import AgentOptions, Tool, open_journal, tool
from toolreel.shell.engine import access_token, checked_token

from ._executor import TurnExecutor
from ._guards import Guard, host_names
from ._tasks import JournalTaskStore, TurnIds

#: The largest request body accepted by default.
MAX_BODY_BYTES = 4 * 1024 * 1024


class Handler(DefaultRequestHandler):
    """The SDK's request handler; `tasks/cancel` also cancels a turn paused in the journal."""

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """Cancel as the SDK does, then the journal's paused turn (it runs no `execute`)."""
        task: Task | None = await super().on_cancel_task(params, context)
        assert task is not None and isinstance(self.agent_executor, TurnExecutor)
        await self.agent_executor.cancelled(task.context_id)
        return task


def agent_card(
    options: AgentOptions, url: str, *, name: str = "toolreel", description: str | None = None
) -> AgentCard:
    """The card: a `chat` skill (a turn of the loop), one skill per tool; never the system
    prompt (what the operator told the model is not the callers' to read)."""
    tools = [item if isinstance(item, Tool) else tool(item) for item in options.tools]
    skills = [
        AgentSkill(
            id="chat",
            name="chat",
            description="Ask the agent: each message is a turn of its tool loop, each context "
            "a journaled session.",
            tags=["chat"],
        ),
        *(
            AgentSkill(id=t.name, name=t.name, description=t.description or t.name, tags=["tool"])
            for t in tools
        ),
    ]
    return AgentCard(
        name=name,
        description=description or "A toolreel agent: a tool loop with a journal.",
        version=_version() or "0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
    )


def app(
    options: AgentOptions,
    *,
    journal: str | Path | Journal | None = None,
    model: ModelPort | None = None,
    url: str = "http://127.0.0.1:8000/",
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    name: str = "toolreel",
    description: str | None = None,
) -> ASGIApp:
    """The agent `options` describe as an A2A server: an ASGI app (run it with its lifespan,
    which opens the journal).

    `journal` keeps the sessions (default: the options' journal; with none, an
    in-memory one living as long as the app); `model` replaces the options' model;
    `url` is where the card says the agent is; `host`, `allowed_hosts`, `token`
    and `max_body_bytes` are the HTTP rules (shell/a2a/_guards.py).
    """
    if token is not None:
        checked_token(token)
    kept = journal if journal is not None else options.journal
    opened: list[Journal] = []

    def current() -> Journal:
        """The journal the app opened (opened now when the lifespan did not run)."""
        if not opened:
            opened.append(open_journal(kept))
        return opened[0]

    card = agent_card(options, url, name=name, description=description)
    executor = TurnExecutor(
        attrs.evolve(options, journal=None, auto_execute_tools=True), current, model
    )
    store = JournalTaskStore(current)
    handler = Handler(
        agent_executor=executor,
        task_store=store,
        agent_card=card,
        request_context_builder=TurnIds(store, executor.session_options, executor.busy),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        """Open the journal for the app's life; close it (when opened here) and the tasks."""
        current()
        try:
            yield
        finally:
            await handler.aclose()
            if kept is None or isinstance(kept, str | Path):
                opened.pop().close()

    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True),
    ]
    return Guard(
        Starlette(routes=routes, lifespan=lifespan),
        names=host_names(host, allowed_hosts),
        token=token,
        max_body=max_body_bytes,
        open_paths=frozenset({AGENT_CARD_WELL_KNOWN_PATH}),
    )


async def serve(
    options: AgentOptions,
    *,
    journal: str | Path | Journal | None = None,
    model: ModelPort | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    ready: Callable[[str, str | None], object] | None = None,
) -> None:
    """Serve `app(...)` with uvicorn until cancelled; off loopback a token is required (the
    one given, else one made here). `ready(url, token)` is called once it listens."""
    import uvicorn  # noqa: PLC0415 - only when serving

    token = access_token(host, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.create_server((host.strip("[]"), port), family=family) as sock:
        bound = sock.getsockname()[1]
        where = f"[{host.strip('[]')}]" if ":" in host else host
        url = f"http://{where}:{bound}/"
        served: Any = app(
            options,
            journal=journal,
            model=model,
            url=url,
            host=host,
            allowed_hosts=allowed_hosts,
            token=token,
            max_body_bytes=max_body_bytes,
        )
        if ready is not None:
            ready(url, token)
        server = uvicorn.Server(uvicorn.Config(served, log_level="warning", lifespan="on"))

        async def until_shut() -> None:
            """Serve until told to exit, then shut down in full (never cut short)."""
            with anyio.CancelScope(shield=True):
                await server.serve(sockets=[sock])

        async with anyio.create_task_group() as group:
            group.start_soon(until_shut)
            try:
                await anyio.sleep_forever()
            finally:  # cancelled: stop serving, close the journal (the app's lifespan)
                server.should_exit = True


def _version() -> str:
    """toolreel's installed version ("" when not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("toolreel")
    except PackageNotFoundError:
        return ""
