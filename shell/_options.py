"""The options of each API: `AgentOptions` (Client, run) and `AgentRunOptions` (execute_agent).

Both hold a `Connection` (shell/_connection.py: provider, URL, key, model and
how calls go), declared once and shared. `AgentOptions` is open_agent's flat
record: its connection fields sit beside the tool loop's own (tools, hooks,
iterations, observers) and `.connection` gathers them. `AgentRunOptions` is
an agent run's: a connection plus what the run itself uses. Handing
`execute_agent` an `AgentOptions` works while only what an agent uses is set;
a tool-loop field set to anything but its default is a `ConfigError` naming
each such field and what to use instead (`AgentOptions.for_agent`), never
silently ignored.

Every field is checked when the options are built, on `attrs.evolve` and on
assignment: a value that is not allowed raises `ConfigError` naming the field,
the value and what it accepts, before anything is opened or sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from toolreel.adapters import Journal, Secret, Timeouts
from toolreel.adapters.providers import ToolCallRecovery
from toolreel.adapters.redaction import is_dsn, redacted_dsn
from toolreel.core import ConfigError
from toolreel.core.budget import Budget
from toolreel.core.compaction import Compaction, KeepTokens, KeepTurns, Summarise
from toolreel.core.hooks import HookPoint
from toolreel.core.policies import FallbackPolicy, MaxIterationsPolicy, RetryPolicy
from toolreel.core.record import Record, Value

from . import _checks as check
from ._callbacks import OnAgentNotice, OnFinish, OnNotice, OnRound, OnToolCall, OnToolResult
from ._connection import CONNECTION_FIELDS, Connection, PromptCache, shared, to_secret
from ._hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    Hooks,
    hook_points,
)
from ._prices import priced
from ._tools import Tool, as_tool

if TYPE_CHECKING:
    from toolreel.adapters.providers import AsyncClient

#: The tool choices that name no tool.
TOOL_CHOICE_MODES = ("auto", "none", "required")
#: The keys `hooks` accepts besides a HookPoint: open_agent's names and the core's.
HOOK_POINT_NAMES = (
    HOOK_PRE_TOOL_USE,
    HOOK_POST_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    *(point.value for point in HookPoint),
)
#: What a journal object must be able to do (Journal is a Protocol, so it is checked by shape).
JOURNAL_METHODS = ("begin", "append", "entries", "sessions", "config", "close")


def _tools(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A list or tuple of Tools or plain functions that can become tools.

    Two tools with one name are refused by the Client (`registry`), not here.
    """
    check.sequence_of(
        lambda item: isinstance(item, Tool) or check.is_function(item), "a Tool or a function"
    )(_, attribute, value)
    for index, item in enumerate(value):
        try:
            as_tool(item)
        except ValueError as exc:
            check.refuse(f"tools[{index}]", item, str(exc))


class ToolSet(Protocol):
    """An open connection that offers tools (an MCP server's)."""

    def tools(self) -> Sequence[Tool]:
        """The tools, as ordinary Tools."""
        ...


class ToolSource(Protocol):
    """Tools behind a connection (`toolreel.mcp.MCPServer`): `open()` it for a Client's life."""

    def open(self) -> AbstractAsyncContextManager[ToolSet]:
        """Connect; the connection's tools are usable until the block ends."""
        ...


