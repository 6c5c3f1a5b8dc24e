"""A scripted OpenAI-compatible server on 127.0.0.1, for tests and the offline demo.

It speaks `POST /v1/chat/completions` like the real API — SSE with the id and
name only in a call's first delta, arguments split across chunks, a usage
chunk and `[DONE]`; or one JSON body when the request does not stream — so a
Client talks to it through the real OpenAI adapter. What it answers comes from
a script: a list of `Reply` (one per request), or a function of the request.

    with ScriptedServer([tool_calls(("call_1", "add", {"a": 1, "b": 2})), text("3")]) as server:
        AgentOptions(base_url=server.url, ...)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from toolreel.adapters.providers import status_retryable
from toolreel.core import (
    ModelCallFailed,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolreel.core.record import Value

from ._local import LocalServer, Request

Script = Sequence["Reply"] | Callable[[dict[str, Any]], "Reply"]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Reply(Value):
    """One scripted answer: text and/or tool calls, or an HTTP error, or a stream cut short.

    Made by `text`, `tool_calls`, `http_error` and `cut_off`; `usage` is the
    (input, output) tokens reported, `delay` seconds waited before answering;
    `body` an error's JSON body as a provider words it (empty: an OpenAI-style one
    holding `error` as its message).
    """

    text: str = ""
    calls: tuple[tuple[str, str, str], ...] = ()
    status: int = 200
    error: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    cut_after: int | None = None
    chunk_size: int = 4
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    body: str = ""


def text(content: str, *, chunk_size: int = 4) -> Reply:
    """A text answer, streamed `chunk_size` characters a delta."""
    return Reply(text=content, chunk_size=chunk_size)


def tool_calls(*calls: tuple[str, str, Any], text: str = "") -> Reply:
    """A response calling tools: (id, name, arguments as a dict or JSON text), in order."""
    encoded = tuple(
        (call_id, name, args if isinstance(args, str) else json.dumps(args))
        for call_id, name, args in calls
    )
    return Reply(text=text, calls=encoded)


def http_error(
    status: int,
    message: str,
    *,
    retry_after: float | None = None,
    body: Mapping[str, Any] | None = None,
) -> Reply:
    """An HTTP error with an OpenAI-style body holding `message`, or with `body` as it is
    (a provider's own error, `{"error": {"message": ..., "code": ...}}`)."""
    headers = (("retry-after", f"{retry_after:g}"),) if retry_after is not None else ()
    said = "" if body is None else json.dumps(body)
    return Reply(status=status, error=message, headers=headers, body=said)


def cut_off(reply: Reply, after_chunks: int) -> Reply:
    """The same reply, its stream cut (connection closed) after `after_chunks` SSE events."""
    return attrs.evolve(reply, cut_after=after_chunks)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One chat.completion.chunk."""
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse_events(reply: Reply, include_usage: bool) -> list[str]:
    """The reply as the `data:` payloads a streaming server sends."""
    size = max(1, reply.chunk_size)
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [
        _chunk({"content": reply.text[i : i + size]}) for i in range(0, len(reply.text), size)
    ]
    for index, (call_id, name, arguments) in enumerate(reply.calls):
        first = {"index": index, "id": call_id, "type": "function"}
        chunks.append(
            _chunk({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]})
        )
        for i in range(0, len(arguments), size):
            piece = {"index": index, "function": {"arguments": arguments[i : i + size]}}
            chunks.append(_chunk({"tool_calls": [piece]}))
    chunks.append(_chunk({}, "tool_calls" if reply.calls else "stop"))
    payloads = [json.dumps(chunk) for chunk in chunks]
    if include_usage:
        prompt, completion = reply.usage
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        payloads.append(json.dumps({"id": "chatcmpl-scripted", "choices": [], "usage": usage}))
    return [*payloads, "[DONE]"]


def json_body(reply: Reply) -> dict[str, Any]:
    """The reply as a non-streamed chat.completion."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in reply.calls
        ]
    prompt, completion = reply.usage
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
    }


