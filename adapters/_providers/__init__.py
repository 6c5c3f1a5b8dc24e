"""The model port, its plain-function fake, and the provider registry.

`ModelPort` is what the shell calls: `stream(request)` yields model events,
the last one terminal; `aclose()` gives back what the port holds (a pool), and
is called only by whoever made the port. `HttpModel` (_http.py) is the real one;
`EventModel(handler)` is the fake beside it, the way httpx ships
`MockTransport(handler)`: `handler(request)` returns the events to play.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

import attrs

from toolreel.core import ConfigError, ModelEvent, ModelRequest

from .._lazy import lazy_names
from .._redact import LOG_FILTER, Redactor, clean_key
from ._clients import is_async_client
from ._codec import CACHE_POINTS, Codec, StreamDecoder
from ._failures import status_retryable
from ._http import HttpModel, Secret, Timeouts
from ._images import refusal, text_only
from ._null_content import NullContentFallback
from ._openai import OpenAICodec
from ._openai_sdk import OpenAISdkModel, close_stream, openai_sdk_model, plain
from ._recovery import RECOVERY_MODES, ToolCallRecovery, recovers, with_recovery
from ._registry import CodecRegistry

if TYPE_CHECKING:
    from ._anthropic import AnthropicCodec
    from ._clients import AsyncClient as AsyncClient
    from ._gemini import GeminiCodec
    from ._ollama import OllamaCodec
    from ._responses import ResponsesCodec

#: The codecs imported at first use, and their modules: a program talking to one
#: OpenAI-compatible server does not load the others.
_CODECS = {
    "anthropic": ("._anthropic", "AnthropicCodec"),
    "gemini": ("._gemini", "GeminiCodec"),
    "ollama": ("._ollama", "OllamaCodec"),
    "openai-responses": ("._responses", "ResponsesCodec"),
}
_LAZY = {codec: module for module, codec in _CODECS.values()}


class ModelPort(Protocol):
    """Something that answers model requests with core model events."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The events of one model call; the last is `ModelResponded` or `ModelCallFailed`."""
        ...

    async def aclose(self) -> None:
        """Release what the port holds; its maker calls it once, when done with it."""
        ...


class EventModel:
    """A model played by a function: `handler(request)` returns (or awaits) its events."""

    def __init__(self, handler: Callable[[ModelRequest], object]) -> None:
        """Wrap `handler`."""
        self.handler = handler
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Play the handler's events for `request`."""
        self.requests.append(request)
        events = self.handler(request)
        if inspect.isawaitable(events):
            events = await events
        assert isinstance(events, Iterable)
        for event in events:
            yield event

    async def aclose(self) -> None:
        """Nothing to release: a function holds no connection."""


#: Each provider's codec class by name; the others than "openai" are imported when looked up.
PROVIDERS = CodecRegistry(
    {"openai": OpenAICodec, **{name: f"{at}:{codec}" for name, (at, codec) in _CODECS.items()}}
)


#: A sensible model per hosted provider, when the caller names none.
DEFAULT_MODELS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-3-5-haiku-latest",
    "gemini": "gemini-2.5-flash",
    "openai-responses": "gpt-5-mini",
}


def codec_for(provider: str) -> Codec:
    """The codec of a provider by name."""
    try:
        return PROVIDERS[provider]()
    except KeyError:
        known = ", ".join(sorted(PROVIDERS))
        detail = f"unknown provider {provider!r}; known: {known}"
        raise ConfigError("provider", provider, detail) from None


def api_key(
    codec: Codec, given: Secret | str | None, environ: Mapping[str, str] | None = None
) -> Secret | None:
    """The key given (a `Secret` as it is), else the first of the provider's variables set.

    Keys are cleaned as they enter (`clean_key`): surrounding whitespace is
    stripped, a key with whitespace or control characters inside is refused
    with a `ConfigError` that never shows it.
    """
    if isinstance(given, Secret):  # wrapped once, where it entered: passed on as it is
        if given.value:
            return given
    elif key := clean_key(given):
        return Secret(key)
    env = os.environ if environ is None else environ
    for name in codec.api_key_env:
        key = clean_key(env.get(name), source=name)
        if key:
            return Secret(key)
    return None


def environment_keys(environ: Mapping[str, str] | None = None) -> Redactor:
    """A redactor for every provider key set in the environment (however mangled)."""
    env = os.environ if environ is None else environ
    names = {name for codec in PROVIDERS.values() for name in codec.api_key_env}
    return Redactor.of(env.get(name) for name in sorted(names))


