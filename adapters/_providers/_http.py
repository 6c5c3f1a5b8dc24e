"""The thin httpx2 driver: POST the encoded request, feed the body to the codec's decoder.

Models share connection pools (adapters/_providers/_pools.py): the models of one event
loop with the same provider, base URL and transport send through one
`httpx2.AsyncClient`, taken when the model is made inside an event loop (else
at its first call: the first call should not pay for making a pool) and given
back by `aclose`; or
through the caller's own client (`client=`: httpx2's, or httpx's while both
exist; _clients.py), which toolreel never closes. The key, headers and
`connect`/`read` timeouts go with each request, as objects of the client's own
library, whose exceptions are the ones mapped. httpx2 itself is imported by the
first model built, not with toolreel.
Transport trouble — connect errors, timeouts, a connection dropped mid-stream —
becomes a retryable `ModelCallFailed`; nothing escapes as an exception except
cancellation. The API key lives in a `Secret` and goes only into the headers.
A request with images the codec cannot take (a text-only model, an image URL for
Ollama; adapters/_providers/_images.py) is a fatal failure, and is never sent.
With a codec's `tool_call_recovery`, decoded events pass through
`_recovery.Recovery` (calls a model wrote as text become calls) before anyone sees them.

Limits (`Timeouts`): `connect` and `read` bound each connect and each read;
`total` bounds a whole call, however the server trickles bytes; `idle` bounds
the wait for content in a stream — only a decoded event (text, reasoning, a
tool-call piece) resets it, never a keep-alive comment (`total` and `idle` are
one call's clock: _deadline.py). A response is complete
at its terminal event: the rest of the body (`[DONE]`, the chunked terminator)
is read for `drain` seconds at most, so the connection is reused, else the
connection is closed; the answer is never thrown away for want of an end.
"""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, cast

import anyio
import attrs
import orjson
import sniffio

from toolreel.core import (
    ConfigError,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    UsageError,
)
from toolreel.core.record import Value

from .._redact import Redactor, clean_key, logger
from ._clients import library_of
from ._codec import Codec, StreamDecoder
from ._deadline import Expired, ScopedDeadline, call_deadline
from ._images import request_refusal
from ._pools import Lease, PoolKey, acquire
from ._recovery import recovery_for

if TYPE_CHECKING:
    import httpx2

    from ._clients import AsyncClient, AsyncTransport

log = logger(__name__)

#: At most this much of an error body is read (a hostile server may never end one).
ERROR_BODY_LIMIT = 64 * 1024
#: The most parsed endpoints a model keeps (one per model name and mode at most).
_URLS_KEPT = 32


class Secret:
    """A credential that never shows in a repr, a str, `attrs.asdict`, a pickle or an exception.

    The value is stripped of surrounding whitespace (a key read from a file
    ends in a newline); one with whitespace or control characters inside is
    refused with a `ConfigError` that does not show it. Not an attrs class, so
    `attrs.asdict` of a record holding one keeps the `Secret` (never its text);
    pickling refuses (a pickle would hold the key in clear), copying returns it.
    Only `value` gives the key: read it where a request is built, nowhere else.
    """

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        """Keep the key, cleaned (`clean_key`)."""
        object.__setattr__(self, "_value", clean_key(value) or "")

    @property
    def value(self) -> str:
        """The key itself ("" for none)."""
        return self._value

    def __setattr__(self, name: str, value: object) -> None:
        """A secret is immutable, like the records it sits in."""
        raise attrs.exceptions.FrozenInstanceError()

    def __eq__(self, other: object) -> bool:
        """Equal to a Secret with the same key (compared in constant time)."""
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        """Hashable like the frozen records that hold it."""
        return hash((Secret, self._value))

    def __repr__(self) -> str:
        """Never the value."""
        return "Secret('***')"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        """Refuse: a pickle would hold the key in clear."""
        raise UsageError(
            "a Secret (an API key) cannot be pickled: pass the key to the other process "
            "by its environment variable"
        )

    def __copy__(self) -> Secret:
        """Itself: it is immutable."""
        return self

    def __deepcopy__(self, memo: object) -> Secret:
        """Itself: it is immutable."""
        return self


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    """A limit is a positive number of seconds (`math.inf` for none)."""
    if not value > 0:
        raise ConfigError(attribute.name, value, "a positive number of seconds (math.inf: none)")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Timeouts(Value):
    """Seconds: to connect, per read, per whole call, without content, to drain a finished body."""

    connect: float = attrs.field(default=10.0, validator=_positive)
    read: float = attrs.field(default=300.0, validator=_positive)
    total: float = attrs.field(default=600.0, validator=_positive)
    idle: float = attrs.field(default=120.0, validator=_positive)
    drain: float = attrs.field(default=0.5, validator=_positive)


