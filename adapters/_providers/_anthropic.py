"""The Anthropic Messages API codec (`POST /v1/messages`), streamed or whole.

Encoding (https://docs.anthropic.com/en/api/messages):
1. `system` is top level; `max_tokens` is required, so the codec's default fills in.
2. Roles strictly alternate: a model turn is one assistant message holding its thinking
   blocks (sent back unchanged, as the continuation requires), its text, then one
   `tool_use` per call; a results turn is one user message with one `tool_result` per
   call, in call order. Consecutive same-role turns merge into one message.
3. No empty text blocks: the API rejects them, so an empty text is left out.
4. Images (adapters/_providers/_images.py) are `image` blocks with a `base64` or `url`
   source, after the user's text; a result with images has a `content` list, its text
   then its images, inside its `tool_result`.
5. `tool_choice` "required" is `{"type": "any"}`; "none" keeps the tools listed, since
   the API rejects `tool_use` blocks in the history without their definitions.
6. Prompt caching (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
   `cache_points` names where `cache_control: {"type": "ephemeral"}` breakpoints go, at
   most the API's 4: "tools" on the last tool, "system" on the system prompt (then sent
   as one text block), "messages" on the last block of the last two user messages — the
   request's end, written to the cache, and the previous request's end, read from it
   (the API looks back only ~20 blocks from a breakpoint for an earlier cached prefix,
   which one round of many parallel calls outgrows). The prefix order is tools, system,
   messages, so each breakpoint caches everything before it. User messages hold only
   blocks that take a breakpoint (text, image, tool_result); thinking blocks never get one.

Decoding: the stream is named server-sent events (message_start, content_block_start /
_delta / _stop, message_delta, message_stop, ping, error). A content block's index is
its tool call's index. A whole response is replayed as the stream it would have been,
so both paths share one decoder. A stream that ends before `message_stop` is a
retryable truncation (the base class rule): the API always ends a complete one so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar

import attrs
from returns.result import Failure, Success

from toolreel.core import (
    ImagePart,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    Reasoning,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolResult,
    ToolSpec,
    Usage,
    arguments_object,
)
from toolreel.core.record import Value

from ._codec import SSEJsonDecoder, parse_json
from ._expand import ModelTurn, ResultsTurn, UserTurn, expand
from ._failures import body_text, http_failure, status_retryable
from ._framing import SSEEvent
from ._images import b64
from ._json import as_dict

#: The provider this codec speaks for: what the reasoning it decodes is stamped with
#: (`ReasoningDelta.provider`), and the only reasoning it sends back (with unknown).
PROVIDER = "anthropic"


Json = dict[str, Any]

#: Error types worth asking again for (https://docs.anthropic.com/en/api/errors):
#: 429 rate_limit_error, 500 api_error, 504 timeout_error, 529 overloaded_error.
RETRYABLE_ERRORS = frozenset({"rate_limit_error", "api_error", "timeout_error", "overloaded_error"})

#: Breakpoints on the conversation: the last two user messages.
_MARKED_MESSAGES = 2

_TOOL_CHOICES: dict[str, Json] = {
    "auto": {"type": "auto"},
    "required": {"type": "any"},
    "none": {"type": "none"},
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AnthropicCodec(Value):
    """Anthropic's wire format; `thinking_budget` turns extended thinking on.

    `images` False says the model is text-only: a request with images is refused.
    `cache_points` places prompt-cache breakpoints (rule 6; none by default: the HTTP
    model built by `http_model` is given `CACHE_POINTS`, all three).
    """

    name: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    api_key_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)

    version: str = "2023-06-01"
    default_max_tokens: int = 4096
    thinking_budget: int | None = None
    thinking_display: str | None = None
    images: bool = True
    image_urls: ClassVar[bool] = True
    #: Where prompt-cache breakpoints go (rule 6): "tools", "system", "messages".
    cache_points: frozenset[str] = frozenset()

    def endpoint(self, base_url: str, request: ModelRequest, *, stream: bool) -> str:
        """The Messages endpoint (one URL for streamed and whole responses)."""
        return f"{base_url.rstrip('/')}/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON, the API version, and the key when there is one."""
        headers = {"content-type": "application/json", "anthropic-version": self.version}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The Messages request body."""
        max_tokens = request.max_tokens
        points = self.cache_points
        body: Json = {
            "model": request.model,
            "max_tokens": self.default_max_tokens if max_tokens is None else max_tokens,
            "messages": messages(request),
        }
        if request.system:
            body["system"] = request.system
            if "system" in points:
                body["system"] = [{"type": "text", "text": request.system, **_ephemeral()}]
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = [tool(spec) for spec in request.tools]
            body["tool_choice"] = tool_choice(request.tool_choice)
            if "tools" in points:
                body["tools"][-1].update(_ephemeral())
        if "messages" in points:
            mark_conversation(body["messages"])
        if self.thinking_budget is not None:
            body["thinking"] = self._thinking()
        if stream:
            body["stream"] = True
        return body

    def _thinking(self) -> Json:
        """The extended-thinking setting."""
        thinking: Json = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if self.thinking_display is not None:
            thinking["display"] = self.thinking_display
        return thinking

    def stream_decoder(self) -> AnthropicStreamDecoder:
        """A fresh decoder for one event stream."""
        return AnthropicStreamDecoder()

    def decode_body(self, body: bytes) -> list[ModelEvent]:
        """The events of a whole message (or the failure an error body stands for)."""
        return AnthropicStreamDecoder().decode_message(body)

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelCallFailed:
        """The failure of an HTTP error: the provider's error type and message."""
        parsed = _error_body(body)
        if parsed is None:
            return http_failure(status, body_text(body) or "(empty body)", headers)
        error, request_id = parsed
        kind = str(error.get("type", "error"))
        return http_failure(
            status,
            _error_message(error, request_id),
            headers,
            retryable=status_retryable(status) or kind in RETRYABLE_ERRORS,
        )


