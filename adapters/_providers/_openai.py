"""The OpenAI chat.completions codec: api.openai.com and every server speaking its wire format.

Ollama's /v1, LM Studio, vLLM, llama.cpp server, OpenRouter, DeepSeek, and the
OpenAI-compatible endpoints of Gemini and Anthropic all take this body and
stream these chunks. Request: system prompt first, one assistant message per
response (text, or null, plus `tool_calls` whose arguments are JSON *text*),
one `role: "tool"` message per result. A user message with images has a
content list: a `text` part, then one `image_url` part (a `data:` URL or the http
URL) per image; tool messages take text only, so a round's result images follow
its tool messages in one user message (adapters/_providers/_images.py).
Response: SSE `data:` chunks ending with `data: [DONE]`, or one
`chat.completion` object.

Rules, each learnt from recorded traffic (tests/conformance/test_openai.py):

1. A call's id and name come on its first delta only; later deltas carry the
   `index` and argument fragments. The first index may be 1 (Anthropic's
   compat endpoint); ids may be "" (Gemini) or "0" (OpenRouter/Novita), so
   the core makes missing ids unique. A repeated id/name is not a new call.
2. `finish_reason` arrives on a chunk of its own; usage on a later chunk whose
   `choices` is [] (with `stream_options.include_usage`). Some servers never
   send a finish reason (OpenRouter/Novita): it is then "tool_calls" when the
   response had calls, else "stop". Some omit `[DONE]`: a stream that ends
   after a finish reason is complete.
3. Reasoning text arrives as `reasoning_content` (DeepSeek, vLLM) or
   `reasoning` (Ollama /v1, OpenRouter); it goes back only in the field the
   codec is told (`reasoning_field`), since api.openai.com rejects unknown
   message fields.
4. An `{"error": {...}}` payload may arrive inside a 200 stream; its type or
   code decides whether asking again can help.
5. Unknown fields (`obfuscation`, `provider`, `native_finish_reason`,
   Gemini's `extra_content`/`thought_signature`) are ignored.
6. A response without a usable choice (choice 0) is a failure, streamed or
   not: `NO_CHOICE`, retryable. A 200 without an answer is the server's
   fault (a router whose upstream failed), not the request's, so asking again
   may help, and the retry policy bounds the cost. Chunks with `choices: []`
   are fine *after* a choice (the usage chunk of rule 2), and before one
   (Azure's prompt-filter chunk).
7. A choice whose `message` (a chunk's `delta`) is no object, or whose
   `tool_calls` is no array of objects, is malformed: a retryable failure, as
   for rule 6. Read leniently, a response that says `tool_calls` would end the
   turn as an empty answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, assert_never

import attrs
from returns.result import Failure, Success

from toolreel.core import (
    ChatMessage,
    ImagePart,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    ReasoningDelta,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolResult,
    ToolRound,
    Usage,
)
from toolreel.core.record import Value

from .._memo import IdentityMemo
from ._codec import GuardedDecoder, parse_json
from ._expand import ModelTurn, ResultsTurn, Turn, UserTurn, expand
from ._failures import body_text, http_failure, status_retryable, too_long
from ._framing import SSEEvent, SSEParser
from ._images import data_url, result_note
from ._json import (
    MALFORMED,
    arguments_text,
    as_count,
    as_dict,
    as_str,
    bearer_headers,
    count,
    dicts,
    fatal,
    guarded_body,
    malformed,
    not_object,
    not_objects,
    tool_json,
)
from ._openai_errors import (
    QUOTA_KINDS,
    error_kinds,
    error_message,
    error_object,
    payload_retryable,
)
from ._recovery import ToolCallRecovery

#: The provider this codec speaks for: what the reasoning it decodes is stamped with
#: (`ReasoningDelta.provider`), and the only reasoning it sends back (with unknown).
PROVIDER = "openai"


#: A 200 response that carried no choice to answer with (rule 6).
NO_CHOICE = "response has no choices"

#: What an assistant turn of tool calls without text sends as content (`OpenAICodec`).
NullContent = Literal["auto", "null", "empty"]
NULL_CONTENT: tuple[NullContent, ...] = ("auto", "null", "empty")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class OpenAICodec(Value):
    """chat.completions; `base_url` is the `.../v1` the official SDK uses.

    `reasoning_field` names the assistant-message field that carries reasoning
    text back ("reasoning" for Ollama /v1 and OpenRouter, "reasoning_content"
    for DeepSeek and vLLM); None sends none (api.openai.com rejects the field).
    `max_tokens_field` is "max_completion_tokens" for OpenAI's reasoning models
    (o-series, gpt-5), which reject `max_tokens`. `stream_usage` asks for the
    usage chunk (`stream_options`), which a few older servers reject.
    `tool_call_recovery` turns calls a model wrote as text into calls (_recovery.py).
    `images` False says the model is text-only: a request with images is refused
    (adapters/_providers/_images.py), never sent without them. `null_content`
    is what an assistant turn of tool calls without text sends as `content`:
    "null" (as OpenAI documents), "empty" ("", for servers that refuse null,
    such as llama-cpp-python's), or "auto" (null until a server refuses it, then
    "": adapters/_providers/_null_content.py).
    """

    name: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)

    reasoning_field: str | None = None
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    stream_usage: bool = True
    tool_call_recovery: ToolCallRecovery | None = None
    images: bool = True
    null_content: NullContent = attrs.field(
        default="auto", validator=attrs.validators.in_(NULL_CONTENT)
    )
    image_urls: ClassVar[bool] = True
    _rounds: IdentityMemo[ToolRound, list[dict[str, Any]]] = attrs.field(
        factory=IdentityMemo, init=False, eq=False, repr=False
    )

    def endpoint(self, base_url: str, request: ModelRequest, *, stream: bool) -> str:
        """`{base_url}/chat/completions`, streamed or not."""
        return f"{base_url.rstrip('/')}/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON, with a bearer token when there is a key (local servers need none)."""
        return bearer_headers(api_key)

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The chat.completions body for `request`."""
        body: dict[str, Any] = {"model": request.model, "messages": self.messages(request)}
        if request.tools:
            body["tools"] = [tool_json(spec) for spec in request.tools]
            body["tool_choice"] = tool_choice_json(request.tool_choice)
        if request.max_tokens is not None:
            body[self.max_tokens_field] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.cache_key is not None:  # routes the session's requests to one prompt cache
            body["prompt_cache_key"] = request.cache_key
        body["stream"] = stream
        if stream and self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    def messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        """The system prompt, then the history's turns as chat messages."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for message in request.messages:
            # Each stored round is encoded once per session (IdentityMemo).
            for tool_round in message.tool_rounds:
                messages.extend(self._rounds.get(tool_round, self._round))
            rest = attrs.evolve(message, tool_rounds=()) if message.tool_rounds else message
            messages.extend(self._turns(expand((rest,), PROVIDER)))
        return messages

    def _round(self, tool_round: ToolRound) -> list[dict[str, Any]]:
        """One stored round as chat messages."""
        message = ChatMessage(role="assistant", content="", tool_rounds=(tool_round,))
        return self._turns(expand((message,), PROVIDER))

    def _turns(self, turns: Iterable[Turn]) -> list[dict[str, Any]]:
        """Expanded turns as chat messages."""
        messages: list[dict[str, Any]] = []
        for turn in turns:
            if isinstance(turn, UserTurn):
                messages.append({"role": "user", "content": user_content(turn)})
            elif isinstance(turn, ModelTurn):
                messages.extend(self._assistant(turn))
            elif isinstance(turn, ResultsTurn):
                messages.extend(
                    {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
                    for result in turn.results
                )
                messages.extend(result_images(turn.results))
            else:
                assert_never(turn)
        return messages

    def _assistant(self, turn: ModelTurn) -> list[dict[str, Any]]:
        """One response as one assistant message (none when it has nothing to send)."""
        reasoning = "".join(block.text for block in turn.reasoning if block.redacted is None)
        sent_reasoning = reasoning if self.reasoning_field else ""
        if not (turn.text or turn.calls or sent_reasoning):
            return []
        nothing = None if turn.calls and self.null_content != "empty" else ""
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or nothing}
        if self.reasoning_field and sent_reasoning:
            message[self.reasoning_field] = sent_reasoning
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in turn.calls
            ]
        return [message]

    def stream_decoder(self) -> OpenAIStreamDecoder:
        """A fresh SSE decoder."""
        return OpenAIStreamDecoder()

    def decode_body(self, body: bytes) -> list[ModelEvent]:
        """The events of one `chat.completion` object; never raises."""
        return guarded_body(body, _completion_events)

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelCallFailed:
        """`{"error": {message, type, param, code}}` -> failure; a 429 out of quota is fatal."""
        error = error_object(body)
        if error is None:
            return http_failure(status, body_text(body) or "(empty body)", headers)
        retryable = status_retryable(status) and not QUOTA_KINDS & set(error_kinds(error))
        return http_failure(status, error_message(error), headers, retryable=retryable)