class HttpModel:
    """Calls one provider over HTTP: `stream(request)` yields core model events."""

    def __init__(
        self,
        codec: Codec,
        *,
        base_url: str | None = None,
        api_key: Secret | None = None,
        stream: bool = True,
        timeouts: Timeouts = Timeouts(),
        extra_headers: Mapping[str, str] | None = None,
        transport: AsyncTransport | None = None,
        client: AsyncClient | None = None,
    ) -> None:
        """Prepare the calls: the pool is taken now if a loop runs, else at the first call."""
        #: httpx2 (loaded with the first model, not with toolreel), or httpx for its objects.
        self._httpx = httpx = library_of(client if client is not None else transport)

        self.codec = codec
        self.base_url = (base_url or codec.default_base_url).rstrip("/")
        self.streaming = stream
        self.timeouts = timeouts
        self._api_key = api_key
        #: Masks this model's key (and its echoes) in any text; the shell applies it.
        self.redactor = Redactor.of([api_key.value if api_key else None])
        self._extra_headers = dict(extra_headers or {})
        read = None if math.isinf(timeouts.read) else timeouts.read
        connect = None if math.isinf(timeouts.connect) else timeouts.connect
        self._timeout = httpx.Timeout(read, connect=connect)
        self._pool = PoolKey(provider=codec.name, base_url=self.base_url, transport=transport)
        self._lease: Lease | None = None
        #: Each endpoint parsed once: httpx2 parses a URL given as text on every request
        #: (~20-45 µs a call here), the same few endpoints every round.
        self._urls: dict[str, httpx2.URL] = {}
        #: Typed as httpx2's: an httpx client has the same API (only its objects differ).
        self._given = cast("httpx2.AsyncClient | None", client)
        #: The client calls go through: the caller's, else the pool's (once taken).
        self._client = self._given
        if client is None and _loop_running():
            self._sender()

    def __repr__(self) -> str:
        """Provider and where it points; never the key."""
        return f"HttpModel(provider={self.codec.name!r}, base_url={self.base_url!r})"

    def _sender(self) -> httpx2.AsyncClient:
        """The client for a call: the caller's, or a lease on the running loop's pool."""
        if self._given is not None:
            return self._given
        lease = self._lease
        if lease is None or not lease.here():
            if lease is not None:
                lease.abandon()  # taken in another event loop: its client is bound there
            lease = self._lease = acquire(self._pool)
            self._client = lease.client
        return lease.client

    async def aclose(self) -> None:
        """Give the pool back (the last model out closes it); a caller's client stays open."""
        lease, self._lease = self._lease, None
        if lease is not None:
            with anyio.CancelScope(shield=True):
                await lease.release()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The events of one model call, as they arrive; the last is terminal.

        Every transport trouble and limit becomes a failure (redacted). One
        generator for the whole call: each event of a stream passes through it
        alone, not through one generator per stage.
        """
        httpx = self._httpx  # the client's library: its exceptions are the ones raised
        refused = request_refusal(self.codec, request)  # images the model cannot take
        if refused is not None:
            yield ModelCallFailed(retryable=False, message=refused)
            return
        deadline = call_deadline(self.timeouts.total, self.timeouts.idle)
        key = self._api_key.value if self._api_key else None
        client = self._sender()
        sent = client.build_request(
            "POST",
            self._url(self.codec.endpoint(self.base_url, request, stream=self.streaming)),
            content=_json_bytes(self.codec.encode(request, stream=self.streaming)),
            headers=_with_json_type({**self.codec.headers(key), **self._extra_headers}),
            timeout=self._timeout,
        )
        response: httpx2.Response | None = None
        failure: ModelCallFailed | None = None
        recover = recovery_for(self.codec, request) or _as_they_are  # text calls, if asked
        try:
            response = await deadline.within(client.send(sent, stream=True), idle=self.streaming)
            if response.status_code < 300 and self.streaming:
                decoder = self.codec.stream_decoder()
                chunks = response.aiter_bytes()
                while decoded := await self._next_events(decoder, chunks, deadline):
                    events = recover(decoded)
                    if events and isinstance(events[-1], ModelResponded | ModelCallFailed):
                        for event in events[:-1]:
                            yield self._told(event)
                        await self._finish_body(response, chunks)  # no waiting for the end
                        yield self._told(events[-1])
                        return
                    for event in events:
                        yield self._told(event)
                events = recover(decoder.close())
            else:
                events = recover(await self._whole(response, deadline))
            for event in events:
                yield self._told(event)
        except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:  # a bad URL
            failure = ModelCallFailed(retryable=False, message=_transport_message(exc, sent.url))
        except httpx.RequestError as exc:  # transport trouble, a broken gzip stream, ...
            failure = ModelCallFailed(retryable=True, message=_transport_message(exc, sent.url))
        except Expired as exc:
            failure = ModelCallFailed(retryable=True, message=str(exc))
        finally:
            deadline.close()
            if response is not None and not response.is_closed:  # read whole: closed already
                with anyio.CancelScope(shield=True):
                    await response.aclose()
        if failure is not None:
            for event in recover([failure]):  # what was held goes first, as text
                yield self._told(event)

    def _url(self, endpoint: str) -> httpx2.URL:
        """`endpoint` parsed by the client's library, once (a bounded cache: a few models)."""
        url = self._urls.get(endpoint)
        if url is None:
            if len(self._urls) >= _URLS_KEPT:
                self._urls.clear()
            url = self._urls[endpoint] = self._httpx.URL(endpoint)
        return url

    def _told(self, event: ModelEvent) -> ModelEvent:
        """An event as the caller gets it: a failure redacted (and logged)."""
        if isinstance(event, ModelCallFailed):
            event = self.redactor.event(event)
            log.debug("model call failed: %s", event.message)
        return event

    async def _next_events(
        self, decoder: StreamDecoder, chunks: AsyncIterator[bytes], deadline: ScopedDeadline
    ) -> list[ModelEvent]:
        """The events of the stream's next chunks that hold any; [] at its end.

        Content resets the idle limit; a keep-alive comment does not.
        """
        while True:
            try:
                chunk = await deadline.within(anext(chunks), idle=True)
            except StopAsyncIteration:
                return []
            events = decoder.feed(chunk)
            if events:
                deadline.content()
                return events

    async def _whole(self, response: httpx2.Response, deadline: ScopedDeadline) -> list[ModelEvent]:
        """The events of a response read whole: an error, or an answer that was not streamed."""
        if response.status_code >= 300:  # httpx2 does not follow redirects
            raw = await deadline.within(_read_some(response, ERROR_BODY_LIMIT), idle=False)
            await response.aclose()
            return [self.codec.decode_error(response.status_code, response.headers, raw)]
        body = await deadline.within(response.aread(), idle=False)
        return list(self.codec.decode_body(body))

    async def _finish_body(self, response: httpx2.Response, chunks: AsyncIterator[bytes]) -> None:
        """The response is complete: read its end briefly (to reuse the connection), else close."""
        with anyio.move_on_after(self.timeouts.drain):
            async for _ in chunks:
                pass
            return
        await response.aclose()