# Encoding ------------------------------------------------------------------


def tool(spec: ToolSpec) -> Json:
    """A tool definition; its schema goes as a JSON object."""
    schema = json.loads(spec.parameters)
    if not isinstance(schema, dict):
        raise ValueError(f"tool {spec.name!r}: parameters must be a JSON Schema object")
    return {"name": spec.name, "description": spec.description, "input_schema": schema}


def _ephemeral() -> Json:
    """A fresh breakpoint, so no two blocks share one dict."""
    return {"cache_control": {"type": "ephemeral"}}


def mark_conversation(encoded: list[Json]) -> None:
    """A breakpoint on the last block of each of the last two user messages (rule 6)."""
    left = _MARKED_MESSAGES
    for message in reversed(encoded):
        if message["role"] != "user":
            continue
        message["content"][-1].update(_ephemeral())
        left -= 1
        if not left:
            return


def tool_choice(choice: str) -> Json:
    """The tool_choice object for "auto", "required", "none" or a tool's name."""
    return dict(_TOOL_CHOICES.get(choice) or {"type": "tool", "name": choice})


def messages(request: ModelRequest) -> list[Json]:
    """The history as strictly alternating messages (same-role turns merged)."""
    merged: list[Json] = []
    for role, blocks in _turn_blocks(request):
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    return merged


def _turn_blocks(request: ModelRequest) -> Iterator[tuple[str, list[Json]]]:
    """Each expanded turn's role and content blocks."""
    for turn in expand(request.messages, PROVIDER):
        match turn:
            case UserTurn(text=text, images=images):
                yield "user", [*_text_blocks(text), *(image_block(image) for image in images)]
            case ModelTurn():
                yield "assistant", _model_blocks(turn)
            case ResultsTurn(results=results):
                yield "user", [_tool_result(result) for result in results]


def _text_blocks(text: str) -> list[Json]:
    """A text block, or none for empty text (the API rejects empty text blocks)."""
    return [{"type": "text", "text": text}] if text else []


def image_block(image: ImagePart) -> Json:
    """An `image` block: a `base64` source for bytes, a `url` source for a URL."""
    if image.url is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    source = {"type": "base64", "media_type": image.media_type, "data": b64(image)}
    return {"type": "image", "source": source}


def _model_blocks(turn: ModelTurn) -> list[Json]:
    """One response's blocks: reasoning, text, then its tool calls."""
    return [
        *(_reasoning(block) for block in turn.reasoning),
        *_text_blocks(turn.text),
        *(_tool_use(call) for call in turn.calls),
    ]