class ScriptedServer:
    """A stand-in model: an OpenAI-compatible server on 127.0.0.1 that answers from a script.

        with ScriptedServer(calculator) as server:          # or a list of replies
            options = AgentOptions(base_url=server.url, model="calculator", api_key="none")
            ...                                              # Client(options), run(...)

    `script` is a list of `Reply` (`text(...)`, `tool_calls(...)`,
    `http_error(...)`, `cut_off(...)`), one per request in order — past its end
    a request gets an HTTP 500 — or a function of the request's JSON body
    returning the `Reply` (`calculator` is one). It speaks `POST
    .../chat/completions` as OpenAI does, streamed or not, so a `Client`
    reaches it through the real adapter (provider "openai", the default); the
    model name and key are not checked. `url` is the base URL (ending in /v1),
    `requests` every request body received, in order. Entering starts it in a
    background thread on a free port; leaving stops it.
    """

    def __init__(self, script: Script) -> None:
        """Serve `script` once started."""
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._server = LocalServer(self._answer)

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
        """The base URL, OpenAI style (ending in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ScriptedServer:
        """Start serving on a free port of 127.0.0.1."""
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop serving and close every connection."""
        self._server.stop()

    async def _answer(self, request: Request, writer: asyncio.StreamWriter) -> bool:
        """Answer one request with the script's reply."""
        return await self._respond(json.loads(request.body or b"{}"), writer)

    def _reply_for(self, request: dict[str, Any]) -> Reply:
        """The scripted reply to the next request."""
        self.requests.append(request)
        if callable(self.script):
            return self.script(request)
        index = len(self.requests) - 1
        if index >= len(self.script):
            return http_error(500, f"scripted server: no reply for request {index + 1}")
        return self.script[index]

    async def _respond(self, request: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        """Write one response; False when the connection must close (a cut stream)."""
        reply = self._reply_for(request)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers)
        if reply.status >= 400:
            body = reply.body or json.dumps(
                {"error": {"message": reply.error, "type": "scripted_error"}}
            )
            writer.write(_head(reply.status, "application/json", extra, len(body)) + body.encode())
            await writer.drain()
            return True
        if not request.get("stream"):
            body = json.dumps(json_body(reply))
            writer.write(_head(200, "application/json", extra, len(body)) + body.encode())
            await writer.drain()
            return True
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        writer.write(_head(200, "text/event-stream", extra, None))
        for number, payload in enumerate(sse_events(reply, include_usage)):
            if reply.cut_after is not None and number >= reply.cut_after:
                await writer.drain()
                return False
            data = f"data: {payload}\n\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def _head(status: int, content_type: str, extra: str, length: int | None) -> bytes:
    """A response head (chunked when `length` is None)."""
    framing = "transfer-encoding: chunked" if length is None else f"content-length: {length}"
    return (
        f"HTTP/1.1 {status} Scripted\r\ncontent-type: {content_type}\r\n{framing}\r\n{extra}\r\n"
    ).encode()


def reply_events(reply: Reply) -> list[Any]:
    """The core model events a reply stands for (for an in-process scripted model)."""
    if reply.status >= 400:
        retry_after = dict(reply.headers).get("retry-after")
        return [
            ModelCallFailed(
                retryable=status_retryable(reply.status),
                message=f"HTTP {reply.status}: {reply.error}",
                status=reply.status,
                retry_after=float(retry_after) if retry_after else None,
            )
        ]
    size = max(1, reply.chunk_size)
    events: list[Any] = [
        TextDelta(text=reply.text[i : i + size]) for i in range(0, len(reply.text), size)
    ]
    for index, (call_id, name, arguments) in enumerate(reply.calls):
        events.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        events += [
            ToolCallArgumentsDelta(index=index, fragment=arguments[i : i + size])
            for i in range(0, len(arguments), size)
        ]
    if reply.cut_after is not None:
        cut = events[: reply.cut_after]
        return [*cut, ModelCallFailed(retryable=True, message="stream ended before the response")]
    finish = "tool_calls" if reply.calls else "stop"
    usage = Usage(input_tokens=reply.usage[0], output_tokens=reply.usage[1])
    return [*events, ModelResponded(finish_reason=finish, usage=usage)]