def user_content(turn: UserTurn) -> str | list[dict[str, Any]]:
    """A user message's content: its text, or text and `image_url` parts when it has images."""
    if not turn.images:
        return turn.text
    parts = [{"type": "text", "text": turn.text}] if turn.text else []
    return parts + [_image_url(image) for image in turn.images]


def _image_url(image: ImagePart) -> dict[str, Any]:
    """An `image_url` part: a `data:` URL of the bytes, or the image's http URL."""
    return {"type": "image_url", "image_url": {"url": data_url(image)}}


def result_images(results: Iterable[ToolResult]) -> list[dict[str, Any]]:
    """The results' images as one user message after the tool messages (which take only text).

    Each result's images follow a line naming its call; none when no result has images.
    """
    parts: list[dict[str, Any]] = []
    for result in results:
        if result.images:
            parts.append({"type": "text", "text": result_note(result)})
            parts += [_image_url(image) for image in result.images]
    return [{"role": "user", "content": parts}] if parts else []


def tool_choice_json(choice: str) -> str | dict[str, Any]:
    """ "auto"/"none"/"required" as-is; a tool's name forces that tool."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


class OpenAIStreamDecoder(GuardedDecoder):
    """Decodes a chat.completions SSE stream (rules 1-5 of the module docstring)."""

    def __init__(self) -> None:
        """No chunk seen yet."""
        super().__init__()
        self._sse = SSEParser()
        self._finish: str | None = None
        self._usage = Usage()
        self._started: dict[int, tuple[str, str]] = {}
        self._next_index = 0
        self._last_index = 0
        self._chose = False

    def _frames(self, chunk: bytes) -> list[Any]:
        """Complete server-sent events."""
        return list(self._sse.feed(chunk))

    def _flush_frames(self) -> list[Any]:
        """Events left at the end (an unterminated one is dropped)."""
        return list(self._sse.flush())

    def _on_frame(self, frame: SSEEvent) -> list[ModelEvent]:
        """`[DONE]` ends the response; anything else must be a JSON chunk."""
        data = frame.data.strip()
        if data == "[DONE]":
            if not self._chose:
                return [self._fail(NO_CHOICE, retryable=True)]
            return [self._respond(self._finish_reason(), self._usage)]
        match parse_json(data):
            case Success(chunk) if isinstance(chunk, dict):
                if frame.event == "error" and "error" not in chunk:
                    chunk = {"error": chunk}
                return self._on_chunk(chunk)
            case Success(_):
                return [self._fail(f"malformed stream chunk: not a JSON object: {data[:200]}")]
            case Failure(why):
                return [self._fail(f"malformed stream chunk: {why}")]
        return []  # pragma: no cover - a Result is a Success or a Failure

    def _on_end(self) -> list[ModelEvent]:
        """A stream that ended after its finish reason is complete (some servers omit [DONE])."""
        if self._finish is None:
            return []
        return [self._respond(self._finish, self._usage)]

    def _on_chunk(self, chunk: dict[str, Any]) -> list[ModelEvent]:
        """One `chat.completion.chunk` (or an error payload)."""
        error = chunk.get("error")
        if error:
            error = error if isinstance(error, dict) else {"message": str(error)}
            return [self._fail(error_message(error), retryable=payload_retryable(error))]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = openai_usage(usage)
        events: list[ModelEvent] = []
        for choice in dicts(chunk.get("choices")):
            if choice.get("index", 0) != 0:
                continue  # n > 1 is not supported: only the first choice is the answer
            self._chose = True
            why = _malformed_message(choice.get("delta"), "delta")
            if why is not None:
                return [self._fail(MALFORMED + why, retryable=True)]
            events += self._on_delta(as_dict(choice.get("delta")))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self._finish = reason
        return events

    def _on_delta(self, delta: dict[str, Any]) -> list[ModelEvent]:
        """Reasoning, text, then tool-call pieces of one delta."""
        events = _text_events(delta)
        for call in dicts(delta.get("tool_calls")):
            events += self._on_call_delta(call)
        return events

    def _on_call_delta(self, call: dict[str, Any]) -> list[ModelEvent]:
        """A call's start (once, when its id or name shows) and its argument fragment."""
        function = as_dict(call.get("function"))
        call_id, name = as_str(call.get("id")), as_str(function.get("name"))
        index = self._index_of(call, call_id, starts=bool(call_id or name))
        events: list[ModelEvent] = []
        if (call_id or name) and self._adds(index, call_id, name):
            events.append(ToolCallStarted(index=index, call_id=call_id, name=name))
        fragment = arguments_text(function.get("arguments"))
        if fragment:
            events.append(ToolCallArgumentsDelta(index=index, fragment=fragment))
        return events

    def _index_of(self, call: dict[str, Any], call_id: str, *, starts: bool) -> int:
        """The call's `index`; without one, a new call's next index or the last call's."""
        index = as_count(call.get("index"))
        if index is None:
            known = [i for i, (seen, _) in self._started.items() if call_id and seen == call_id]
            index = known[0] if known else self._next_index if starts else self._last_index
        self._last_index = index
        self._next_index = max(self._next_index, index + 1)
        return index

    def _adds(self, index: int, call_id: str, name: str) -> bool:
        """Record the call's id and name; whether they tell the core anything new."""
        old_id, old_name = self._started.get(index, ("", ""))
        new = (old_id or call_id, old_name or name)
        if index in self._started and new == (old_id, old_name):
            return False
        self._started[index] = new
        return True

    def _finish_reason(self) -> str:
        """The finish reason sent, or the one implied by the calls (rule 2)."""
        if self._finish is not None:
            return self._finish
        return "tool_calls" if self._next_index else "stop"


