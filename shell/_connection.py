"""Connection: how to reach a model and how to ask it, shared by every API.

    connection = Connection(provider="anthropic", model="claude-3-5-haiku-latest")
    Client(AgentOptions(..., api_key=key))            # its `.connection` is one of these
    execute_agent(definition, text, AgentRunOptions(connection=connection))
    execute_agent(definition, text, connection)       # the same, with no run options

A frozen value, checked field by field as it is built (`ConfigError` naming
the field, the value and what it accepts), then once as a whole (a model for
the provider). The API key is wrapped in a `Secret` as it enters — never
shown by a repr, a str, `attrs.asdict` or a pickle — and only the model
port reads it back, where the request is built. `AgentOptions` declares its
connection fields from these (`shared`), so both check a value the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import attrs

from toolreel.adapters import PROVIDERS, ModelPort, Secret, Timeouts, http_model
from toolreel.adapters.providers import (
    DEFAULT_MODELS,
    RECOVERY_MODES,
    ToolCallRecovery,
    is_async_client,
    recovers,
    redactor_for,
)
from toolreel.adapters.redaction import MASK, Redactor, clean_key
from toolreel.core import ConfigError
from toolreel.core.policies import RetryPolicy
from toolreel.core.record import Value

from . import _checks as check

if TYPE_CHECKING:
    from toolreel.adapters.providers import AsyncClient

#: The model every port opened here is, while `toolreel.testing.override` is in force.
MODEL_OVERRIDE: ContextVar[ModelPort | None] = ContextVar("toolreel_model_override", default=None)
#: While a `toolreel.testing` recording is in force (a test marked `toolreel_recording`):
#: each connection's model port is `opener(connection, open_own)`, where `open_own()` opens
#: the connection's own port — so a recording asks that connection's provider, URL, model
#: and key, and only when it must (an override still comes first).
MODEL_OPENER: ContextVar[Callable[[Connection, Callable[[], ModelPort]], ModelPort] | None] = (
    ContextVar("toolreel_model_opener", default=None)
)
#: The output tool's name while an agent runs, for a model that must know which tool ends it
#: (`toolreel.testing.TestModel`: a request offers it among the helpers, indistinguishable).
AGENT_OUTPUT_TOOL: ContextVar[str | None] = ContextVar("toolreel_agent_output", default=None)


_MODES = ", ".join(repr(mode) for mode in RECOVERY_MODES)

#: Where `prompt_cache` may put Anthropic's cache breakpoints ("auto": all of them).
CACHE_PLACES = ("tools", "system", "messages")
#: The providers whose hosted API takes a `prompt_cache_key` (the session id by default).
_CACHE_KEYED = frozenset({"openai", "openai-responses"})
#: A `Connection.prompt_cache`: "auto", "off", or the `CACHE_PLACES` to mark.
PromptCache = str | tuple[str, ...] | frozenset[str]


def cache_places(value: PromptCache) -> frozenset[str]:
    """The places a `prompt_cache` setting marks: "auto" all, "off" none, else those named."""
    if value == "auto":
        return frozenset(CACHE_PLACES)
    if value == "off":
        return frozenset()
    return frozenset(value)


def _prompt_cache(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """ "auto", "off", or a tuple / frozenset of `CACHE_PLACES`."""
    if value in ("auto", "off"):
        return
    places = ", ".join(repr(place) for place in CACHE_PLACES)
    if not isinstance(value, tuple | frozenset) or not all(
        isinstance(place, str) and place in CACHE_PLACES for place in value
    ):
        check.refuse(attribute.name, value, f'"auto", "off", or a tuple of places from {places}')


def to_secret(value: Secret | str | None) -> Secret | None:
    """The key as a `Secret` (None for none or blank); anything else refused, never shown."""
    if value is None or isinstance(value, Secret):
        return value if value is None or value.value else None
    if not isinstance(value, str):
        raise ConfigError("api_key", MASK, f"a str, a Secret or None, not {check.kind(value)}")
    key = clean_key(value)
    return Secret(key) if key else None


def _model(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """A str (empty only where the provider has a default model: see `Connection`)."""
    if not isinstance(value, str):
        check.refuse(attribute.name, value, f"a model name (str), not {check.kind(value)}")


def _http_client(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """None (a pool shared per provider and base URL), or the caller's own AsyncClient.

    httpx2's, or httpx's while both exist (asked without importing either).
    """
    if value is not None and not is_async_client(value):
        what = f"an httpx2.AsyncClient (or httpx.AsyncClient), not {check.kind(value)}"
        check.refuse(attribute.name, value, what)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Connection(Value):
    """Where the model is, which one, and how each call to it goes.

    `provider` is "openai" (any OpenAI-compatible server: OpenAI, Ollama's /v1,
    LM Studio, vLLM, llama.cpp, OpenRouter), "anthropic", "gemini" or "ollama"
    (native /api/chat); `base_url` points it anywhere, with the provider's usual
    paths below it. `api_key` (a str or a `Secret`; kept as a `Secret`)
    defaults to the provider's environment variable, read when a model port is
    opened. `timeout` bounds each read, `call_timeout` a whole model call,
    `idle_timeout` a stream without content (keep-alives do not count); past
    either, the call fails and is retried by `retry`. `http_client` is the
    caller's own `httpx2.AsyncClient` (or `httpx.AsyncClient`; toolreel never
    closes it); without one, calls share a pool per provider and base URL.
    `tool_call_recovery` ("auto", "hermes", "llama3", "mistral"; openai and
    ollama only) turns tool calls a small local model writes as text into real
    calls (docs/guides/providers.md). `model_images` False
    says the model is text-only: a prompt or tool result with images is
    refused, never sent without them.

    `prompt_cache` ("auto", the default; "off"; or a tuple of places from
    "tools", "system", "messages") caches each request's prefix for the next:
    Anthropic gets `cache_control` breakpoints on the last tool, the system
    prompt and the conversation so far (the places named; "auto": all three);
    OpenAI's own API (no `base_url`) gets `prompt_cache_key`, the session id,
    so a session's requests reach the same cache. `prompt_cache_key` sets that
    key instead, and is sent to a `base_url` server too (one that does not
    know the field may refuse it, so the session id is sent only to OpenAI's
    own). Gemini and Ollama cache by themselves: nothing is sent.

    `model` may be left empty only for a hosted provider at its own URL (no
    `base_url`): "openai", "anthropic" and "gemini" then use their default model
    (`DEFAULT_MODELS`). A `base_url` server, or "ollama", has no default: name it.
    """

    provider: str = attrs.field(
        default="openai",
        validator=check.one_of(PROVIDERS, "one of " + ", ".join(sorted(PROVIDERS))),
    )
    base_url: str | None = attrs.field(default=None, validator=check.http_url)
    api_key: Secret | None = attrs.field(default=None, converter=to_secret)
    model: str = attrs.field(default="", validator=_model)
    stream: bool = attrs.field(default=True, validator=check.instance_of(bool, "a bool"))
    timeout: float = attrs.field(default=300.0, validator=check.number_in(0, low_open=True))
    call_timeout: float = attrs.field(default=600.0, validator=check.number_in(0, low_open=True))
    idle_timeout: float = attrs.field(default=120.0, validator=check.number_in(0, low_open=True))
    max_tokens: int | None = attrs.field(
        default=None, validator=check.int_at_least(1, optional=True)
    )
    temperature: float | None = attrs.field(
        default=None, validator=check.number_in(0, 2, optional=True)
    )
    retry: RetryPolicy = attrs.field(
        factory=RetryPolicy, validator=check.instance_of(RetryPolicy, "a RetryPolicy")
    )
    http_client: AsyncClient | None = attrs.field(default=None, validator=_http_client)
    tool_call_recovery: ToolCallRecovery | None = attrs.field(
        default=None,
        validator=check.one_of((None, *RECOVERY_MODES), "None or one of " + _MODES),
    )
    model_images: bool = attrs.field(default=True, validator=check.instance_of(bool, "a bool"))
    prompt_cache: PromptCache = attrs.field(default="auto", validator=_prompt_cache)
    prompt_cache_key: str | None = attrs.field(
        default=None, validator=check.instance_of(str, "a str", optional=True)
    )

    def __attrs_post_init__(self) -> None:
        """The check that reads two fields: a model the provider (or server) can serve."""
        if not self.model and (self.base_url is not None or self.provider not in DEFAULT_MODELS):
            where = f"the server at {self.base_url}" if self.base_url else repr(self.provider)
            raise ConfigError("model", self.model, f"a model name: {where} has no default model")
        if self.tool_call_recovery is not None and not recovers(PROVIDERS[self.provider]):
            detail = f"None for {self.provider!r} (only openai and ollama recover text calls)"
            raise ConfigError("tool_call_recovery", self.tool_call_recovery, detail)

    @property
    def model_name(self) -> str:
        """The model to ask for: `model`, or the hosted provider's default when it is empty."""
        return self.model or DEFAULT_MODELS.get(self.provider, "")

    def model_for(self, port: object = None) -> str:
        """The model a session over `port` asks for, and its journal names.

        `model` when given; else the port's own name where it has one
        (`TestModel` is "test", `FunctionModel` "function": what answers is not
        the provider's default model); else `model_name`. `port` None: the one
        `open_model` will give (an override's model), known before it is opened.
        """
        own = getattr(port if port is not None else MODEL_OVERRIDE.get(), "model_name", None)
        if self.model or not isinstance(own, str) or not own:
            return self.model_name
        return own

    def cache_key(self, session_id: str) -> str | None:
        """The prompt-cache key a session's requests carry (None: the provider gets none)."""
        if not cache_places(self.prompt_cache):
            return None
        if self.prompt_cache_key is not None:
            return self.prompt_cache_key
        if self.provider in _CACHE_KEYED and self.base_url is None:
            return session_id
        return None

    def timeouts(self) -> Timeouts:
        """The HTTP limits asked for."""
        return Timeouts(read=self.timeout, total=self.call_timeout, idle=self.idle_timeout)

    def open_model(self) -> ModelPort:
        """A model port over HTTP (its opener closes it); no key for a hosted URL: ConfigError.

        Under `toolreel.testing.override(model=...)` it is that model instead; in
        a test recording (`MODEL_OPENER`), the port the recording opens for it.
        """
        if (overriding := MODEL_OVERRIDE.get()) is not None:
            return overriding
        if (opener := MODEL_OPENER.get()) is not None:
            return opener(self, self._open_own)
        return self._open_own()

    def _open_own(self) -> ModelPort:
        """The port over HTTP these fields describe."""
        return http_model(
            self.provider,
            base_url=self.base_url,
            key=self.api_key,
            stream=self.stream,
            timeouts=self.timeouts(),
            client=self.http_client,
            tool_call_recovery=self.tool_call_recovery,
            images=self.model_images,
            cache_points=cache_places(self.prompt_cache),
        )

    def redactor(self, model: object) -> Redactor:
        """What a session over `model` must never store: its key, the one resolved here."""
        return redactor_for(model, self.provider, self.api_key)


#: The fields a Connection holds, in its order.
CONNECTION_FIELDS = tuple(field.name for field in attrs.fields(Connection))


def shared(name: str) -> Any:
    """An options field declared as `Connection`'s: the same default and checks.

    (Not `api_key`: a converter must be written out for type checkers to see it.)
    """
    field = attrs.fields_dict(Connection)[name]
    return attrs.field(default=field.default, validator=field.validator)
