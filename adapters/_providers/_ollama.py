"""The Ollama native /api/chat codec (for Ollama's OpenAI-compatible /v1, use `OpenAICodec`).

Request: `{"model", "messages", "tools", "stream", "options"}`; an assistant
message carries `tool_calls` whose `function.arguments` is a JSON *object*
(not text), a result is `{"role": "tool", "content", "tool_name"}`, sampling
settings go under `options` (`temperature`, `num_predict`). Ollama has no
`tool_choice`: "none" leaves the tools out, anything else sends them.
Images are an `images` list of base64 bytes on the user message; a round's
result images follow its tool messages in one user message. Ollama takes no
image URL, and toolreel fetches none: one is refused (`ContentRefused`).
Response: newline-delimited JSON objects (one object when not streamed), each
with a `message` piece; the last has `"done": true`, `done_reason` and the
token counts `prompt_eval_count`/`eval_count`.

Rules, from Ollama's API reference and server types (tests/conformance/test_ollama.py):

1. Tool calls arrive whole, one or more per line, arguments as an object:
   each becomes a `ToolCallStarted` plus one `ToolCallArgumentsDelta` of
   `json.dumps(arguments)`. Calls have no id in older servers (`call_id=""`:
   the core assigns `call_<turn>_<iteration>_<index>`); newer ones send `id`
   and `function.index`, which are used when present. Without an index, calls
   are numbered in arrival order across lines.
2. `done_reason` is "stop" even when the model called tools; the core goes by
   the calls, not the reason.
3. `thinking` is reasoning text; it goes back in the assistant message's
   `thinking` field.
4. An `{"error": "text"}` object inside a 200 response is a failure on the
   server's side while generating (the runner crashed, ran out of memory):
   retryable. A bad request gets an HTTP error status instead.
5. A `message` that is no object, or `tool_calls` that are no array of
   objects, is malformed: a retryable failure (read leniently, the calls would
   be dropped and the turn end as an empty answer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, assert_never

import attrs

from toolreel.core import (
    ImagePart,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolResult,
    Usage,
    arguments_object,
)
from toolreel.core.record import Value

from .._errors import ContentRefused
from ._codec import GuardedDecoder, parse_json
from ._expand import ModelTurn, ResultsTurn, UserTurn, expand
from ._failures import body_text, http_failure
from ._framing import LineParser
from ._images import b64, result_note
from ._json import (
    MALFORMED,
    as_count,
    as_dict,
    as_str,
    bearer_headers,
    count,
    dicts,
    fatal,
    guarded_body,
    not_object,
    not_objects,
    tool_json,
)
from ._recovery import ToolCallRecovery

#: The provider this codec speaks for: what the reasoning it decodes is stamped with
#: (`ReasoningDelta.provider`), and the only reasoning it sends back (with unknown).
PROVIDER = "ollama"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class OllamaCodec(Value):
    """Ollama's /api/chat; `think` sets the request's `think` (True, False, or "low"/"high").

    `tool_call_recovery` turns calls a model wrote as text into calls (_recovery.py).
    `images` False says the model is text-only; Ollama takes image bytes only, so an
    image URL is refused (`image_urls`): toolreel never fetches one.
    """

    name: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "http://127.0.0.1:11434"
    api_key_env: ClassVar[tuple[str, ...]] = ()

    think: bool | str | None = None
    tool_call_recovery: ToolCallRecovery | None = None
    images: bool = True
    image_urls: ClassVar[bool] = False

    def endpoint(self, base_url: str, request: ModelRequest, *, stream: bool) -> str:
        """`{base_url}/api/chat`, streamed or not."""
        return f"{base_url.rstrip('/')}/api/chat"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON, with a bearer token when there is a key (ollama.com, or a proxy in front)."""
        return bearer_headers(api_key)

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The /api/chat body for `request`."""
        body: dict[str, Any] = {"model": request.model, "messages": messages(request)}
        if request.tools and request.tool_choice != "none":
            body["tools"] = [tool_json(spec) for spec in request.tools]
        body["stream"] = stream
        options: dict[str, Any] = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if options:
            body["options"] = options
        if self.think is not None:
            body["think"] = self.think
        return body

    def stream_decoder(self) -> OllamaStreamDecoder:
        """A fresh NDJSON decoder."""
        return OllamaStreamDecoder()

    def decode_body(self, body: bytes) -> list[ModelEvent]:
        """The events of one whole response object; never raises."""
        return guarded_body(body, _whole_response)

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelCallFailed:
        """`{"error": "text"}` (the status decides whether to retry)."""
        return http_failure(status, error_text(body), headers)


def messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The system prompt, then the history's turns as Ollama chat messages."""
    result: list[dict[str, Any]] = []
    if request.system:
        result.append({"role": "system", "content": request.system})
    for turn in expand(request.messages, PROVIDER):
        if isinstance(turn, UserTurn):
            result.append(_with_images({"role": "user", "content": turn.text}, turn.images))
        elif isinstance(turn, ModelTurn):
            result.append(assistant(turn))
        elif isinstance(turn, ResultsTurn):
            result.extend(
                {"role": "tool", "content": item.content, "tool_name": item.name}
                for item in turn.results
            )
            result.extend(_result_images(turn.results))
        else:
            assert_never(turn)
    return result


