"""The OpenAI Responses API codec (`POST /v1/responses`), streamed or whole.

Encoding (https://platform.openai.com/docs/api-reference/responses/create):
1. Stateless: the whole history goes as `input` items on every call and `store`
   is false, so replay, retries and a switch to another provider keep working
   (no `previous_response_id`). The system prompt is `instructions`.
2. A user turn is `{"role": "user", "content": text}`; a model turn is its
   reasoning items, an assistant message for its text, then one `function_call`
   item per call (`call_id`, `name`, `arguments` as the model's JSON text; the
   item's own `fc_` id is not sent, as with `store: false` it names nothing);
   a results turn is one `function_call_output` per call, in call order.
   Images (adapters/_providers/_images.py): a user turn with images has a content
   list, `input_text` then one `input_image` (`image_url`: a `data:` URL or the
   http URL, `detail: "auto"`) per image; a result with images has such a list
   as its `output`.
3. Reasoning items go back as the model sent them. The compact record keeps a
   reasoning item as a core `Reasoning` block: its summary text in `text`, and
   the item without its summary (`{"type": "reasoning", "id": ..,
   "encrypted_content": ..}`, compact JSON) in `signature`, the slot that
   carries Anthropic's and Gemini's signatures. A block whose signature is not
   such an item (another provider's) is not sent. With `store: false` the API
   can only read back an item that has `encrypted_content`, which it sends when
   asked (`include: ["reasoning.encrypted_content"]`); that is asked for reasoning
   models only (`encrypted_reasoning`), since older models reject it.
4. Tools are flat `{"type": "function", "name", "description", "parameters"}`;
   a forced tool is `{"type": "function", "name": ...}`.

Decoding: named server-sent events, each a JSON object whose `type` names it.
5. Items are keyed by `output_index`. `response.output_item.added` opens a
   function call (id = `call_id`, its index the order calls came in); argument
   and text pieces come as `*.delta`; `*.done` and `response.output_item.done`
   carry the whole value, and only what the deltas did not already give is sent
   (a server that skips deltas loses nothing).
6. Reasoning summary (and raw reasoning) text streams as reasoning deltas, parts
   joined by a blank line; the item's `output_item.done` closes the block with
   its signature (rule 3).
7. `response.completed` ends the response (finish reason "tool_calls" when it
   made calls, else "stop"); `response.incomplete` ends it with the reason
   (`max_output_tokens`, `content_filter`). Usage: `input_tokens`,
   `output_tokens`, and nonzero `cached_tokens` and `reasoning_tokens` as extras.
8. `error` and `response.failed` inside a 200 stream are failures; the error's
   code decides whether asking again can help (`server_error` can;
   `insufficient_quota` and a bad input such as `invalid_prompt` cannot).
9. Bad input: data that is not a JSON object is a fatal failure naming the
   event; unknown event types are ignored (the API adds new ones, e.g. for
   built-in tools); missing or ill-typed fields read as empty, but for those
   that carry the answer: an output item that is no object, or a message's
   `content` that is no array of objects, is malformed, a retryable failure
   (read as empty, a call or the text would be lost without a word). A call's
   `arguments` sent as an object (not JSON text) are taken as its JSON. A stream
   that ends before its terminal event is a retryable truncation (the base class).
A whole response body is replayed as the stream events it stands for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
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
)
from toolreel.core.record import Record, Value

from ._codec import SSEJsonDecoder, parse_json
from ._expand import ModelTurn, ResultsTurn, UserTurn, expand
from ._failures import body_text, http_failure, status_retryable
from ._framing import SSEEvent
from ._images import data_url
from ._json import (
    MALFORMED,
    arguments_text,
    as_dict,
    as_str,
    bearer_headers,
    count,
    dicts,
    not_object,
    not_objects,
)
from ._openai import openai_usage
from ._openai_errors import QUOTA_KINDS, error_kinds, error_message, payload_retryable

#: The provider this codec speaks for: what the reasoning it decodes is stamped with
#: (`ReasoningDelta.provider`), and the only reasoning it sends back (with unknown).
PROVIDER = "openai-responses"


Json = dict[str, Any]

#: Model families that reject `include: ["reasoning.encrypted_content"]` (not reasoning models).
NON_REASONING_PREFIXES = ("gpt-4", "gpt-3", "chatgpt-")

#: What asks the API for reasoning items it can read back without storing them.
INCLUDE_ENCRYPTED = "reasoning.encrypted_content"

#: Codes of a failed response that name a bad input (the request, not the server).
BAD_INPUT_PREFIXES = ("invalid_", "unsupported_", "empty_")

#: Separates two parts of one reasoning summary in the block's text.
PART_BREAK = "\n\n"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResponsesCodec(Value):
    """The Responses API wire format; `base_url` is the `.../v1` the official SDK uses.

    `store` keeps responses on OpenAI's side (off: toolreel sends the whole
    history anyway). `encrypted_reasoning` asks for reasoning items that can be
    sent back (None: for every model but the gpt-4/gpt-3.5 families).
    `reasoning_effort` ("minimal", "low", "medium", "high") and
    `reasoning_summary` ("auto", "concise", "detailed") go in `reasoning`.
    """

    name: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)

    store: bool = False
    encrypted_reasoning: bool | None = None
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None
    #: False says the model is text-only: a request with images is refused (_images.py).
    images: bool = True
    image_urls: ClassVar[bool] = True

    def endpoint(self, base_url: str, request: ModelRequest, *, stream: bool) -> str:
        """`{base_url}/responses`, streamed or not."""
        return f"{base_url.rstrip('/')}/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON, with a bearer token when there is a key."""
        return bearer_headers(api_key)

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The Responses request body (rules 1-4)."""
        body: Json = {"model": request.model, "input": input_items(request, store=self.store)}
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = [tool_json(spec) for spec in request.tools]
            body["tool_choice"] = tool_choice_json(request.tool_choice)
        if request.max_tokens is not None:
            body["max_output_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.cache_key is not None:  # routes the session's requests to one prompt cache
            body["prompt_cache_key"] = request.cache_key
        reasoning = self._reasoning()
        if reasoning:
            body["reasoning"] = reasoning
        body["store"] = self.store
        if not self.store and self._asks_encrypted(request.model):
            body["include"] = [INCLUDE_ENCRYPTED]
        body["stream"] = stream
        return body

    def _reasoning(self) -> Json:
        """The `reasoning` settings given (none: the model's defaults)."""
        reasoning: Json = {}
        if self.reasoning_effort is not None:
            reasoning["effort"] = self.reasoning_effort
        if self.reasoning_summary is not None:
            reasoning["summary"] = self.reasoning_summary
        return reasoning

    def _asks_encrypted(self, model: str) -> bool:
        """Whether to ask for encrypted reasoning (rule 3)."""
        if self.encrypted_reasoning is not None:
            return self.encrypted_reasoning
        return not model.removeprefix("ft:").startswith(NON_REASONING_PREFIXES)

    def stream_decoder(self) -> ResponsesStreamDecoder:
        """A fresh decoder for one event stream."""
        return ResponsesStreamDecoder()

    def decode_body(self, body: bytes) -> list[ModelEvent]:
        """The events of one whole `response` object (or the failure it stands for)."""
        return ResponsesStreamDecoder().decode_response(body)

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelCallFailed:
        """`{"error": {message, type, param, code}}` -> failure; a 429 out of quota is fatal."""
        error = as_dict(parse_json(body).value_or(None))
        if not isinstance(error.get("error"), dict):
            return http_failure(status, body_text(body) or "(empty body)", headers)
        error = error["error"]
        retryable = status_retryable(status) and not QUOTA_KINDS & set(error_kinds(error))
        return http_failure(status, error_message(error), headers, retryable=retryable)


# Encoding ------------------------------------------------------------------


def tool_json(spec: ToolSpec) -> Json:
    """A function tool (flat, unlike chat.completions'); its schema as a JSON object."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": json.loads(spec.parameters),
    }


def tool_choice_json(choice: str) -> str | Json:
    """ "auto"/"none"/"required" as they are; a tool's name forces that tool."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def input_items(request: ModelRequest, *, store: bool = False) -> list[Json]:
    """The history as `input` items (rule 2)."""
    items: list[Json] = []
    for turn in expand(request.messages, PROVIDER):
        match turn:
            case UserTurn(text=text, images=images):
                content = _with_images(text, images) if images else text
                items.append({"role": "user", "content": content})
            case ModelTurn():
                items += _model_items(turn, store=store)
            case ResultsTurn(results=results):
                items += [
                    {"type": "function_call_output", "call_id": r.call_id, "output": _output(r)}
                    for r in results
                ]
    return items


def _with_images(text: str, images: tuple[ImagePart, ...]) -> list[Json]:
    """`input_text` (if any text), then one `input_image` per image."""
    parts: list[Json] = [{"type": "input_text", "text": text}] if text else []
    return parts + [
        {"type": "input_image", "image_url": data_url(image), "detail": "auto"} for image in images
    ]


def _output(result: ToolResult) -> str | list[Json]:
    """A result's `output`: its text, or a list of its text and images when it has images."""
    return _with_images(result.content, result.images) if result.images else result.content


def _model_items(turn: ModelTurn, *, store: bool) -> list[Json]:
    """One response: its reasoning items, its text, then its calls."""
    items = [item for block in turn.reasoning if (item := reasoning_item(block, store=store))]
    if turn.text:
        items.append({"role": "assistant", "content": turn.text})
    items += [_call_item(call) for call in turn.calls]
    return items


def _call_item(call: ToolCall) -> Json:
    """A `function_call` item; the arguments are the model's own JSON text."""
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
    }


