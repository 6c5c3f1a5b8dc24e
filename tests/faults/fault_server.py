"""A hostile model server on 127.0.0.1: scripted faults, one per request, for the fault tests.

It speaks enough of OpenAI's `POST /v1/chat/completions` (streamed or not) and
Anthropic's `POST /v1/messages` (an answer or an error) for a Client pointed at
it with `base_url=server.url` (or `server.root` for Anthropic) to take it for a
provider. Each request gets the next `Fault` of the script (or the last one,
repeated): a plain answer, or a misbehaviour — a reset connection, keep-alive
comments trickled without content, an answer whose body never ends, a stream
cut short, a slow first byte, an HTTP error echoing the caller's key, a 429/503
with `Retry-After`, chunks without a usable choice.

Bounded: every wait and every loop ends by itself (`Fault.hold` seconds at
most), and leaving the `with` block closes every connection.

    with FaultServer([keepalive(), answer("hello")]) as server:
        AgentOptions(base_url=server.url, ...)
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Sequence
from typing import Any

import attrs

from toolreel.shell.scripted import Reply
from toolreel.shell.scripted._local import LocalServer, Request
from toolreel.shell.scripted._server import json_body, sse_events

#: What a `Fault` does with its request.
KINDS = (
    "answer",  # a normal answer
    "reset",  # the connection is reset before any byte of the response
    "keepalive",  # 200 and `: ping` comments every `every` seconds, no content, until `hold`
    "never_close",  # the whole answer ([DONE] included), then the body stays open for `hold`
    "truncate",  # the stream stops after `after` events and the connection closes
    "error",  # an HTTP error whose body echoes the caller's key (whole, and cut)
    "no_choice",  # chunks (or a body) whose `choices` is empty
    "malformed_calls",  # finish_reason "tool_calls" with `tool_calls` an object, not an array
)
#: The one call a `malformed_calls` answer holds, as an object where an array belongs.
MALFORMED_CALLS = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}


@attrs.frozen(kw_only=True)
class Fault:
    """What to answer one request with (see `KINDS`); `delay` holds back the first byte."""

    kind: str = "answer"
    text: str = "hello"
    calls: tuple[tuple[str, str, str], ...] = ()
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    every: float = 0.05
    hold: float = 10.0
    after: int = 2
    delay: float = 0.0


def answer(text: str = "hello", *, calls: Sequence[tuple[str, str, Any]] = ()) -> Fault:
    """A normal answer (streamed when asked to stream): text, and (id, name, arguments) calls."""
    encoded = tuple(
        (call_id, name, args if isinstance(args, str) else json.dumps(args))
        for call_id, name, args in calls
    )
    return Fault(text=text, calls=encoded)


def reset() -> Fault:
    """The connection is reset (RST) as soon as the request has been read."""
    return Fault(kind="reset")


def keepalive(*, every: float = 0.05, hold: float = 10.0) -> Fault:
    """A 200 stream of `: ping` comments only, for `hold` seconds at most, then the end."""
    return Fault(kind="keepalive", every=every, hold=hold)


def never_close(text: str = "hello", *, hold: float = 10.0) -> Fault:
    """The complete answer, `[DONE]` included, then a body that stays open for `hold` seconds."""
    return Fault(kind="never_close", text=text, hold=hold)


def truncate(text: str = "hello world", *, after: int = 2) -> Fault:
    """The stream is cut (connection closed) after `after` SSE events."""
    return Fault(kind="truncate", text=text, after=after)


def slow_first_byte(seconds: float, text: str = "hello") -> Fault:
    """An answer whose first byte comes after `seconds`."""
    return Fault(text=text, delay=seconds)


def echo_error(status: int = 401) -> Fault:
    """An error whose message quotes the request's key, whole and cut, as some servers do."""
    return Fault(kind="error", status=status)


def rate_limited(status: int = 429, *, retry_after: str) -> Fault:
    """A 429/503 whose `Retry-After` is `retry_after` (seconds, or an HTTP date)."""
    return Fault(kind="error", status=status, headers=(("retry-after", retry_after),))


def no_choice() -> Fault:
    """A 200 answer without a usable choice: chunks with `choices: []`, or such a body."""
    return Fault(kind="no_choice")


def malformed_calls() -> Fault:
    """A 200 answer that says it calls tools, its `tool_calls` an object (streamed or not)."""
    return Fault(kind="malformed_calls")


