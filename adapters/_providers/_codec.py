"""The codec port: what every provider's pure wire-format codec offers.

A codec turns a neutral `ModelRequest` into the provider's HTTP request
(`endpoint`, `headers`, `encode`) and the provider's bytes back into core
model events (`stream_decoder`, `decode_body`, `decode_error`). Codecs do no
I/O; the httpx2 driver in `_http.py` moves the bytes.

Decoder contract: whatever bytes arrive, in whatever pieces, a decoder never
raises, and over a whole response it yields exactly one terminal event —
`ModelResponded` or `ModelCallFailed` — as its last event.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import orjson
from returns.result import Failure, Result, Success

from toolreel.core import ModelCallFailed, ModelEvent, ModelRequest, ModelResponded, Usage

from ._failures import too_long
from ._framing import SSEEvent, SSEParser

TRUNCATED = "stream ended before the response was complete"
#: Every place a prompt-cache breakpoint may go (the Anthropic codec's rule 6; others cache
#: by themselves). Here, not in _anthropic.py, so that `http_model` names it without that codec.
CACHE_POINTS = frozenset({"tools", "system", "messages"})


class StreamDecoder(Protocol):
    """Incremental decoder of one streamed response."""

    def feed(self, chunk: bytes) -> list[ModelEvent]:
        """Events completed by the next piece of the body."""
        ...

    def close(self) -> list[ModelEvent]:
        """Events at the end of the body (a terminal one if none came yet)."""
        ...


class Codec(Protocol):
    """A provider's wire format (see the module docstring for the contract)."""

    name: ClassVar[str]
    default_base_url: ClassVar[str]
    api_key_env: ClassVar[tuple[str, ...]]

    def endpoint(self, base_url: str, request: ModelRequest, *, stream: bool) -> str:
        """The URL to POST `request` to."""
        ...

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Request headers, authentication included (never logged)."""
        ...

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The provider's JSON body for `request`."""
        ...

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response body."""
        ...

    def decode_body(self, body: bytes) -> list[ModelEvent]:
        """The events of one whole (non-streamed) response body."""
        ...

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelCallFailed:
        """The failure an HTTP error response stands for."""
        ...


def parse_json(text: str | bytes) -> Result[Any, str]:
    """JSON text as a value, or why it is not JSON.

    orjson first (every stream chunk comes here); what it refuses (NaN, an
    integer past 64 bits, bad UTF-8, or not JSON at all) the standard library
    decides, so the values and the messages are the standard library's.
    """
    try:
        return Success(orjson.loads(text))
    except orjson.JSONDecodeError:
        pass
    try:
        return Success(json.loads(text))
    except (ValueError, RecursionError) as exc:
        return Failure(f"not JSON: {exc}")


class GuardedDecoder:
    """Base for stream decoders: keeps the terminal-event contract and turns crashes into data.

    Subclasses implement `_frames` (framing: bytes -> frames), `_flush_frames`,
    `_on_frame` (frame -> events, calling `_respond`/`_fail` to end) and may
    override `_on_end` (what an ended stream without a terminal event means).
    """

    def __init__(self) -> None:
        """Not finished yet."""
        self.done = False

    def feed(self, chunk: bytes) -> list[ModelEvent]:
        """Frame the chunk and decode each frame, until the response ends."""
        if self.done:
            return []
        try:
            frames = self._frames(chunk)
        except Exception as exc:
            return [self._crashed(exc)]
        return self._decode(frames)

    def close(self) -> list[ModelEvent]:
        """Decode what is left; a stream that ended early is a retryable failure."""
        if self.done:
            return []
        events = self._guard(lambda: self._decode(self._flush_frames()))
        if not self.done:
            events += self._guard(self._on_end)
        if not self.done:
            events.append(self._fail(TRUNCATED, retryable=True))
        return events

    def _decode(self, frames: list[Any]) -> list[ModelEvent]:
        """Decode frames in order, stopping at the terminal event."""
        events: list[ModelEvent] = []
        for frame in frames:
            try:  # inline, not through `_guard`: this runs for every frame of every stream
                events += self._on_frame(frame)
            except Exception as exc:
                events.append(self._crashed(exc))
            if self.done:
                break
        return events

    def _guard(self, work: Any) -> list[ModelEvent]:
        """Run `work`; any exception becomes a fatal failure (the bytes were not the format)."""
        try:
            events: list[ModelEvent] = work()
        except Exception as exc:
            return [self._crashed(exc)]
        return events

    def _crashed(self, exc: Exception) -> ModelCallFailed:
        """The fatal failure of a decoder that crashed (the bytes were not the format)."""
        return self._fail(f"malformed response stream: {type(exc).__name__}: {exc}")

    def _respond(self, finish_reason: str, usage: Usage) -> ModelResponded:
        """The terminal success event."""
        self.done = True
        return ModelResponded(finish_reason=finish_reason, usage=usage)

    def _fail(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> ModelCallFailed:
        """The terminal failure event."""
        self.done = True
        return ModelCallFailed(
            retryable=retryable,
            message=message,
            status=status,
            retry_after=retry_after,
            context_too_long=not retryable and too_long(message),
        )

    def _frames(self, chunk: bytes) -> list[Any]:
        """Complete frames in `chunk`."""
        raise NotImplementedError

    def _flush_frames(self) -> list[Any]:
        """Frames left at the end of the body."""
        raise NotImplementedError

    def _on_frame(self, frame: Any) -> list[ModelEvent]:
        """Events of one frame."""
        raise NotImplementedError

    def _on_end(self) -> list[ModelEvent]:
        """Events when the body ended with no terminal event (default: none)."""
        return []


class SSEJsonDecoder(GuardedDecoder):
    """Base for streams of server-sent events each carrying one JSON object (Anthropic, Responses).

    Subclasses implement `_on_payload(kind, payload)`, and may override `_kind`
    (which event a frame is: by default its JSON `type`, else its `event:` name).
    """

    def __init__(self) -> None:
        """Nothing seen yet."""
        super().__init__()
        self._sse = SSEParser()

    def _frames(self, chunk: bytes) -> list[SSEEvent]:
        """Complete server-sent events."""
        return self._sse.feed(chunk)

    def _flush_frames(self) -> list[SSEEvent]:
        """What the parser holds at the end (an unterminated event is dropped)."""
        return self._sse.flush()

    def _on_frame(self, frame: SSEEvent) -> list[ModelEvent]:
        """Events of one server-sent event: its JSON object, named by `_kind`."""
        match parse_json(frame.data):
            case Success(dict() as payload):
                pass
            case Success(_):
                return [self._fail(f"malformed {frame.event} event: not a JSON object")]
            case Failure(why):
                return [self._fail(f"malformed {frame.event} event: {why}")]
        return self._on_payload(self._kind(frame, payload), payload)

    def _kind(self, frame: SSEEvent, payload: dict[str, Any]) -> str:
        """Which event a frame is: its JSON `type`, else its `event:` name."""
        kind = payload.get("type")
        return kind if isinstance(kind, str) and kind else frame.event

    def _on_payload(self, kind: str, payload: dict[str, Any]) -> list[ModelEvent]:
        """Events of one named JSON payload."""
        raise NotImplementedError