def reasoning_signature(item: Mapping[str, Any]) -> str:
    """A reasoning item without its summary, as the opaque signature of its block (rule 3)."""
    kept: Json = {"type": "reasoning", "id": as_str(item.get("id"))}
    encrypted = item.get("encrypted_content")
    if isinstance(encrypted, str) and encrypted:
        kept["encrypted_content"] = encrypted
    return json.dumps(kept, separators=(",", ":"))


def reasoning_item(block: Reasoning, *, store: bool = False) -> Json | None:
    """The reasoning item a block came from, or None when it cannot go back.

    Not one of ours (another provider's block), or, without `store`, one the
    API cannot read back (no `encrypted_content`).
    """
    item = as_dict(parse_json(block.signature or "").value_or(None))
    if item.get("type") != "reasoning" or not as_str(item.get("id")):
        return None
    if not store and "encrypted_content" not in item:
        return None
    parts = block.text.split(PART_BREAK) if block.text else []
    return {**item, "summary": [{"type": "summary_text", "text": part} for part in parts]}


# Decoding ------------------------------------------------------------------


@attrs.define(repr=False)
class _Item(Record):
    """What the decoder knows of one output item: its kind, and what it already sent."""

    kind: str
    call_index: int = -1
    started: bool = False
    sent: dict[int, str] = attrs.field(factory=dict)  # per content/summary part: text sent