def _with_images(message: dict[str, Any], images: tuple[ImagePart, ...]) -> dict[str, Any]:
    """The message with an `images` list of base64 bytes when it has images."""
    if images:
        message["images"] = [_bytes(image) for image in images]
    return message


def _bytes(image: ImagePart) -> str:
    """An image's base64 bytes; a URL is refused (Ollama takes none, toolreel fetches none)."""
    if image.url is not None:
        raise ContentRefused(
            f"ollama cannot take image URLs and toolreel does not fetch them: {image.label()}; "
            "pass the image's bytes instead"
        )
    return b64(image)


def _result_images(results: tuple[ToolResult, ...]) -> list[dict[str, Any]]:
    """The results' images as one user message after the tool messages, naming each call."""
    with_images = [result for result in results if result.images]
    if not with_images:
        return []
    text = "\n".join(result_note(result) for result in with_images)
    images = tuple(image for result in with_images for image in result.images)
    return [_with_images({"role": "user", "content": text}, images)]


def assistant(turn: ModelTurn) -> dict[str, Any]:
    """One response as one assistant message: thinking, text, calls with object arguments."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    thinking = "".join(block.text for block in turn.reasoning if block.redacted is None)
    if thinking:
        message["thinking"] = thinking
    if turn.calls:
        message["tool_calls"] = [
            {"function": {"name": call.name, "arguments": arguments_object(call.arguments) or {}}}
            for call in turn.calls
        ]
    return message


class OllamaStreamDecoder(GuardedDecoder):
    """Decodes an /api/chat NDJSON stream (rules 1-4 of the module docstring)."""

    def __init__(self) -> None:
        """No line seen yet."""
        super().__init__()
        self._lines = LineParser()
        self._next_index = 0

    def _frames(self, chunk: bytes) -> list[Any]:
        """Complete lines."""
        return list(self._lines.feed(chunk))

    def _flush_frames(self) -> list[Any]:
        """A last line without a line end."""
        return list(self._lines.flush())

    def _on_frame(self, frame: str) -> list[ModelEvent]:
        """One line: a JSON object."""
        data = parse_json(frame).value_or(None)
        if not isinstance(data, dict):
            return [self._fail(f"malformed stream line: not a JSON object: {frame[:200]}")]
        return self.on_object(data)

    def on_object(self, data: dict[str, Any]) -> list[ModelEvent]:
        """One response object: its message piece, then the end when `done` is true."""
        error = data.get("error")
        if error:
            message = error if isinstance(error, str) else json.dumps(error)
            return [self._fail(message, retryable=True)]
        piece = data.get("message")
        why = not_object(piece, "message") or not_objects(
            as_dict(piece).get("tool_calls"), "tool_calls"
        )
        if why is not None:  # read leniently, the calls would be dropped without a word
            return [self._fail(MALFORMED + why, retryable=True)]
        events = self._message_events(as_dict(piece))
        if data.get("done") is True:
            reason = as_str(data.get("done_reason")) or "stop"
            usage = Usage(
                input_tokens=count(data.get("prompt_eval_count")),
                output_tokens=count(data.get("eval_count")),
            )
            events.append(self._respond(reason, usage))
        return events

    def _message_events(self, message: dict[str, Any]) -> list[ModelEvent]:
        """Thinking, text, then whole tool calls."""
        events: list[ModelEvent] = []
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            events.append(ReasoningDelta(provider=PROVIDER, text=thinking))
        content = message.get("content")
        if isinstance(content, str) and content:
            events.append(TextDelta(text=content))
        for call in dicts(message.get("tool_calls")):
            function = as_dict(call.get("function"))
            index = as_count(function.get("index"))
            index = self._next_index if index is None else index
            self._next_index = max(self._next_index, index + 1)
            name = as_str(function.get("name"))
            events.append(ToolCallStarted(index=index, call_id=as_str(call.get("id")), name=name))
            arguments = function.get("arguments")
            fragment = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
            if fragment:
                events.append(ToolCallArgumentsDelta(index=index, fragment=fragment))
        return events


def _whole_response(data: Any) -> list[ModelEvent]:
    """The events of one parsed non-streamed response object."""
    if not isinstance(data, dict):
        return [fatal("response body is not a JSON object")]
    decoder = OllamaStreamDecoder()
    events = decoder.on_object(data)
    if not decoder.done:
        events.append(fatal('response is incomplete: no "done": true'))
    return events


def error_text(body: bytes) -> str:
    """The message of an error body (`{"error": "text"}`), or the body itself."""
    data = parse_json(body).value_or(None)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, str) and error:
        return error
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return body_text(body) or "(empty body)"