def _reasoning(block: Reasoning) -> Json:
    """A thinking block as the API sent it (it checks the signature)."""
    if block.redacted is not None:
        return {"type": "redacted_thinking", "data": block.redacted}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature or ""}


def _tool_use(call: ToolCall) -> Json:
    """A tool_use block; arguments that are not a JSON object go as `{}`.

    The core keeps such a call in the history, answered by an error result that
    says what was wrong, and the API accepts only an object as `input`.
    """
    arguments = arguments_object(call.arguments) or {}
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


def _tool_result(result: ToolResult) -> Json:
    """A tool_result block; `is_error` only when the result failed."""
    content: str | list[Json] = result.content
    if result.images:  # then a list of blocks: the text, then the images
        content = [*_text_blocks(result.content), *(image_block(i) for i in result.images)]
    block: Json = {"type": "tool_result", "tool_use_id": result.call_id, "content": content}
    if result.is_error:
        block["is_error"] = True
    return block


# Decoding ------------------------------------------------------------------


class AnthropicStreamDecoder(SSEJsonDecoder):
    """Decodes one Messages event stream into core model events."""

    def __init__(self) -> None:
        """Nothing seen yet."""
        super().__init__()
        self._unsigned: dict[int, str] = {}
        self._counters: dict[str, int] = {}
        self._stop_reason: str | None = None

    def decode_message(self, body: bytes) -> list[ModelEvent]:
        """The events of a whole (non-streamed) message body."""
        events = self._guard(lambda: self._replay(body))
        return events + self.close()

    def _kind(self, frame: SSEEvent, payload: Json) -> str:
        """Which event a frame is: an `event: error` is one whatever its JSON says."""
        return "error" if frame.event == "error" else str(payload.get("type", frame.event))

    def _on_payload(self, kind: str, payload: Json) -> list[ModelEvent]:
        """Events of one decoded stream event; unknown ones (and `ping`) give none."""
        match kind:
            case "message_start":
                self._count(as_dict(payload.get("message")).get("usage"))
                return []
            case "content_block_start":
                return self._block_start(int(payload["index"]), payload["content_block"])
            case "content_block_delta":
                return self._block_delta(int(payload["index"]), payload["delta"])
            case "content_block_stop":
                return self._block_stop(int(payload["index"]))
            case "message_delta":
                stop_reason = as_dict(payload.get("delta")).get("stop_reason")
                self._stop_reason = str(stop_reason) if stop_reason else self._stop_reason
                self._count(payload.get("usage"))
                return []
            case "message_stop":
                return [self._respond(self._stop_reason or "unknown", self._usage())]
            case "error":
                return [self._stream_error(as_dict(payload.get("error")))]
            case _:
                return []

    def _block_start(self, index: int, block: Json) -> list[ModelEvent]:
        """A content block opened: a call's id and name, or text it already holds."""
        match block.get("type"):
            case "tool_use":
                name = str(block.get("name", ""))
                return [ToolCallStarted(index=index, call_id=str(block.get("id", "")), name=name)]
            case "text":
                return _some(block.get("text"), lambda text: TextDelta(text=text))
            case "thinking":
                self._unsigned[index] = str(block.get("signature") or "")
                return _some(
                    block.get("thinking"), lambda text: ReasoningDelta(provider=PROVIDER, text=text)
                )
            case "redacted_thinking":
                return [ReasoningDelta(provider=PROVIDER, redacted=str(block.get("data", "")))]
            case _:
                return []

    def _block_delta(self, index: int, delta: Json) -> list[ModelEvent]:
        """A piece of a block (empty pieces give nothing)."""
        match delta.get("type"):
            case "text_delta":
                return _some(delta.get("text"), lambda text: TextDelta(text=text))
            case "thinking_delta":
                return _some(
                    delta.get("thinking"), lambda text: ReasoningDelta(provider=PROVIDER, text=text)
                )
            case "signature_delta":
                self._unsigned.pop(index, None)
                return [
                    ReasoningDelta(provider=PROVIDER, signature=str(delta.get("signature", "")))
                ]
            case "input_json_delta":
                fragment = delta.get("partial_json")
                return _some(fragment, lambda f: ToolCallArgumentsDelta(index=index, fragment=f))
            case _:
                return []

    def _block_stop(self, index: int) -> list[ModelEvent]:
        """A block ended; a thinking block that got no signature is closed anyway.

        Otherwise the next thinking block would be appended to it.
        """
        if index not in self._unsigned:
            return []
        return [ReasoningDelta(provider=PROVIDER, signature=self._unsigned.pop(index))]

    def _count(self, usage: Any) -> None:
        """Take the latest value of each counter (message_delta's are cumulative)."""
        for name, value in as_dict(usage).items():
            if isinstance(value, int) and not isinstance(value, bool):
                self._counters[name] = value

    def _usage(self) -> Usage:
        """The call's usage: every input token (uncached, read from and written to the cache).

        The API's `input_tokens` counts only the tokens after the last cache breakpoint;
        cache reads and writes are counted apart (prompt caching docs, "Tracking cache
        performance"), so the three are summed as OpenAI and Gemini report input.
        """
        counters = self._counters
        read = counters.get("cache_read_input_tokens", 0)
        written = counters.get("cache_creation_input_tokens", 0)
        return Usage(
            input_tokens=counters.get("input_tokens", 0) + read + written,
            output_tokens=counters.get("output_tokens", 0),
            cache_read_tokens=read,
            cache_write_tokens=written,
        )

    def _stream_error(self, error: Json) -> ModelCallFailed:
        """An `error` event inside a 200 stream (e.g. overloaded_error)."""
        kind = str(error.get("type", "error"))
        return self._fail(_error_message(error, None), retryable=kind in RETRYABLE_ERRORS)

    def _replay(self, body: bytes) -> list[ModelEvent]:
        """A whole message decoded as the stream that would have carried it."""
        match parse_json(body):
            case Success(dict() as message):
                pass
            case Success(_):
                return [self._fail("malformed response body: not a JSON object")]
            case Failure(why):
                return [self._fail(f"malformed response body: {why}")]
        if message.get("type") == "error":
            return [self._stream_error(as_dict(message.get("error")))]
        if not isinstance(message.get("content"), list):
            return [self._fail("malformed response body: no content list")]
        events: list[ModelEvent] = []
        for kind, payload in _as_stream(message):
            events += self._on_payload(kind, payload)
        return events