class ResponsesStreamDecoder(SSEJsonDecoder):
    """Decodes one Responses event stream into core model events (rules 5-9)."""

    def __init__(self) -> None:
        """Nothing seen yet."""
        super().__init__()
        self._items: dict[int, _Item] = {}
        self._calls = 0

    def decode_response(self, body: bytes) -> list[ModelEvent]:
        """The events of a whole (non-streamed) response body."""
        events = self._guard(lambda: self._replay(body))
        return events + self.close()

    def _kind(self, frame: SSEEvent, payload: Json) -> str:
        """Which event a frame is: its JSON `type` (rule 9), else its `event:` name."""
        return as_str(payload.get("type")) or frame.event

    def _on_payload(self, kind: str, payload: Json) -> list[ModelEvent]:
        """Events of one decoded stream event; unknown kinds give none."""
        position = count(payload.get("output_index"))
        match kind:
            case "response.output_item.added" | "response.output_item.done" if (
                why := not_object(payload.get("item"), "item")
            ) is not None:
                return [self._fail(MALFORMED + why, retryable=True)]
            case "response.output_item.added":
                return self._item_added(position, as_dict(payload.get("item")))
            case "response.output_item.done":
                return self._item_done(position, as_dict(payload.get("item")))
            case "response.function_call_arguments.delta":
                return self._arguments(position, as_str(payload.get("delta")), whole=False)
            case "response.function_call_arguments.done":
                return self._arguments(position, as_str(payload.get("arguments")), whole=True)
            case "response.output_text.delta" | "response.refusal.delta":
                return self._text(position, payload, as_str(payload.get("delta")), whole=False)
            case "response.output_text.done":
                return self._text(position, payload, as_str(payload.get("text")), whole=True)
            case "response.refusal.done":
                return self._text(position, payload, as_str(payload.get("refusal")), whole=True)
            case "response.reasoning_summary_text.delta" | "response.reasoning_text.delta":
                return self._reasoning(position, payload, as_str(payload.get("delta")), False)
            case "response.reasoning_summary_text.done" | "response.reasoning_text.done":
                return self._reasoning(position, payload, as_str(payload.get("text")), True)
            case "response.completed" | "response.incomplete":
                return [self._finish(as_dict(payload.get("response")))]
            case "response.failed":
                return [self._failed(as_dict(as_dict(payload.get("response")).get("error")))]
            case "error":
                error = payload.get("error")
                return [self._failed(error if isinstance(error, dict) else _bare_error(payload))]
            case _:
                return []

    def _item(self, position: int, kind: str = "") -> _Item:
        """The item at `position` (made on first sight, e.g. a delta before its `added`)."""
        item = self._items.get(position)
        if item is None:
            item = self._items[position] = _Item(kind=kind)
        elif kind and not item.kind:
            item.kind = kind
        return item

    def _item_added(self, position: int, data: Json) -> list[ModelEvent]:
        """An output item opened: a function call starts; others wait for their pieces."""
        item = self._item(position, as_str(data.get("type")))
        if item.kind != "function_call":
            return []
        return self._call_start(item, data) + self._arguments(
            position, arguments_text(data.get("arguments")), whole=True
        )

    def _call_start(self, item: _Item, data: Json) -> list[ModelEvent]:
        """The call's start, once (its index: the order calls came in)."""
        if item.started:
            return []
        item.started = True
        if item.call_index < 0:
            item.call_index = self._calls
            self._calls += 1
        call_id, name = as_str(data.get("call_id")), as_str(data.get("name"))
        return [ToolCallStarted(index=item.call_index, call_id=call_id, name=name)]

    def _item_done(self, position: int, data: Json) -> list[ModelEvent]:
        """An output item is whole: send what its pieces did not (rule 5), close reasoning."""
        item = self._item(position, as_str(data.get("type")))
        match item.kind:
            case "function_call":
                events = self._call_start(item, data)
                arguments = arguments_text(data.get("arguments"))
                return events + self._arguments(position, arguments, whole=True)
            case "message":
                return self._message_rest(position, data)
            case "reasoning":
                return self._reasoning_rest(position, data)
            case _:
                return []

    def _message_rest(self, position: int, data: Json) -> list[ModelEvent]:
        """The text of a whole message item not yet sent."""
        if (why := not_objects(data.get("content"), "content")) is not None:
            return [self._fail(MALFORMED + why, retryable=True)]
        events: list[ModelEvent] = []
        for index, part in enumerate(dicts(data.get("content"))):
            text = as_str(part.get("text")) or as_str(part.get("refusal"))
            events += self._text(position, {"content_index": index}, text, whole=True)
        return events

    def _reasoning_rest(self, position: int, data: Json) -> list[ModelEvent]:
        """The summary text of a whole reasoning item not yet sent, then its signature."""
        events: list[ModelEvent] = []
        parts = dicts(data.get("summary")) or dicts(data.get("content"))
        for index, part in enumerate(parts):
            text = as_str(part.get("text"))
            events += self._reasoning(position, {"summary_index": index}, text, True)
        return [*events, ReasoningDelta(provider=PROVIDER, signature=reasoning_signature(data))]

    def _arguments(self, position: int, text: str, whole: bool) -> list[ModelEvent]:
        """An argument piece (or the whole text) of the call at `position`."""
        item = self._item(position, "function_call")
        if item.call_index < 0:
            item.call_index = self._calls
            self._calls += 1  # pieces before the call's start: the start fills in id and name
        fresh = _fresh(item.sent, 0, text, whole)
        return [ToolCallArgumentsDelta(index=item.call_index, fragment=fresh)] if fresh else []

    def _text(self, position: int, payload: Json, text: str, whole: bool) -> list[ModelEvent]:
        """A piece (or the whole) of a message's text part."""
        item = self._item(position, "message")
        fresh = _fresh(item.sent, count(payload.get("content_index")), text, whole)
        return [TextDelta(text=fresh)] if fresh else []

    def _reasoning(self, position: int, payload: Json, text: str, whole: bool) -> list[ModelEvent]:
        """A piece (or the whole) of a reasoning summary part; a new part starts with a break."""
        item = self._item(position, "reasoning")
        part = count(payload.get("summary_index", payload.get("content_index")))
        first = part not in item.sent and any(item.sent.values())
        fresh = _fresh(item.sent, part, text, whole)
        if fresh and first:
            fresh = PART_BREAK + fresh
        return [ReasoningDelta(provider=PROVIDER, text=fresh)] if fresh else []

    def _finish(self, response: Json) -> ModelEvent:
        """The terminal event of a completed or incomplete response (rule 7)."""
        if response.get("status") == "failed":
            return self._failed(as_dict(response.get("error")))
        reason = as_str(as_dict(response.get("incomplete_details")).get("reason"))
        if not reason:
            reason = "tool_calls" if self._calls else "stop"
        usage = openai_usage(as_dict(response.get("usage")), "input", "output")
        return self._respond(reason, usage)

    def _failed(self, error: Json) -> ModelCallFailed:
        """A failure sent inside a 200 response (rule 8)."""
        return self._fail(error_message(error), retryable=stream_error_retryable(error))

    def _replay(self, body: bytes) -> list[ModelEvent]:
        """A whole response decoded as the stream events that would have carried it."""
        match parse_json(body):
            case Success(dict() as response):
                pass
            case Success(_):
                return [self._fail("malformed response body: not a JSON object")]
            case Failure(why):
                return [self._fail(f"malformed response body: {why}")]
        if isinstance(response.get("error"), dict) and response.get("status") != "completed":
            return [self._failed(response["error"])]
        if not isinstance(response.get("output"), list):
            return [self._fail("malformed response body: no output list")]
        events: list[ModelEvent] = []
        for kind, payload in _as_stream(response):
            events += self._on_payload(kind, payload)
            if self.done:  # a malformed item ended it
                break
        return events