def _completion_events(data: Any) -> list[ModelEvent]:
    """The events of one parsed `chat.completion` object."""
    if not isinstance(data, dict):
        return [fatal("response body is not a JSON object")]
    error = data.get("error")
    if error:
        error = error if isinstance(error, dict) else {"message": str(error)}
        retryable, said = payload_retryable(error), error_message(error)
        failed = ModelCallFailed(
            retryable=retryable, message=said, context_too_long=not retryable and too_long(said)
        )
        return [failed]
    choices = dicts(data.get("choices"))
    if not choices:
        return [ModelCallFailed(retryable=True, message=NO_CHOICE)]
    choice = choices[0]
    why = _malformed_message(choice.get("message"), "message")
    if why is not None:
        return [malformed(why)]
    message = as_dict(choice.get("message"))
    events = _text_events(message)
    calls = dicts(message.get("tool_calls"))
    for index, call in enumerate(calls):
        function = as_dict(call.get("function"))
        events.append(
            ToolCallStarted(
                index=index, call_id=as_str(call.get("id")), name=as_str(function.get("name"))
            )
        )
        fragment = arguments_text(function.get("arguments"))
        if fragment:
            events.append(ToolCallArgumentsDelta(index=index, fragment=fragment))
    reason = choice.get("finish_reason")
    if not isinstance(reason, str) or not reason:
        reason = "tool_calls" if calls else "stop"
    usage = data.get("usage")
    events.append(
        ModelResponded(
            finish_reason=reason,
            usage=openai_usage(usage) if isinstance(usage, dict) else Usage(),
        )
    )
    return events


