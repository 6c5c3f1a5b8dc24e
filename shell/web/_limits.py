"""`BodyLimit`: a request body is read only up to a size and a time limit.

Every POST route reads its whole JSON body before it answers. Unbounded, a
100 MiB body costs hundreds of MB of memory, and a client sending a byte now
and then holds a request open forever. So:

- a body longer than `max_bytes` is 413 `{"error": ...}`: at once when its
  `Content-Length` says so, else as soon as the bytes streamed in pass the
  limit (chunked bodies, or a `Content-Length` that lies are counted too);
- a body that has not fully arrived `timeout` seconds after the request
  started is 408 `{"error": ...}`;
- (read by the routes) JSON nested deeper than `MAX_JSON_DEPTH` is 400, checked
  before parsing (`json_depth`).

The limits hold while the route reads the body; once it is read, `receive`
is passed through as it is (a streaming response listens there for the
client leaving).
"""

from __future__ import annotations

import anyio
import attrs
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolreel.core.record import Record, Value

from ._guard import refusal

#: The default body limit: 10 MiB.
MAX_BODY_BYTES = 10 * 1024 * 1024
#: The default time a body has to arrive in, from the request's start (seconds).
BODY_TIMEOUT = 30.0


class BodyRefused(Exception):
    """A body over a limit, raised from `receive` to the `BodyLimit` that answers it."""

    def __init__(self, status: int, message: str) -> None:
        """Keep the status and message the answer carries."""
        super().__init__(message)
        self.status = status
        self.message = message


def _declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, or None when it has none (or not a number)."""
    given = Headers(scope=scope).get("content-length")
    return int(given) if given is not None and given.isdigit() else None


def _too_large(max_bytes: int) -> BodyRefused:
    """The refusal of a body longer than `max_bytes`."""
    return BodyRefused(413, f"the request body is larger than the limit of {max_bytes} bytes")


@attrs.define(repr=False)
class _Reading(Record):
    """One request's body as it streams in: how much came, whether it is complete."""

    receive: Receive
    max_bytes: int
    timeout: float
    started: float = attrs.field(init=False, factory=anyio.current_time)
    received: int = 0
    complete: bool = False
    answered: bool = False

    async def next(self) -> Message:
        """The next message, counted against the limits while the body is still coming."""
        if self.complete:
            return await self.receive()
        try:
            with anyio.fail_after(max(self.started + self.timeout - anyio.current_time(), 0)):
                message = await self.receive()
        except TimeoutError:
            raise BodyRefused(
                408, f"the request body did not arrive within {self.timeout:g} s"
            ) from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
            if self.received > self.max_bytes:
                raise _too_large(self.max_bytes)
        else:
            self.complete = True
        return message


@attrs.frozen(repr=False, eq=False)
class BodyLimit(Value):
    """ASGI middleware: 413 for a body over `max_bytes`, 408 for one slower than `timeout`."""

    app: ASGIApp
    max_bytes: int = attrs.field(kw_only=True, default=MAX_BODY_BYTES)
    timeout: float = attrs.field(kw_only=True, default=BODY_TIMEOUT)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with a counted `receive`; answer a refusal it raised."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            refused = _too_large(self.max_bytes)
            await refusal(refused.status, refused.message)(scope, receive, send)
            return
        reading = _Reading(receive, self.max_bytes, self.timeout)

        async def sending(message: Message) -> None:
            """Send on, noting that an answer has begun."""
            reading.answered = True
            await send(message)

        try:
            await self.app(scope, reading.next, sending)
        except BodyRefused as refused:
            if reading.answered:
                raise
            await refusal(refused.status, refused.message)(scope, receive, send)
