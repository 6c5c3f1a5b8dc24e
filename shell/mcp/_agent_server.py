"""`agent_server`: a toolreel agent as an MCP server (the `mcp` SDK's low-level `Server`).

The tools it lists:

1. `chat` (unless `chat=None`): one turn of the tool loop the `AgentOptions`
   describe; its input `{"prompt": str}`, its result the answer's text.
2. one tool per `agents` entry (name -> `AgentDefinition`): its input the
   schema of the definition's `build_prompt` parameter (as `@tool` would offer
   that function), its result the validated output as structured content,
   with the output tool's schema as the MCP tool's `outputSchema` (and its
   JSON as text, as the specification asks).
3. with `expose_tools=True`, the plain tools themselves (the options' tools and
   those of their MCP servers), run once per call; not a tool that requires
   approval, which an MCP call would run unasked.

Rules of a call:

- each call of 1 or 2 is a new journaled session (the options' journal; with
  none, an in-memory one that lives as long as the server); the result's
  `_meta["toolreel/session_id"]` names it, for `toolreel show` / `replay`;
- progress: when the request carries a progress token, one
  `notifications/progress` per round of the loop (per attempt, helper result
  and failed validation of an agent run), its message saying what happened;
- a turn that did not complete is a tool error result (`isError`) with the
  reason, never a protocol error; so are arguments that do not fit the input
  schema (the specification's "input validation errors" are tool execution
  errors, which a calling model can read and correct); an unknown tool name is
  the protocol's invalid-params error;
- a call held for approval (a chat turn's, or an agent's helper): if the client
  declared the elicitation capability, the server asks it (shell/mcp/_elicited.py)
  and goes on with its decisions; else the result is an error saying the call
  is held in session S and how to decide it (`toolreel approve --journal J
  --session S CALL_ID`; an agent run: `resume_agent(...)`), the session staying
  paused in the journal;
- a call the client cancels ends its turn `cancelled`, journaled; a toolreel
  error (a journal that gave up, ...) is an error result naming the tool.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from returns.result import Failure

from toolreel.adapters import Journal, ModelPort
from toolreel.core import AwaitApproval, ConfigError, Finish, ToolreelError
from toolreel.core.notices import AttemptStarted, RoundFinished, ToolResultReady, ValidationFailed
from toolreel.core.record import Record, Value
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentRunOptions,
    AgentSuccess,
    Client,
    Tool,
    execute_agent,
    open_journal,
    resume_agent,
    tool,
)
from toolreel.shell.errors import ApprovalPending

from ._elicited import ask, can_elicit
from ._served_input import Input, chat_input, definition_input
from ._server import MCPServer
from ._tool_results import SESSION_META, error_result, finished, held, text_result

Context = ServerRequestContext["Served", Any]


@attrs.define(kw_only=True, eq=False, repr=False)
class Served(Record):
    """What a running server holds: the options (their MCP servers' tools added), the journal."""

    options: AgentOptions
    journal: Journal
    location: str | None
    model: ModelPort | None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class _Offer(Value):
    """One MCP tool: how it is listed, and how a call to it is answered."""

    listed: types.Tool
    input: Input | None = None
    definition: AgentDefinition[Any, Any] | None = None
    plain: Tool | None = None


def agent_server(
    options: AgentOptions,
    *,
    agents: Mapping[str, AgentDefinition[Any, Any]] | None = None,
    chat: str | None = "chat",
    description: str | None = None,
    expose_tools: bool = False,
    name: str = "toolreel",
    model: ModelPort | None = None,
) -> Server[Served]:
    """The MCP server exposing `options`' chat loop as the tool `chat`, and each of `agents`.

    Serve it with `serve(...)`, `http_app(server)`, or the SDK (`server.run(...)`).
    `chat` names the chat tool (None: no chat tool), `description` says what it
    is for (default: a sentence naming its tools, never the system prompt);
    `model` replaces the model the options describe (a `TestModel`, ...).
    """
    agents = dict(agents or {})
    if chat is not None and chat in agents:
        raise ConfigError("agents", chat, "names other than the chat tool's (or chat=None)")
    fixed = _fixed_offers(options, agents, chat, description)

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Served]) -> AsyncIterator[Served]:
        """Open the journal and the options' MCP servers for the server's life."""
        async with contextlib.AsyncExitStack() as stack:
            tools = list(options.tools)
            for source in options.mcp_servers:
                assert isinstance(source, MCPServer)
                tools += (await stack.enter_async_context(source.open())).tools()
            journal = open_journal(options.journal)
            if options.journal is None or isinstance(options.journal, str | Path):
                stack.callback(journal.close)  # opened here, so closed here
            yield Served(
                options=attrs.evolve(options, tools=tools, mcp_servers=(), journal=journal),
                journal=journal,
                location=_location(options.journal),
                model=model,
            )

    def offers(served: Served) -> dict[str, _Offer]:
        """Every tool listed, by name."""
        found = dict(fixed)
        if expose_tools:
            for item in map(_as_tool, served.options.tools):
                if not item.requires_approval and item.name not in found:
                    found[item.name] = _plain_offer(item)
        return found

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every tool on one page."""
        return types.ListToolsResult(
            tools=[o.listed for o in offers(ctx.lifespan_context).values()]
        )

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        """Answer one call (module docstring); an unknown tool is a protocol error."""
        offer = offers(ctx.lifespan_context).get(params.name)
        if offer is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        arguments = dict(params.arguments or {})
        if offer.plain is not None:
            return await _run_plain(offer.plain, arguments)
        assert offer.input is not None
        given = offer.input.read(arguments)
        if isinstance(given, Failure):
            return error_result(f"Invalid arguments for {params.name}: {given.failure()}")
        try:
            if offer.definition is None:
                return await _run_chat(ctx, given.unwrap())
            return await _run_agent(ctx, offer.definition, given.unwrap())
        except ToolreelError as exc:  # a journal that gave up, content the model refuses, ...
            return error_result(f"{params.name} failed: {exc}")

    return Server(
        name,
        version=_version(),
        instructions="Tools that run a toolreel agent; each call is a journaled session.",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _fixed_offers(
    options: AgentOptions,
    agents: Mapping[str, AgentDefinition[Any, Any]],
    chat: str | None,
    description: str | None,
) -> dict[str, _Offer]:
    """The chat tool and one tool per agent, as listed."""
    found: dict[str, _Offer] = {}
    if chat is not None:
        entry = chat_input()
        # Never the system prompt: what the operator told the model is not the callers' to read.
        tools = ", ".join(_as_tool(item).name for item in options.tools)
        described = description or (
            "Ask the agent: one turn of its tool loop; the result is its answer."
            + (f" Its tools: {tools}." if tools else "")
        )
        found[chat] = _Offer(
            listed=types.Tool(name=chat, description=described, input_schema=entry.schema),
            input=entry,
        )
    for agent_name, definition in agents.items():
        entry = definition_input(definition)
        output = definition.output
        found[agent_name] = _Offer(
            listed=types.Tool(
                name=agent_name,
                description=f"Run the agent {agent_name}: {output.description}",
                input_schema=entry.schema,
                output_schema=dict(output.parameters),
            ),
            input=entry,
            definition=definition,
        )
    return found


def _as_tool(item: Any) -> Tool:
    """A Tool as it is, a plain function as `@tool` makes it."""
    return item if isinstance(item, Tool) else tool(item)


def _plain_offer(item: Tool) -> _Offer:
    """A plain tool listed as it is offered to the model."""
    return _Offer(
        listed=types.Tool(
            name=item.name, description=item.description, input_schema=dict(item.parameters)
        ),
        plain=item,
    )


async def _run_plain(item: Tool, arguments: dict[str, Any]) -> types.CallToolResult:
    """One call of a plain tool: its output text, or its error as an error result."""
    done = await item.run(json.dumps(arguments))
    value = done.value_or(None)
    if value is None:
        return error_result(str(done.failure()))
    return text_result(value if isinstance(value, str) else value.text)


async def _run_chat(ctx: Context, given: Any) -> types.CallToolResult:
    """One turn of the loop in a new session: its answer, or why there is none."""
    served = ctx.lifespan_context
    session = uuid.uuid4().hex
    options = attrs.evolve(served.options, session_id=session)
    async with Client(options, model=served.model) as client:
        await client.query(given)
        rounds = 0
        while True:
            paused: AwaitApproval | None = None
            async for item in client.events():
                if isinstance(item, RoundFinished):
                    rounds += 1
                    names = ", ".join(call.name for call in item.round.tool_calls)
                    await ctx.session.report_progress(rounds, message=f"round {rounds}: {names}")
                elif isinstance(item, AwaitApproval):
                    paused = item
            if paused is None:
                return finished(client.last_finish, session)
            decided = await ask(ctx, paused.requests) if can_elicit(ctx) else None
            if decided is None:
                return held(paused.requests, session, _approve_command(served, session, paused))
            for call_id in decided.approve:
                await client.approve(call_id)
            for call_id, reason in decided.deny.items():
                await client.deny(call_id, reason)


def _approve_command(served: Served, session: str, paused: AwaitApproval) -> str | None:
    """The `toolreel approve` command deciding a paused chat turn (None: no journal file)."""
    if served.location is None:
        return None
    ids = " ".join(request.call.id for request in paused.requests)
    return (
        f"`toolreel approve --journal {served.location} --session {session} {ids}` (or "
        "`toolreel deny`), giving the server's connection and --tools flags again"
    )


async def _run_agent(
    ctx: Context, definition: AgentDefinition[Any, Any], given: Any
) -> types.CallToolResult:
    """One agent run in a new session: the validated output as structured content."""
    served = ctx.lifespan_context
    options = served.options
    session = uuid.uuid4().hex
    steps = 0
    ends: list[Finish] = []

    async def told(notice: object) -> None:
        """Progress for each attempt, helper result and failed validation; keep the Finish."""
        nonlocal steps
        message = _step_message(notice)
        if isinstance(notice, Finish):
            ends.append(notice)
        elif message is not None:
            steps += 1
            await ctx.session.report_progress(steps, message=message)

    run = AgentRunOptions(
        connection=options.connection,
        tool_timeout=options.tool_timeout,
        max_concurrent_tools=options.max_concurrent_tools,
        journal=served.journal,
        session_id=session,
        on_notice=told,
        budget=options.budget,
    )
    try:
        result = await execute_agent(definition, given, run, model=served.model)
    except ApprovalPending as paused:
        found = await _resumed(ctx, definition, run, paused)
        if isinstance(found, types.CallToolResult):
            return found
        result = found
    if isinstance(result, AgentFailure):
        error = result.error
        return error_result(f"the agent run failed ({error.code}): {error.message}", session)
    text = ends[-1].text if ends else "{}"
    structured = json.loads(text)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        _meta={SESSION_META: session},
    )


async def _resumed(
    ctx: Context,
    definition: AgentDefinition[Any, Any],
    run: AgentRunOptions,
    paused: ApprovalPending,
) -> AgentSuccess[Any] | AgentFailure | types.CallToolResult:
    """A paused agent run gone on with the client's decisions; without elicitation, the
    error result saying it is held."""
    session = paused.session_id
    while True:
        decided = await ask(ctx, paused.requests) if can_elicit(ctx) else None
        if decided is None:
            ids = [request.call.id for request in paused.requests]
            how = f"`resume_agent({session!r}, definition, options, approve={ids})` in Python"
            return held(paused.requests, session, how)
        try:
            return await resume_agent(
                session,
                definition,
                run,
                approve=decided.approve,
                deny=decided.deny,
                model=ctx.lifespan_context.model,
            )
        except ApprovalPending as again:
            paused = again


def _step_message(notice: object) -> str | None:
    """The progress message of an agent run's notice, None for one that is no step."""
    if isinstance(notice, AttemptStarted):
        return f"attempt {notice.attempt}"
    if isinstance(notice, ToolResultReady):
        return f"{notice.result.name}: done"
    if isinstance(notice, ValidationFailed):
        return f"attempt {notice.attempt} failed validation: {'; '.join(notice.problems)}"
    return None


def _location(journal: str | Path | Journal | None) -> str | None:
    """The journal as a command line names it: a file's path (a URL: a placeholder, as it
    may hold a password); None for a Journal object or none."""
    if not isinstance(journal, str | Path):
        return None
    return "URL" if "://" in str(journal) else shlex.quote(str(journal))


def _version() -> str:
    """toolreel's installed version ("" when not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("toolreel")
    except PackageNotFoundError:
        return ""