def _as_stream(message: Json) -> Iterable[tuple[str, Json]]:
    """The stream events a whole message would have been sent as."""
    yield "message_start", {"message": {"usage": message.get("usage")}}
    for index, block in enumerate(message["content"]):
        start, deltas = _block_as_stream(block)
        yield "content_block_start", {"index": index, "content_block": start}
        for delta in deltas:
            yield "content_block_delta", {"index": index, "delta": delta}
        yield "content_block_stop", {"index": index}
    yield "message_delta", {"delta": {"stop_reason": message.get("stop_reason")}}
    yield "message_stop", {}


def _block_as_stream(block: Json) -> tuple[Json, list[Json]]:
    """A whole content block as its start event's block and its deltas.

    Blocks whole in their start event (redacted_thinking) or unknown pass as they are.
    """
    match block.get("type"):
        case "text":
            return {"type": "text"}, [{"type": "text_delta", "text": block.get("text")}]
        case "thinking":
            return {"type": "thinking"}, [
                {"type": "thinking_delta", "thinking": block.get("thinking")},
                {"type": "signature_delta", "signature": block.get("signature", "")},
            ]
        case "tool_use":
            arguments = json.dumps(block.get("input", {}))
            start = {"type": "tool_use", "id": block.get("id"), "name": block.get("name")}
            return start, [{"type": "input_json_delta", "partial_json": arguments}]
        case _:
            return block, []


def _some(value: Any, event: Callable[[str], ModelEvent]) -> list[ModelEvent]:
    """`[event(value)]` for a non-empty string, else nothing."""
    return [event(value)] if isinstance(value, str) and value else []


def _error_body(body: bytes) -> tuple[Json, str | None] | None:
    """The `error` object of an Anthropic error body and its request id, if the body is one."""
    parsed = parse_json(body).value_or(None)
    match parsed:
        case {"error": dict() as error, "request_id": str() as request_id}:
            return error, request_id
        case {"error": dict() as error}:
            return error, None
        case _:
            return None


def _error_message(error: Json, request_id: str | None) -> str:
    """`<type>: <message>`, with the request id when known."""
    text = f"{error.get('type', 'error')}: {error.get('message', '(no message)')}"
    return f"{text} (request_id {request_id})" if request_id else text
