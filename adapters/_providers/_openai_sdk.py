"""A model port over a client of the official `openai` SDK (or any object shaped like one).

Users with an `openai.AsyncOpenAI` already configured (Azure OpenAI, custom
auth, a proxy, their own retries) keep it: `openai_sdk_model(client)` calls
`client.chat.completions.create(**body)` with the body the OpenAI codec builds
and decodes what comes back with the same codec as the httpx2 driver, so the
events (and the rules of _openai.py's docstring) are the same either way.

- A streamed answer is an async iterator of chunk objects (pydantic models
  with `model_dump()`, dicts, or plain attribute objects); each becomes one
  SSE frame for the codec's stream decoder, so a stream that ends before its
  finish reason is the same retryable `TRUNCATED` failure.
- A whole answer (not streaming, or a client that returns one object anyway)
  goes to the codec's body decoder.
- The SDK's errors become the driver's failures: `APIStatusError` through the
  codec's error decoder (retryable by status, `Retry-After` honoured),
  connection troubles and timeouts retryable, anything else a client raises
  fatal. Nothing the client raises reaches the caller.

`openai` is imported only when a call fails (to classify the error), never
with toolreel.adapters.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from toolreel.core import ModelCallFailed, ModelEvent, ModelRequest, ModelResponded

from .._redact import LOG_FILTER, Redactor
from ._images import request_refusal
from ._openai import OpenAICodec
from ._recovery import recovery_for, with_recovery


class OpenAISdkModel:
    """Calls `client.chat.completions.create`; `stream(request)` yields core model events."""

    def __init__(
        self,
        client: Any,
        *,
        model: str | None = None,
        stream: bool = True,
        codec: OpenAICodec | None = None,
        close_client: bool = False,
    ) -> None:
        """Wrap `client`; `model` (when given) replaces the request's model name."""
        self.client = client
        self.model = model
        self.streaming = stream
        self.codec = codec or OpenAICodec()
        self.close_client = close_client
        key = getattr(client, "api_key", None)
        #: Masks the client's key in any text; the shell applies it.
        self.redactor = Redactor.of([key if isinstance(key, str) else None])

    def __repr__(self) -> str:
        """The client's type and where it points; never its key."""
        where = getattr(self.client, "base_url", None)
        return f"OpenAISdkModel(client={type(self.client).__name__}, base_url={str(where)!r})"

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `create`: the codec's chat.completions body.

        A prompt-cache key goes as `extra_body` (SDKs older than the field take it so), and
        only to OpenAI's own API: the client may point anywhere (Azure, a proxy).
        """
        body = self.codec.encode(request, stream=self.streaming)
        if self.model:
            body["model"] = self.model
        key = body.pop("prompt_cache_key", None)
        if key is not None and "api.openai.com" in str(getattr(self.client, "base_url", "")):
            body["extra_body"] = {"prompt_cache_key": key}
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The events of one call, as they arrive; the last is terminal.

        With the codec's `tool_call_recovery`, calls the model wrote as text become calls.
        """
        refused = request_refusal(self.codec, request)  # images the model cannot take
        if refused is not None:
            yield ModelCallFailed(retryable=False, message=refused)
            return
        recover = recovery_for(self.codec, request)
        async for decoded in self._call(request):
            for event in recover([decoded]) if recover is not None else (decoded,):
                yield self.redactor.event(event) if isinstance(event, ModelCallFailed) else event

    async def _call(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """One call's events; whatever the client raises becomes a failure."""
        answer: Any = None
        try:
            answer = await self.client.chat.completions.create(**self.body(request))
            if hasattr(answer, "__aiter__"):
                async for event in self._decode_stream(answer):
                    yield event
            else:
                for event in from_completion(self.codec, answer):
                    yield event
        except Exception as exc:
            yield sdk_failure(exc)
        finally:
            if answer is not None:
                with anyio.CancelScope(shield=True):
                    await close_stream(answer)

    async def aclose(self) -> None:
        """Close the client if this port was told it owns it; a caller's client stays open."""
        if self.close_client:
            close = getattr(self.client, "close", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()

    async def _decode_stream(self, chunks: Any) -> AsyncIterator[ModelEvent]:
        """Each chunk object as one SSE frame for the codec; the end checks completeness."""
        decoder = self.codec.stream_decoder()
        async for chunk in chunks:
            events = decoder.feed(sse_frame(plain(chunk)))
            for event in events:
                yield event
            if events and isinstance(events[-1], ModelResponded | ModelCallFailed):
                return
        for event in decoder.close():
            yield event


def plain(value: Any) -> Any:
    """A chunk or completion as JSON data: pydantic models, dicts, lists, attribute objects."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return plain(dump())
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return {key: plain(item) for key, item in fields.items() if not key.startswith("_")}
    return str(value)


def sse_frame(data: Any) -> bytes:
    """One `data:` event carrying `data` as JSON."""
    return b"data: " + json.dumps(data, default=str).encode() + b"\n\n"


def from_completion(codec: OpenAICodec, completion: Any) -> list[ModelEvent]:
    """The events of one whole `chat.completion` object."""
    return codec.decode_body(json.dumps(plain(completion), default=str).encode())


async def close_stream(answer: Any) -> None:
    """Close an SDK stream (`close`) or an async generator (`aclose`), if it can be closed."""
    for name in ("aclose", "close"):
        closer = getattr(answer, name, None)
        if callable(closer):
            try:
                result = closer()
                if hasattr(result, "__await__"):
                    await result
            except Exception:  # closing a finished stream must not mask its events
                pass
            return


def sdk_failure(exc: Exception) -> ModelCallFailed:
    """The failure an exception from the client stands for (the httpx2 driver's kinds)."""
    kind = _sdk_kind(exc)
    if kind == "status":
        status = int(getattr(exc, "status_code", 0) or 0)
        response = getattr(exc, "response", None)
        headers = dict(getattr(response, "headers", {}) or {})
        return OpenAICodec().decode_error(status, headers, _error_body(exc, response))
    if kind in ("timeout", "connection"):
        return ModelCallFailed(retryable=True, message=f"{kind} error: {_message(exc)}")
    return ModelCallFailed(retryable=False, message=f"{type(exc).__name__}: {exc}")


def _sdk_kind(exc: Exception) -> str:
    """ "status", "timeout", "connection" or "other", without importing openai unless loaded."""
    import sys  # noqa: PLC0415 - only a failure asks

    openai = sys.modules.get("openai")
    if openai is not None:
        if isinstance(exc, openai.APIStatusError):
            return "status"
        if isinstance(exc, openai.APITimeoutError):
            return "timeout"
        if isinstance(exc, openai.APIConnectionError):
            return "connection"
    for name in ("httpx2", "httpx"):  # the SDK's transport library, or the caller's
        httpx = sys.modules.get(name)
        if httpx is not None:
            if isinstance(exc, httpx.TimeoutException):
                return "timeout"
            if isinstance(exc, httpx.TransportError):
                return "connection"
    if isinstance(exc, TimeoutError):
        return "timeout"
    return "other"


def _error_body(exc: Exception, response: Any) -> bytes:
    """The error response's body as sent, else the SDK's parsed copy, else its message."""
    try:
        content = response.content if response is not None else b""
    except Exception:
        content = b""
    if isinstance(content, bytes) and content:
        return content
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        wrapped = body if "error" in body else {"error": body}
        return json.dumps(wrapped, default=str).encode()
    return _message(exc).encode()


def _message(exc: Exception) -> str:
    """The exception's text, or its type when it has none."""
    return str(getattr(exc, "message", "") or exc) or type(exc).__name__


def openai_sdk_model(
    client: Any,
    *,
    model: str | None = None,
    stream: bool = True,
    reasoning_field: str | None = None,
    stream_usage: bool = True,
    close_client: bool = False,
    tool_call_recovery: str | None = None,
) -> OpenAISdkModel:
    """A model port over an `openai.AsyncOpenAI`-shaped client (never closed unless told).

    `model` replaces the request's model name (an Azure deployment, say);
    `reasoning_field` and `stream_usage` are the OpenAI codec's (`stream_usage=False`
    for servers that refuse `stream_options`); `close_client=True` makes `aclose()`
    close the client. `tool_call_recovery` ("auto", "hermes", "llama3", "mistral")
    turns calls a small local model wrote as text into calls, as `http_model`'s does.
    """
    codec = OpenAICodec(reasoning_field=reasoning_field, stream_usage=stream_usage)
    if tool_call_recovery is not None:
        codec = with_recovery(codec, tool_call_recovery)
    port = OpenAISdkModel(
        client, model=model, stream=stream, codec=codec, close_client=close_client
    )
    LOG_FILTER.add(port.redactor)
    return port