def _sources(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A list or tuple of tool sources (objects with `open()`, like toolreel.mcp.MCPServer)."""
    check.sequence_of(
        lambda item: callable(getattr(item, "open", None)), "an MCPServer (toolreel.mcp)"
    )(_, attribute, value)


def _hooks(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A mapping of known hook points to callables (a list of them, or one)."""
    check.mapping(_, attribute, value)
    known = ", ".join(repr(key) for key in HOOK_POINT_NAMES)
    for key, hooks in value.items():
        if not isinstance(key, HookPoint) and key not in HOOK_POINT_NAMES:
            check.refuse("hooks", key, f"hook point keys are {known} (or a HookPoint)")
        given = hooks if isinstance(hooks, Sequence) and not isinstance(hooks, str) else [hooks]
        for hook in given:
            if not check.is_function(hook):
                check.refuse(f"hooks[{key!r}]", hook, "a callable or a list of callables")


def _journal_repr(value: object) -> str:
    """A journal for a repr: a `postgresql://` URL with its password masked."""
    return repr(redacted_dsn(value)) if isinstance(value, str) and is_dsn(value) else repr(value)


def _journal(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None, a path (str or Path, not empty), or a Journal object."""
    if value is None or isinstance(value, Path):
        return
    if isinstance(value, str):
        if not value.strip():
            check.refuse(attribute.name, value, "a file path, not an empty str")
        return
    if not all(callable(getattr(value, method, None)) for method in JOURNAL_METHODS):
        check.refuse(
            attribute.name,
            value,
            "None, a path (.db for SQLite, .jsonl for JSON lines) or a Journal",
        )


#: The `fallback_on` word for a request too long for the model's context.
CONTEXT_LENGTH = "context_length"


def _fallback_on(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """HTTP error statuses (400-599) and/or "context_length", in a list, tuple or set."""
    allowed = 'HTTP error statuses (400-599) or "context_length"'
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
        check.refuse(attribute.name, value, f"a list of {allowed}, not {check.kind(value)}")
    for item in value:
        if item != CONTEXT_LENGTH and not (
            isinstance(item, int) and not isinstance(item, bool) and 400 <= item <= 599
        ):
            check.refuse(attribute.name, item, allowed)


def fallback_policy(options: AgentOptions, models: Sequence[str]) -> FallbackPolicy | None:
    """The core's fallback policy: the fallback connections' models and what moves on at once."""
    if not options.fallbacks:
        return None
    return FallbackPolicy(
        models=tuple(models),
        on_status=frozenset(item for item in options.fallback_on if isinstance(item, int)),
        on_context_length=CONTEXT_LENGTH in options.fallback_on,
    )


def _policy(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A MaxIterationsPolicy or its value ("stop", "raise", "final_answer")."""
    values = [policy.value for policy in MaxIterationsPolicy]
    if not isinstance(value, MaxIterationsPolicy) and value not in values:
        check.refuse(attribute.name, value, "one of " + ", ".join(repr(v) for v in values))


def _agent_hooks(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """`_hooks`, without UserPromptSubmit: an agent's prompt is its definition's `build_prompt`."""
    _hooks(instance, attribute, value)
    if HookPoint.USER_PROMPT_SUBMIT in hook_points(value):
        check.refuse(
            "hooks",
            HOOK_USER_PROMPT_SUBMIT,
            "PreToolUse or PostToolUse hooks: an agent run has no user prompt to hook "
            "(AgentDefinition.build_prompt makes it)",
        )


@attrs.define(kw_only=True, repr=False)
class AgentOptions(Record):
    """How a Client talks to its model, which tools it offers, and how the loop runs.

    The connection fields (provider, base_url, api_key, model, stream, the
    timeouts, max_tokens, temperature, retry, http_client, tool_call_recovery,
    model_images, prompt_cache, prompt_cache_key)
    are `Connection`'s,
    with its defaults and checks; `.connection` is them as one frozen value.
    `api_key` is kept as a `Secret` from the moment it is given (a str is
    wrapped), and defaults to the provider's environment variable.

    `journal` is a path (".db" for SQLite, ".jsonl" for JSON lines) or a
    Journal; without one, the session is journaled in memory. The observers
    (`on_tool_call`, `on_tool_result`, `on_round`, `on_finish`, `on_notice`;
    shell/_callbacks.py) may be sync or async; one that raises is recorded in
    `client.metadata.callback_errors`. Each field is checked as the options
    are built (`ConfigError`).

    Attributes:
        model: The model to ask for (empty: a hosted provider's default).
        provider: The wire format: "openai" (and any OpenAI-compatible server),
            "openai-responses", "anthropic", "gemini" or "ollama".
        base_url: The server, e.g. "http://127.0.0.1:11434/v1" (default: the provider's).
        api_key: The key (default: the provider's environment variable).
        system_prompt: The system prompt of every turn.
        tools: `@tool` functions, `Tool`s or plain typed functions.
        mcp_servers: MCP servers whose tools are offered too (`toolreel.mcp.MCPServer`).
        auto_execute_tools: Run the tools the model calls (else manual mode: you answer
            each call with `add_tool_result`).
        max_tool_iterations: Model calls a turn may make.
        on_max_iterations: At that cap: "stop", "raise" or "final_answer".
        hooks: PreToolUse, PostToolUse and UserPromptSubmit hooks, by point.
        tool_timeout: Seconds a tool call may take (a tool's own `timeout` wins).
        max_concurrent_tools: How many tool calls run at once (None: all of a round).
        journal: Where the session is kept: a path, a `postgresql://` URL or a `Journal`.
        session_id: The session's id in the journal (default: a new one).
        budget: Limits on tokens, tool calls, model calls and cost.
        fallbacks: Connections tried in order when a model call fails after its retries
            (docs/guides/fallback.md).
        fallback_on: HTTP statuses (and "context_length") that move on to the next
            connection at once, without retrying.
        compaction: How much of a long conversation each request carries
            (`toolreel.core.compaction`: `KeepTurns`, `KeepTokens`, `Summarise`).
        on_tool_call: Told each tool call as it starts.
        on_tool_result: Told each tool result.
        on_round: Told each finished round.
        on_finish: Told each turn's `Finish`.
        on_notice: Told every notice of a turn, then its `Finish`.
    """

    system_prompt: str | None = attrs.field(
        default=None, validator=check.instance_of(str, "a str", optional=True)
    )
    model: str = shared("model")
    base_url: str | None = shared("base_url")
    provider: str = shared("provider")
    api_key: Secret | None = attrs.field(default=None, repr=False, converter=to_secret)
    tools: Sequence[Tool | Callable[..., Any]] = attrs.field(default=(), validator=_tools)
    #: MCP servers (toolreel.mcp.MCPServer) each Client connects to while open; their tools
    #: join `tools`.
    mcp_servers: Sequence[ToolSource] = attrs.field(default=(), validator=_sources)
    auto_execute_tools: bool = attrs.field(
        default=False, validator=check.instance_of(bool, "a bool")
    )
    max_tool_iterations: int = attrs.field(default=5, validator=check.int_at_least(1))
    hooks: Hooks = attrs.field(factory=dict, validator=_hooks)
    max_tokens: int | None = shared("max_tokens")
    temperature: float | None = shared("temperature")
    stream: bool = shared("stream")
    timeout: float = shared("timeout")
    call_timeout: float = shared("call_timeout")
    idle_timeout: float = shared("idle_timeout")
    # toolreel's own
    on_max_iterations: MaxIterationsPolicy | str = attrs.field(
        default=MaxIterationsPolicy.STOP, validator=_policy
    )
    retry: RetryPolicy = shared("retry")  # noqa: RUF009 - an attrs.field, made by `shared`
    tool_timeout: float = attrs.field(default=60.0, validator=check.number_in(0, low_open=True))
    max_concurrent_tools: int | None = attrs.field(
        default=None, validator=check.int_at_least(1, optional=True)
    )
    journal: str | Path | Journal | None = attrs.field(
        default=None, validator=_journal, repr=_journal_repr
    )
    #: The caller's own client for the model's HTTP calls (toolreel never closes it).
    http_client: AsyncClient | None = shared("http_client")  # noqa: RUF009 - as above
    #: Tool calls a small local model writes as text, made real calls (see `Connection`).
    tool_call_recovery: ToolCallRecovery | None = shared("tool_call_recovery")  # noqa: RUF009
    #: False for a text-only model: images are refused, never dropped (see `Connection`).
    model_images: bool = shared("model_images")
    #: Prompt caching: "auto", "off", or the places to mark (see `Connection`).
    prompt_cache: PromptCache = shared("prompt_cache")  # noqa: RUF009 - as above
    #: The key the provider's prompt cache groups the session by (default: the session id).
    prompt_cache_key: str | None = shared("prompt_cache_key")
    session_id: str | None = attrs.field(default=None, validator=check.optional_id)
    #: Limits on what each turn (or the session) spends; the turn ends `OverBudget` past them.
    budget: Budget | None = attrs.field(
        default=None, validator=check.instance_of(Budget, "a Budget", optional=True)
    )
    tool_choice: str = attrs.field(
        default="auto",
        validator=check.instance_of(str, "'auto', 'none', 'required' or a tool name"),
    )
    #: Connections tried in order after this one when a model call fails after its retries
    #: (or at once, for a `fallback_on` status); each answers with its own model and key.
    fallbacks: Sequence[Connection] = attrs.field(
        default=(),
        validator=check.sequence_of(lambda item: isinstance(item, Connection), "a Connection"),
    )
    #: HTTP statuses, and "context_length", that move on to the next connection at once.
    fallback_on: Sequence[int | str] | frozenset[int | str] = attrs.field(
        default=(), validator=_fallback_on
    )
    #: Which turns each request carries, the older left out or summarised (None: all).
    compaction: Compaction | None = attrs.field(
        default=None,
        validator=check.instance_of(
            (KeepTurns, KeepTokens, Summarise), "KeepTurns, KeepTokens or Summarise", optional=True
        ),
    )
    on_tool_call: OnToolCall | None = attrs.field(default=None, validator=check.callable_or_none)
    on_tool_result: OnToolResult | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_round: OnRound | None = attrs.field(default=None, validator=check.callable_or_none)
    on_finish: OnFinish | None = attrs.field(default=None, validator=check.callable_or_none)
    on_notice: OnNotice | None = attrs.field(default=None, validator=check.callable_or_none)

    @property
    def connection(self) -> Connection:
        """The connection fields as one `Connection` (checked together as it is built)."""
        return Connection(**{name: getattr(self, name) for name in CONNECTION_FIELDS})

    def timeouts(self) -> Timeouts:
        """The HTTP limits these options ask for."""
        return self.connection.timeouts()

    @property
    def model_name(self) -> str:
        """The model to ask for: `model`, or the hosted provider's default when it is empty."""
        return self.connection.model_name

    def __attrs_post_init__(self) -> None:
        """The checks that read two fields: the model for the provider, tool_choice for tools,
        a cost budget's price for the model."""
        self.connection  # noqa: B018 - building it checks the model for the provider
        if self.budget is not None and self.budget.max_cost is not None:  # a price, known now
            priced(self.budget, self.model_name, self.provider, self.base_url)
            for fallback in self.fallbacks:
                priced(self.budget, fallback.model_name, fallback.provider, fallback.base_url)
        names = [as_tool(item).name for item in self.tools]
        if self.tool_choice not in TOOL_CHOICE_MODES and self.tool_choice not in names:
            offered = ", ".join(repr(name) for name in [*TOOL_CHOICE_MODES, *names])
            raise ConfigError("tool_choice", self.tool_choice, f"one of {offered}")

    def for_agent(self) -> AgentRunOptions:
        """These options as an agent run's; a tool-loop field that is set: `ConfigError`.

        The error names every such field and what an agent uses instead
        (`LOOP_ONLY`): an agent run never silently ignores what it was given.
        """
        fields = attrs.fields_dict(AgentOptions)
        given = [name for name in LOOP_ONLY if not _is_default(fields[name], getattr(self, name))]
        if given:
            instead = "; ".join(f"{name}: {LOOP_ONLY[name]}" for name in given)
            raise ConfigError(
                "options",
                tuple(given),
                "execute_agent runs no tool loop, so these AgentOptions fields would be ignored "
                f"(leave them unset, or pass AgentRunOptions): {instead}",
            )
        return AgentRunOptions(
            connection=self.connection,
            tool_timeout=self.tool_timeout,
            max_concurrent_tools=self.max_concurrent_tools,
            hooks=self.hooks,
            journal=self.journal,
            session_id=self.session_id,
            on_tool_call=self.on_tool_call,
            on_tool_result=self.on_tool_result,
            budget=self.budget,
        )


#: The AgentOptions fields only the tool loop uses, and what an agent run uses instead.
LOOP_ONLY = {
    "system_prompt": "use AgentDefinition(system_prompt=...)",
    "tools": "use AgentDefinition(helpers=[...])",
    "mcp_servers": "open the server yourself (`async with server as connection`) and use "
    "AgentDefinition(helpers=connection.tools())",
    "auto_execute_tools": "drop it (an agent always runs its helpers)",
    "max_tool_iterations": "use AgentDefinition(max_iterations_per_attempt=...)",
    "on_max_iterations": "drop it (an attempt that reaches max_iterations_per_attempt "
    "fails the run with MAX_ITERATIONS)",
    "tool_choice": "use AgentDefinition(tool_choice=...)",
    "fallbacks": "drop it (an agent run asks its one connection)",
    "fallback_on": "drop it (an agent run asks its one connection)",
    "compaction": "drop it (an agent run is one turn)",
    "on_round": "use AgentRunOptions(on_notice=...) (an agent run tells no tool-loop rounds)",
    "on_finish": "read the AgentSuccess / AgentFailure execute_agent returns, "
    "or use AgentRunOptions(on_notice=...), told the run's Finish",
    "on_notice": "use AgentRunOptions(on_notice=...), told the run's notices and its Finish",
}


def _is_default(field: attrs.Attribute[Any], value: object) -> bool:
    """Whether `value` is the field's default (a list equal to a default tuple counts)."""
    default: Any = field.default
    if callable(factory := getattr(default, "factory", None)):  # an attrs.Factory
        default = factory()
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(default, MaxIterationsPolicy) and isinstance(value, str):
        return value == default.value
    return bool(value == default)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AgentRunOptions(Value):
    """How an agent run reaches its model (`connection`) and what the run itself uses.

    Helper tools get what the loop's tools get: `tool_timeout` (unless the
    tool sets its own), `max_concurrent_tools`, and `hooks` (PreToolUse and
    PostToolUse; an agent has no user prompt to hook). `journal` (a path or a
    Journal) journals every step under `session_id` (else a new id). The
    observers are told each helper call (`on_tool_call(ToolCall)`), its result
    (`on_tool_result(ToolResult)`) and every notice then the run's `Finish`
    (`on_notice`); sync or async; one that raises is recorded in
    `metadata.callback_errors`. The definition's own callbacks get the
    run's state as well (`AgentDefinition`).
    """

    connection: Connection = attrs.field(validator=check.instance_of(Connection, "a Connection"))
    tool_timeout: float = attrs.field(default=60.0, validator=check.number_in(0, low_open=True))
    max_concurrent_tools: int | None = attrs.field(
        default=None, validator=check.int_at_least(1, optional=True)
    )
    hooks: Hooks = attrs.field(factory=dict, validator=_agent_hooks)
    journal: str | Path | Journal | None = attrs.field(
        default=None, validator=_journal, repr=_journal_repr
    )
    session_id: str | None = attrs.field(default=None, validator=check.optional_id)
    on_tool_call: OnToolCall | None = attrs.field(default=None, validator=check.callable_or_none)
    on_tool_result: OnToolResult | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_notice: OnAgentNotice | None = attrs.field(default=None, validator=check.callable_or_none)
    #: Limits on what the run spends (rules 16 and 17 of core/_step.py): past them it fails
    #: `OVER_BUDGET`; `scope` and `on_exceeded` do not apply to a run.
    budget: Budget | None = attrs.field(
        default=None, validator=check.instance_of(Budget, "a Budget", optional=True)
    )

    def __attrs_post_init__(self) -> None:
        """A cost budget needs a price for the connection's model (given, or genai-prices')."""
        connection = self.connection
        if self.budget is not None and self.budget.max_cost is not None:  # a price, known now
            priced(self.budget, connection.model_name, connection.provider, connection.base_url)

    @classmethod
    def of(cls, options: AgentRunOptions | Connection | AgentOptions) -> AgentRunOptions:
        """An agent run's options from any of the three (`AgentOptions.for_agent` checks)."""
        if isinstance(options, AgentRunOptions):
            return options
        if isinstance(options, Connection):
            return cls(connection=options)
        if isinstance(options, AgentOptions):
            return options.for_agent()
        allowed = "an AgentRunOptions, a Connection or an AgentOptions"
        raise ConfigError(
            "options", type(options).__name__, f"{allowed}, not {check.kind(options)}"
        )