def _as_stream(response: Json) -> Iterator[tuple[str, Json]]:
    """The stream events a whole response stands for: each item added and done, then the end."""
    for position, item in enumerate(response["output"]):
        added = {**item, "arguments": ""} if isinstance(item, dict) else item
        yield "response.output_item.added", {"output_index": position, "item": added}
        yield "response.output_item.done", {"output_index": position, "item": item}
    yield "response.completed", {"response": response}


def stream_error_retryable(error: Mapping[str, Any]) -> bool:
    """Whether a failed response may pass on a retry.

    The Responses API's own codes for a bad input (`invalid_prompt`,
    `invalid_image_url`, `image_too_large`, ...) cannot; the shared OpenAI
    rules decide the rest (`server_error`, `rate_limit_exceeded`: yes;
    `insufficient_quota`: no).
    """
    code = as_str(error.get("code"))
    if code.startswith(BAD_INPUT_PREFIXES) or "image" in code:
        return False
    return payload_retryable(error)


def _bare_error(payload: Json) -> Json:
    """An `error` event that carries its fields at the top (the documented shape)."""
    return {key: payload[key] for key in ("message", "code", "param") if key in payload}


def _fresh(sent: dict[int, str], part: int, text: str, whole: bool) -> str:
    """What `text` adds to the part: a delta all of it, a whole value only what is new."""
    before = sent.get(part, "")
    fresh = text
    if whole:
        fresh = text[len(before) :] if text.startswith(before) else ""
    sent[part] = before + fresh
    return fresh