def redactor_for(model: object, provider: str, given: Secret | str | None) -> Redactor:
    """The secrets a session must never store: the model's key and the one the options resolve.

    (`given`, else the provider's variable.) Registered with the log filter too.
    """
    codec = PROVIDERS.get(provider)
    key = clean_key(given.value if isinstance(given, Secret) else given)
    if codec is not None:
        secret = api_key(codec(), key)
        key = secret.value if secret else None
    own = getattr(model, "redactor", None)
    redactor = Redactor.of([key])
    if isinstance(own, Redactor):
        redactor = redactor | own
    LOG_FILTER.add(redactor)
    return redactor


def require_key(codec: Codec, secret: Secret | None, base_url: str | None) -> None:
    """Refuse a hosted provider's own URL without a key, naming the variable to set."""
    if secret is None and base_url is None and codec.api_key_env:
        names = " or ".join(codec.api_key_env)
        detail = (
            f"no API key for {codec.name}: pass api_key= or set {names} "
            "(or give base_url for a server that needs none)"
        )
        raise ConfigError("api_key", None, detail)


def _with_cache_points(codec: Codec, points: frozenset[str]) -> Codec:
    """`codec` placing prompt-cache breakpoints at `points`, if it places any (Anthropic's)."""
    kind = type(codec)
    if attrs.has(kind) and "cache_points" in attrs.fields_dict(kind):
        placed: Codec = attrs.evolve(codec, cache_points=points)  # type: ignore[misc]
        return placed
    return codec


def http_model(
    provider: str,
    *,
    base_url: str | None = None,
    key: Secret | str | None = None,
    stream: bool = True,
    timeouts: Timeouts | None = None,
    environ: Mapping[str, str] | None = None,
    client: AsyncClient | None = None,
    tool_call_recovery: str | None = None,
    images: bool = True,
    cache_points: frozenset[str] = CACHE_POINTS,
) -> HttpModel:
    """An HTTP model client for a provider by name (`base_url` may point at any server).

    A hosted provider's own URL without a key is refused at once, with the
    variable to set, rather than failing on the first call. `timeouts` bound
    each connect and read, each whole call (`total`) and the wait for content
    in a stream (`idle`); see `Timeouts`. Calls go through a connection pool
    shared with the other models of the event loop that have the same provider
    and base URL, or through `client`, the caller's own (never closed here).
    `tool_call_recovery` ("auto", "hermes", "llama3", "mistral"; openai and
    ollama only) turns tool calls the model wrote as text into calls.
    `images` False says the model is text-only: requests with images are refused.
    `cache_points` says where Anthropic's prompt-cache breakpoints go (its codec's rule 6;
    empty: none); other providers cache by themselves.
    """
    codec = _with_cache_points(codec_for(provider), frozenset(cache_points))
    if not images:
        codec = text_only(codec)
    if tool_call_recovery is not None:
        codec = with_recovery(codec, tool_call_recovery)
    secret = api_key(codec, key, environ)
    require_key(codec, secret, base_url)
    # An OpenAI-compatible server that refuses null content is sent "" (_null_content.py).
    made = NullContentFallback if isinstance(codec, OpenAICodec) else HttpModel
    model = made(
        codec,
        base_url=base_url,
        api_key=secret,
        stream=stream,
        timeouts=timeouts or Timeouts(),
        client=client,
    )
    LOG_FILTER.add(model.redactor)
    return model


__getattr__ = lazy_names(globals(), _LAZY)


__all__ = [
    "DEFAULT_MODELS",
    "PROVIDERS",
    "RECOVERY_MODES",
    "AnthropicCodec",
    "Codec",
    "EventModel",
    "GeminiCodec",
    "HttpModel",
    "ModelPort",
    "OllamaCodec",
    "OpenAICodec",
    "OpenAISdkModel",
    "ResponsesCodec",
    "Secret",
    "StreamDecoder",
    "Timeouts",
    "ToolCallRecovery",
    "api_key",
    "close_stream",
    "codec_for",
    "environment_keys",
    "http_model",
    "is_async_client",
    "openai_sdk_model",
    "plain",
    "recovers",
    "redactor_for",
    "refusal",
    "require_key",
    "status_retryable",
    "with_recovery",
]