def _malformed_message(message: Any, name: str) -> str | None:
    """Why a choice's `message` (or a chunk's `delta`) is not the format's (rule 7), or None."""
    return not_object(message, name) or not_objects(
        as_dict(message).get("tool_calls"), "tool_calls"
    )


def _text_events(message: Mapping[str, Any]) -> list[ModelEvent]:
    """The reasoning, then the text, of a message or a streamed delta (both have one shape)."""
    events: list[ModelEvent] = []
    reasoning = reasoning_text(message)
    if reasoning:
        events.append(ReasoningDelta(provider=PROVIDER, text=reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        events.append(TextDelta(text=content))
    return events


def openai_usage(data: Mapping[str, Any], sent: str = "prompt", made: str = "completion") -> Usage:
    """`<sent>_tokens`/`<made>_tokens` (Responses: input/output), cache reads, reasoning.

    `<sent>_tokens_details.cached_tokens` are input tokens read from the prompt cache
    (counted inside `<sent>_tokens`), or DeepSeek's `prompt_cache_hit_tokens`; reasoning
    tokens stay an extra.
    """
    details = as_dict(data.get(f"{sent}_tokens_details"))
    cached = count(details.get("cached_tokens")) or count(data.get("prompt_cache_hit_tokens"))
    reasoning = count(as_dict(data.get(f"{made}_tokens_details")).get("reasoning_tokens"))
    return Usage(
        input_tokens=count(data.get(f"{sent}_tokens")),
        output_tokens=count(data.get(f"{made}_tokens")),
        extra=(("reasoning_tokens", reasoning),) if reasoning else (),
        cache_read_tokens=cached,
    )


def reasoning_text(message: Mapping[str, Any]) -> str:
    """`reasoning_content` (DeepSeek, vLLM) or else `reasoning` (Ollama /v1, OpenRouter)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