@attrs.frozen(kw_only=True)
class Seen:
    """One request as the server read it (header names lowercased)."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FaultServer:
    """The server, on a background thread; use it as a context manager."""

    def __init__(self, script: Sequence[Fault]) -> None:
        """Serve `script`, one fault per request (the last one repeats)."""
        self.script = list(script) or [answer()]
        self.requests: list[Seen] = []
        self._server = LocalServer(self._one)

    @property
    def port(self) -> int:
        """The port it listens on (0 until started)."""
        return self._server.port

    @property
    def connections(self) -> int:
        """How many connections clients opened."""
        return self._server.connections

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (ending in /v1)."""
        return f"{self.root}/v1"

    @property
    def root(self) -> str:
        """The bare base URL (Anthropic's convention)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultServer:
        """Start serving on a free port of 127.0.0.1."""
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop serving; every connection is closed."""
        self._server.stop()

    def _next(self, seen: Seen) -> Fault:
        """The fault for the next request."""
        self.requests.append(seen)
        return self.script[min(len(self.requests), len(self.script)) - 1]

    async def _one(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        """Answer one request with the next fault; False when the connection must end."""
        body = json.loads(request.body or b"{}")
        seen = Seen(path=request.path, headers=request.headers, body=body)
        fault = self._next(seen)
        if fault.delay:
            await asyncio.sleep(fault.delay)
        if fault.kind == "reset":
            _reset(writer)
            return False
        if fault.kind == "error":
            return await _error(writer, fault, seen)
        if seen.path.endswith("/messages"):
            return await _anthropic(writer, fault)
        return await _openai(writer, fault, seen)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST rather than FIN (linger 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _head(
    status: int, content_type: str, *, length: int | None, extra: Sequence[Any] = ()
) -> bytes:
    """A response head (chunked when `length` is None)."""
    framing = "transfer-encoding: chunked" if length is None else f"content-length: {length}"
    lines = [f"HTTP/1.1 {status} Fault", f"content-type: {content_type}", framing]
    lines += [f"{name}: {value}" for name, value in extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _send_json(
    writer: asyncio.StreamWriter, status: int, body: Any, extra: Sequence[Any] = ()
) -> bool:
    """A whole JSON response; the connection stays open."""
    data = json.dumps(body).encode()
    writer.write(_head(status, "application/json", length=len(data), extra=extra) + data)
    await writer.drain()
    return True


async def _error(writer: asyncio.StreamWriter, fault: Fault, seen: Seen) -> bool:
    """An error body quoting the caller's credentials, the way careless servers do."""
    key = seen.headers.get("authorization", "").removeprefix("Bearer ") or seen.headers.get(
        "x-api-key", ""
    )
    message = f"Incorrect API key provided: {key}. Also seen as {key[:14]}***{key[-4:]}."
    if seen.path.endswith("/messages"):
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": "authentication_error", "message": message},
        }
    else:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return await _send_json(writer, fault.status, body, fault.headers)


async def _openai(writer: asyncio.StreamWriter, fault: Fault, seen: Seen) -> bool:
    """A chat.completions answer, well-formed or with the fault's flaw."""
    reply = Reply(text=fault.text, calls=fault.calls)
    if not seen.body.get("stream"):
        body = json_body(reply)
        if fault.kind == "no_choice":
            body["choices"] = []
        if fault.kind == "malformed_calls":
            body["choices"][0]["message"]["tool_calls"] = MALFORMED_CALLS
            body["choices"][0]["finish_reason"] = "tool_calls"
        return await _send_json(writer, 200, body)
    payloads = sse_events(reply, include_usage=True)
    if fault.kind == "no_choice":
        empty = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "choices": []}
        payloads = [json.dumps(empty), json.dumps(empty), "[DONE]"]
    if fault.kind == "malformed_calls":
        choice = {
            "index": 0,
            "delta": {"tool_calls": MALFORMED_CALLS},
            "finish_reason": "tool_calls",
        }
        chunk = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "choices": [choice]}
        payloads = [json.dumps(chunk), "[DONE]"]
    return await _stream(writer, fault, [f"data: {p}\n\n".encode() for p in payloads])


async def _anthropic(writer: asyncio.StreamWriter, fault: Fault) -> bool:
    """A Messages stream answering with the fault's text."""
    usage = {"input_tokens": 10, "output_tokens": 5}
    events = [
        ("message_start", {"message": {"id": "msg_fault", "role": "assistant", "usage": usage}}),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": fault.text}}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        ("message_stop", {}),
    ]
    frames = [
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()
        for name, data in events
    ]
    return await _stream(writer, fault, frames)


async def _stream(writer: asyncio.StreamWriter, fault: Fault, frames: list[bytes]) -> bool:
    """Send SSE frames as a chunked body, flawed as the fault says."""
    writer.write(_head(200, "text/event-stream", length=None))
    if fault.kind == "keepalive":
        for _ in range(max(1, int(fault.hold / fault.every))):
            writer.write(_chunk(b": ping\n\n"))
            await writer.drain()
            await asyncio.sleep(fault.every)
        return False
    for number, frame in enumerate(frames):
        if fault.kind == "truncate" and number >= fault.after:
            await writer.drain()
            return False
        writer.write(_chunk(frame))
        await writer.drain()
    if fault.kind == "never_close":
        await asyncio.sleep(fault.hold)
        return False
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True
