"""The thin httpx driver: POST the encoded request, feed the body to the codec's decoder.

One `httpx.AsyncClient` per `HttpModel` (connections are reused across calls).
Transport trouble — connect errors, timeouts, a connection dropped mid-stream —
becomes a retryable `ModelCallFailed`; nothing escapes as an exception except
cancellation. The API key lives in a `Secret` and goes only into the headers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import attrs
import httpx

from toolreel.core import ModelCallFailed, ModelEvent, ModelRequest, ModelResponded

from ._codec import Codec


@attrs.frozen(repr=False)
class Secret:
    """A credential that never shows in a repr, a log line or an exception."""

    value: str

    def __repr__(self) -> str:
        """Never the value."""
        return "Secret('***')"

    __str__ = __repr__


@attrs.frozen(kw_only=True)
class Timeouts:
    """Seconds to connect, and to wait for each piece of the response."""

    connect: float = 10.0
    read: float = 300.0


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
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Prepare one connection pool for this provider."""
        self.codec = codec
        self.base_url = (base_url or codec.default_base_url).rstrip("/")
        self.streaming = stream
        self._api_key = api_key
        self._extra_headers = dict(extra_headers or {})
        timeout = httpx.Timeout(timeouts.read, connect=timeouts.connect)
        self._client = httpx.AsyncClient(timeout=timeout, transport=transport)

    def __repr__(self) -> str:
        """Provider and where it points; never the key."""
        return f"HttpModel(provider={self.codec.name!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The events of one model call, as they arrive; the last is terminal."""
        url = self.codec.endpoint(self.base_url, request, stream=self.streaming)
        body = self.codec.encode(request, stream=self.streaming)
        key = self._api_key.value if self._api_key else None
        headers = {**self.codec.headers(key), **self._extra_headers}
        try:
            async with self._client.stream("POST", url, json=body, headers=headers) as response:
                if response.status_code >= 300:  # httpx does not follow redirects
                    raw = await response.aread()
                    yield self.codec.decode_error(response.status_code, response.headers, raw)
                    return
                async for event in self._decode(response):
                    yield event
        except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            yield ModelCallFailed(retryable=False, message=_transport_message(exc))  # a bad URL
        except httpx.RequestError as exc:  # transport trouble, a broken gzip stream, ...
            yield ModelCallFailed(retryable=True, message=_transport_message(exc))

    async def _decode(self, response: httpx.Response) -> AsyncIterator[ModelEvent]:
        """Decode a successful response, streamed or whole."""
        if not self.streaming:
            for event in self.codec.decode_body(await response.aread()):
                yield event
            return
        decoder = self.codec.stream_decoder()
        chunks = response.aiter_bytes()
        async for chunk in chunks:
            events = decoder.feed(chunk)
            if events and isinstance(events[-1], ModelResponded | ModelCallFailed):
                # The response is complete: read what is left (a `[DONE]`, the chunked
                # terminator) before the consumer stops, so the connection is reused.
                async for _ in chunks:
                    pass
            for event in events:
                yield event
        for event in decoder.close():
            yield event


def _transport_message(exc: httpx.RequestError) -> str:
    """What went wrong on the wire, without the request (whose headers hold the key)."""
    kind = type(exc).__name__
    detail = str(exc) or "no detail"
    return f"{kind}: {detail}"