def _as_they_are(events: list[ModelEvent]) -> list[ModelEvent]:
    """The events unchanged (no text calls to recover)."""
    return events


def _with_json_type(headers: dict[str, str]) -> dict[str, str]:
    """The headers with the JSON content type httpx2's `json=` adds (unless they name one)."""
    if not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"
    return headers


def _json_bytes(body: Any) -> bytes:
    """A request body as compact UTF-8 JSON, the bytes httpx2's `json=` would send.

    orjson writes them several times faster (the history grows every round);
    what it refuses (an integer past 64 bits, a key that is not a string) goes
    the way httpx2 goes. One difference: a NaN or infinite float, which httpx2
    refuses, orjson writes as null (no request toolreel builds holds one: a
    temperature must be finite).
    """
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _loop_running() -> bool:
    """Whether an event loop runs in this thread (its pools can be used now)."""
    try:
        sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return False
    return True


async def _read_some(response: httpx2.Response, limit: int) -> bytes:
    """The body's first `limit` bytes (an error body need not be read to its end)."""
    parts: list[bytes] = []
    size = 0
    async for part in response.aiter_bytes():
        parts.append(part)
        size += len(part)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


def _transport_message(exc: Exception, url: Any) -> str:
    """What went wrong on the wire, and where: the URL without user info or query (secrets)."""
    kind = type(exc).__name__
    detail = str(exc) or "no detail"
    host = f"[{url.host}]" if ":" in url.host else url.host
    port = "" if url.port is None else f":{url.port}"
    return f"{kind}: {detail} ({url.scheme}://{host}{port}{url.path})"
