"""AgentOptions: everything a Client needs, open_agent's names first, toolreel's own after.

Every field is checked when the options are built, on `attrs.evolve` and on
assignment: a value that is not allowed raises `ConfigError` naming the field,
the value and what it accepts, before anything is opened or sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import attrs

from toolreel.adapters import PROVIDERS, Journal, Timeouts
from toolreel.adapters._providers import DEFAULT_MODELS
from toolreel.adapters._redact import clean_key
from toolreel.core import (
    ConfigError,
    Finish,
    HookPoint,
    MaxIterationsPolicy,
    RetryPolicy,
    ToolCall,
    ToolResult,
    ToolRound,
)

from . import _checks as check
from ._hooks import HOOK_POST_TOOL_USE, HOOK_PRE_TOOL_USE, HOOK_USER_PROMPT_SUBMIT, Hooks
from ._tools import Tool, as_tool

T_contra = TypeVar("T_contra", contravariant=True)
#: An observer (`on_tool_call`, ...): called with what happened, sync or async; what it
#: returns is ignored, and what it raises is recorded in `client.metadata`.
Observer: TypeAlias = Callable[[T_contra], object]

if TYPE_CHECKING:
    import httpx

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


def _policy(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A MaxIterationsPolicy or its value ("stop", "raise", "final_answer")."""
    values = [policy.value for policy in MaxIterationsPolicy]
    if not isinstance(value, MaxIterationsPolicy) and value not in values:
        check.refuse(attribute.name, value, "one of " + ", ".join(repr(v) for v in values))


def _model(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A str (empty only where the provider has a default model: see `AgentOptions`)."""
    if not isinstance(value, str):
        check.refuse(attribute.name, value, f"a model name (str), not {check.kind(value)}")


def _http_client(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None (a pool shared per provider and base URL), or the caller's own httpx.AsyncClient."""
    if value is not None:
        import httpx  # noqa: PLC0415 - loaded already by whoever made the client

        if not isinstance(value, httpx.AsyncClient):
            check.refuse(attribute.name, value, f"an httpx.AsyncClient, not {check.kind(value)}")


@attrs.define(kw_only=True)
class AgentOptions:
    """How a Client talks to its model, which tools it offers, and how the loop runs.

    `provider` is "openai" (any OpenAI-compatible server: OpenAI, Ollama's /v1,
    LM Studio, vLLM, llama.cpp, OpenRouter), "anthropic", "gemini" or "ollama"
    (native /api/chat); `base_url` points it anywhere, with the provider's usual
    paths below it. `api_key` defaults to the provider's environment variable.
    `journal` is a path (".db" for SQLite, ".jsonl" for JSON lines) or a
    Journal; without one, the session is journaled in memory. `timeout` bounds
    each read, `call_timeout` a whole model call, `idle_timeout` a stream
    without content (keep-alives do not count); past either, the call fails
    and is retried like any transient failure.

    `model` may be left empty only for a hosted provider at its own URL (no
    `base_url`): "openai", "anthropic" and "gemini" then use their default model
    (`DEFAULT_MODELS`). A `base_url` server, or "ollama", has no default: name
    the model. Each field is checked as the options are built (`ConfigError`).
    """

    system_prompt: str | None = attrs.field(
        default=None, validator=check.instance_of(str, "a str", optional=True)
    )
    model: str = attrs.field(default="", validator=_model)
    base_url: str | None = attrs.field(default=None, validator=check.http_url)
    provider: str = attrs.field(
        default="openai",
        validator=check.one_of(PROVIDERS, "one of " + ", ".join(sorted(PROVIDERS))),
    )
    api_key: str | None = attrs.field(
        default=None,
        repr=False,
        converter=clean_key,
        validator=check.instance_of(str, "a str", optional=True),
    )
    tools: Sequence[Tool | Callable[..., Any]] = attrs.field(default=(), validator=_tools)
    auto_execute_tools: bool = attrs.field(
        default=False, validator=check.instance_of(bool, "a bool")
    )
    max_tool_iterations: int = attrs.field(default=5, validator=check.int_at_least(1))
    hooks: Hooks = attrs.field(factory=dict, validator=_hooks)
    max_tokens: int | None = attrs.field(
        default=None, validator=check.int_at_least(1, optional=True)
    )
    temperature: float | None = attrs.field(
        default=None, validator=check.number_in(0, 2, optional=True)
    )
    stream: bool = attrs.field(default=True, validator=check.instance_of(bool, "a bool"))
    timeout: float = attrs.field(default=300.0, validator=check.number_in(0, low_open=True))
    call_timeout: float = attrs.field(default=600.0, validator=check.number_in(0, low_open=True))
    idle_timeout: float = attrs.field(default=120.0, validator=check.number_in(0, low_open=True))
    # toolreel's own
    on_max_iterations: MaxIterationsPolicy | str = attrs.field(
        default=MaxIterationsPolicy.STOP, validator=_policy
    )
    retry: RetryPolicy = attrs.field(
        factory=RetryPolicy, validator=check.instance_of(RetryPolicy, "a RetryPolicy")
    )
    tool_timeout: float = attrs.field(default=60.0, validator=check.number_in(0, low_open=True))
    max_concurrent_tools: int | None = attrs.field(
        default=None, validator=check.int_at_least(1, optional=True)
    )
    journal: str | Path | Journal | None = attrs.field(default=None, validator=_journal)
    #: The caller's own client for the model's HTTP calls (toolreel never closes it).
    http_client: httpx.AsyncClient | None = attrs.field(default=None, validator=_http_client)
    session_id: str | None = attrs.field(default=None, validator=check.optional_id)
    tool_choice: str = attrs.field(
        default="auto",
        validator=check.instance_of(str, "'auto', 'none', 'required' or a tool name"),
    )
    on_tool_call: Observer[ToolCall] | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_tool_result: Observer[ToolResult] | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_round: Observer[ToolRound] | None = attrs.field(
        default=None, validator=check.callable_or_none
    )
    on_finish: Observer[Finish] | None = attrs.field(default=None, validator=check.callable_or_none)

    def timeouts(self) -> Timeouts:
        """The HTTP limits these options ask for."""
        return Timeouts(read=self.timeout, total=self.call_timeout, idle=self.idle_timeout)

    @property
    def model_name(self) -> str:
        """The model to ask for: `model`, or the hosted provider's default when it is empty."""
        return self.model or DEFAULT_MODELS.get(self.provider, "")

    def __attrs_post_init__(self) -> None:
        """The checks that read two fields: the model for the provider, tool_choice for tools."""
        if not self.model and (self.base_url is not None or self.provider not in DEFAULT_MODELS):
            where = f"the server at {self.base_url}" if self.base_url else repr(self.provider)
            raise ConfigError("model", self.model, f"a model name: {where} has no default model")
        names = [as_tool(item).name for item in self.tools]
        if self.tool_choice not in TOOL_CHOICE_MODES and self.tool_choice not in names:
            offered = ", ".join(repr(name) for name in [*TOOL_CHOICE_MODES, *names])
            raise ConfigError("tool_choice", self.tool_choice, f"one of {offered}")
