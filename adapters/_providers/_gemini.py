"""The Google Gemini codec: `generateContent` and `streamGenerateContent` (SSE or JSON array).

Encoding (the choices, and the captures behind them):
- History comes from `expand()`. A user text is `{"role":"user","parts":[{"text":...}]}`;
  one model response is one `"model"` content: a text part (if any), then one
  `functionCall {name, args}` part per call, each carrying its `thoughtSignature`
  (Gemini 3 rejects a replayed call without it). Consecutive same-role contents merge.
- Reasoning: thought summaries (`thought: true` text) are not sent back; the API
  does not need them. A signature that came on a text part goes back on the text
  part (further ones on empty text parts, which the API accepts: llm-gemini's
  capture sends `{"text": ""}`).
- Results: one `"user"` content with a `functionResponse {name, response}` part per
  result, in call order; `response` is `{"output": text}` or `{"error": text}`, the
  keys the API reference names ("output"/"error"); the text is sent as is, as both
  captured clients do. No ids are sent: Gemini issues none and pairs by order.
- Images (adapters/_providers/_images.py): `inlineData {mimeType, data}` for bytes,
  `fileData {mimeType, fileUri}` for a URL, after the user's text; a result's images
  follow the results' `functionResponse` parts in the same user content.
- Tools: `parametersJsonSchema` (full JSON Schema), not `parameters` (an OpenAPI
  subset that rejects some JSON Schema keywords); pydantic-ai's Gemini 3 captures
  use it with `additionalProperties`. `tool_choice` "auto" is the default mode, so
  no `toolConfig` is sent (as both captured clients do).

Decoding: each frame is a `GenerateContentResponse`. Text parts give text, thought
parts reasoning, a `thoughtSignature` on a text part closes a reasoning block, and
each `functionCall` starts a call with its signature (no id: the core assigns one)
and its whole `args` (a `functionCall` that is no object is malformed: a retryable
failure, not a call dropped unseen). Vertex's streamed arguments (`partialArgs` with `jsonPath`,
then an empty `functionCall {}`) are assembled into one fragment. `finishReason`
is "STOP" even after calls. Usage is cumulative (the last report wins);
`thoughtsTokenCount` and `cachedContentTokenCount` become the extras
`reasoning_tokens` and `cached_tokens` (the OpenAI codec's names). The response
ends with the stream. Three framings, told apart by the first bytes: SSE
(`data:`), a streamed JSON array (`[{...}\\n,\\r\\n{...}\\n]`), or one JSON object.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, assert_never

from returns.result import Failure, Success

from toolreel.core import (
    ImagePart,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
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

from ._codec import GuardedDecoder, StreamDecoder, parse_json
from ._expand import ModelTurn, ResultsTurn, Turn, UserTurn, expand
from ._failures import body_text, duration, http_failure, status_retryable
from ._framing import SSEEvent, SSEParser
from ._images import b64
from ._json import MALFORMED, not_object

#: The provider this codec speaks for: what the reasoning it decodes is stamped with
#: (`ReasoningDelta.provider`), and the only reasoning it sends back (with unknown).
PROVIDER = "gemini"


Json = dict[str, Any]

_MODES = {"none": "NONE", "required": "ANY"}
_USAGE_EXTRA = (("thoughtsTokenCount", "reasoning_tokens"),)
#: HTTP statuses of google.rpc status names, for an error object without a numeric code.
_RPC_HTTP = {
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503,
    "INTERNAL": 500,
    "DEADLINE_EXCEEDED": 504,
}


class GeminiCodec:
    """Gemini API (`generativelanguage.googleapis.com`, v1beta) wire format."""

    name: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com"
    api_key_env: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    image_urls: ClassVar[bool] = True

    def __init__(self, *, images: bool = True) -> None:
        """`images` False says the model is text-only: a request with images is refused."""
        self.images = images

    def endpoint(self, base_url: str, request: ModelRequest, *, stream: bool) -> str:
        """`models/{model}:generateContent`, or `:streamGenerateContent?alt=sse`."""
        model = request.model if "/" in request.model else f"models/{request.model}"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{base_url}/v1beta/{model}:{method}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON, and the key in `x-goog-api-key` (never in the URL)."""
        headers = {"content-type": "application/json"}
        if api_key:
            headers["x-goog-api-key"] = api_key
        return headers

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The `GenerateContentRequest` body (the same streamed or not)."""
        body: Json = {"contents": _contents(expand(request.messages, PROVIDER))}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
            if request.tool_choice != "auto":
                body["toolConfig"] = {"functionCallingConfig": _calling(request.tool_choice)}
        config: Json = {}
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if config:
            body["generationConfig"] = config
        return body

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one response body, whichever of the three framings."""
        return GeminiDecoder()

    def decode_body(self, body: bytes) -> list[ModelEvent]:
        """The events of one whole `generateContent` response."""
        decoder = GeminiDecoder()
        return decoder.feed(body) + decoder.close()

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelCallFailed:
        """A google.rpc error body (bare, or in a one-element array when streamed)."""
        error = _rpc_error(parse_json(body).value_or(None))
        if error is None:
            return http_failure(status, body_text(body) or "no response body", headers)
        return http_failure(status, _rpc_message(error, body), headers, wait=_retry_delay(error))


# --- Encoding ---------------------------------------------------------------------------------


def _contents(turns: Iterable[Turn]) -> list[Json]:
    """The `contents` of the turns, consecutive same-role ones merged."""
    merged: list[Json] = []
    for turn in turns:
        role, parts = _turn(turn)
        if not parts:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["parts"].extend(parts)
        else:
            merged.append({"role": role, "parts": parts})
    return merged


def _turn(turn: Turn) -> tuple[str, list[Json]]:
    """One turn's role and parts."""
    match turn:
        case UserTurn(text=text, images=images):
            texts = [{"text": text}] if text or not images else []
            return "user", texts + [image_part(image) for image in images]
        case ModelTurn():
            return "model", _model_parts(turn)
        case ResultsTurn(results=results):
            responses = [_function_response(result) for result in results]
            return "user", responses + [image_part(i) for r in results for i in r.images]
        case _:
            assert_never(turn)


def _model_parts(turn: ModelTurn) -> list[Json]:
    """Text (carrying reasoning signatures), then the calls with theirs."""
    signatures = [block.signature for block in turn.reasoning if block.signature]
    parts: list[Json] = []
    if turn.text or signatures:
        parts.append(_signed({"text": turn.text}, signatures[0] if signatures else None))
        parts += [{"text": "", "thoughtSignature": extra} for extra in signatures[1:]]
    return parts + [_function_call(call) for call in turn.calls]


def _function_call(call: ToolCall) -> Json:
    """A call as the model sent it: name, arguments object, signature."""
    return _signed(
        {"functionCall": {"name": call.name, "args": arguments_object(call.arguments) or {}}},
        call.signature,
    )


def _function_response(result: ToolResult) -> Json:
    """A result: `{"output": text}`, or `{"error": text}` for a failed call."""
    key = "error" if result.is_error else "output"
    return {"functionResponse": {"name": result.name, "response": {key: result.content}}}


def image_part(image: ImagePart) -> Json:
    """An `inlineData` part for bytes, a `fileData` part for a URI."""
    if image.url is not None:
        return {"fileData": {"mimeType": image.media_type, "fileUri": image.url}}
    return {"inlineData": {"mimeType": image.media_type, "data": b64(image)}}


def _signed(part: Json, signature: str | None) -> Json:
    """The part, with `thoughtSignature` when there is one."""
    return {**part, "thoughtSignature": signature} if signature else part


def _declaration(spec: ToolSpec) -> Json:
    """A function declaration with the tool's JSON Schema as is."""
    schema = json.loads(spec.parameters)
    return {"name": spec.name, "description": spec.description, "parametersJsonSchema": schema}


def _calling(choice: str) -> Json:
    """`functionCallingConfig` for "none", "required" or one tool's name."""
    if choice in _MODES:
        return {"mode": _MODES[choice]}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


# --- Errors -----------------------------------------------------------------------------------


def _rpc_error(value: Any) -> Json | None:
    """The `error` object of `{"error": {...}}` or `[{"error": {...}}]`, if that is the shape."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, dict) else None


def _rpc_message(error: Json, body: bytes) -> str:
    """The provider's message, after its status name ("RESOURCE_EXHAUSTED: ...")."""
    message = str(error.get("message") or body_text(body) or "no message")
    status = error.get("status")
    return f"{status}: {message}" if isinstance(status, str) and status else message


def _retry_delay(error: Json) -> float | None:
    """Seconds from a `google.rpc.RetryInfo` detail's `retryDelay` ("34.4s")."""
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and (seconds := duration(delay)) is not None:
            return seconds
    return None


def _rpc_status(error: Json) -> int | None:
    """The HTTP status an in-stream error stands for: its code, else its status name's."""
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and code > 0:
        return code
    return _RPC_HTTP.get(str(error.get("status")))


# --- Framing ----------------------------------------------------------------------------------

_SSE_FIELDS = (b"data:", b"event:", b"id:", b"retry:", b":")
_WHITESPACE = b" \t\r\n"
_STRUCTURE = re.compile(rb'["{}\[\]]')
_IN_STRING = re.compile(rb'["\\]')


class _JsonFrames:
    """Cuts a JSON array of objects, or bare objects, into each object's bytes as it completes.

    Tracks brace/bracket depth and string/escape state; between objects only
    whitespace, commas and the array's brackets may appear.
    """

    def __init__(self) -> None:
        """Between objects, before the array opens."""
        self._item = bytearray()
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._opened = False
        self._closed = False

    def feed(self, chunk: bytes) -> list[bytes | ValueError]:
        """The objects completed by `chunk`; a stray byte ends them with a `ValueError`."""
        items: list[bytes | ValueError] = []
        at = 0
        while at < len(chunk):
            if self._depth == 0:
                if not self._between(chunk[at]):
                    problem = f"unexpected {chr(chunk[at])!r} between JSON array elements"
                    return [*items, ValueError(problem)]
                at += 1
            elif self._escaped:
                self._item.append(chunk[at])
                self._escaped = False
                at += 1
            else:
                at = self._scan(chunk, at, items)
        return items

    def flush(self) -> list[bytes | ValueError]:
        """Nothing: an unfinished object is a truncated body."""
        return []

    def _between(self, byte: int) -> bool:
        """Take one byte between objects; False when it may not be there."""
        if byte in _WHITESPACE or (byte == ord(",") and self._opened):
            return True
        if byte == ord("[") and not self._opened:
            self._opened = True
        elif byte == ord("]") and self._opened and not self._closed:
            self._closed = True
        elif byte == ord("{") and not self._closed:
            self._depth = 1
            self._item.append(byte)
        else:
            return False
        return True

    def _scan(self, chunk: bytes, at: int, items: list[bytes | ValueError]) -> int:
        """Copy inside an object up to its next significant byte; where to go on from."""
        pattern = _IN_STRING if self._in_string else _STRUCTURE
        match = pattern.search(chunk, at)
        end = match.end() if match else len(chunk)
        self._item += chunk[at:end]
        if match is None:
            return end
        byte = chunk[match.start()]
        if byte == ord("\\"):
            self._escaped = True
        elif byte == ord('"'):
            self._in_string = not self._in_string
        elif byte in b"{[":
            self._depth += 1
        else:
            self._depth -= 1
            if self._depth == 0:
                items.append(bytes(self._item))
                self._item.clear()
        return end


def _framing(head: bytes) -> SSEParser | _JsonFrames | None:
    """The framing the body's first bytes show; None until they do."""
    text = head.lstrip(_WHITESPACE)
    if not text:
        return None
    if text[:1] in (b"[", b"{"):
        return _JsonFrames()
    if text.startswith(_SSE_FIELDS):
        return SSEParser()
    if any(field.startswith(text) for field in _SSE_FIELDS):
        return None
    raise ValueError(f"not a Gemini response body: {text[:40]!r}")


# --- Vertex streamed arguments ----------------------------------------------------------------

_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")
_VALUE_KEYS = ("stringValue", "numberValue", "boolValue", "nullValue")


def _path(json_path: str) -> list[str | int]:
    """The keys and indexes of a `jsonPath` such as `$.recipe.steps[0]`."""
    steps: list[str | int] = []
    at = 1
    while json_path.startswith("$") and at < len(json_path):
        match = _PATH_STEP.match(json_path, at)
        if match is None:
            break
        key, index, quoted = match.groups()
        steps.append(int(index) if index is not None else key or quoted)
        at = match.end()
    if not steps or at != len(json_path):
        raise ValueError(f"unsupported jsonPath in partialArgs: {json_path!r}")
    return steps


def _slot(node: Any, step: str | int, empty: Any) -> Any:
    """The child at `step`, made `empty` when missing (lists grow to reach an index)."""
    if isinstance(node, list) and isinstance(step, int):
        node.extend([None] * (step + 1 - len(node)))
        if node[step] is None:
            node[step] = empty
        return node[step]
    return node.setdefault(step, empty)


class _StreamedArgs:
    """One call's arguments arriving as Vertex `partialArgs`, assembled into an object."""

    def __init__(self, index: int) -> None:
        """No arguments yet."""
        self.index = index
        self.args: Json = {}
        self._open: str | None = None

    def add(self, piece: Json) -> None:
        """Set one value; a string piece continues the string still open at its path."""
        key = next((key for key in _VALUE_KEYS if key in piece), None)
        if key is None:
            return
        json_path = str(piece.get("jsonPath", ""))
        steps = _path(json_path)
        parent: Any = self.args
        for step, after in itertools.pairwise(steps):
            parent = _slot(parent, step, [] if isinstance(after, int) else {})
        last = steps[-1]
        value: Any = None if key == "nullValue" else piece[key]
        continuing = key == "stringValue" and self._open == json_path
        _slot(parent, last, None)  # room for `last` in a list
        parent[last] = (parent[last] or "") + value if continuing else value
        self._open = json_path if key == "stringValue" and piece.get("willContinue") else None


# --- Decoding ---------------------------------------------------------------------------------


def _usage(meta: Json) -> Usage:
    """`usageMetadata`: prompt in (cached content among it), candidates out; thoughts extra."""
    extra = ((name, int(meta.get(key) or 0)) for key, name in _USAGE_EXTRA)
    return Usage(
        input_tokens=int(meta.get("promptTokenCount") or 0),
        output_tokens=int(meta.get("candidatesTokenCount") or 0),
        extra=tuple(sorted((name, count) for name, count in extra if count)),
        cache_read_tokens=int(meta.get("cachedContentTokenCount") or 0),
    )


class GeminiDecoder(GuardedDecoder):
    """Decodes one response body: SSE, a streamed JSON array, or one JSON object."""

    def __init__(self) -> None:
        """Framing not known yet; no calls, no finish reason, no usage."""
        super().__init__()
        self._head = b""
        self._framer: SSEParser | _JsonFrames | None = None
        self._calls = 0
        self._streamed: _StreamedArgs | None = None
        self._finish: str | None = None
        self._usage = Usage()

    def _frames(self, chunk: bytes) -> list[Any]:
        """Frames completed by `chunk`, once the first bytes have told the framing."""
        if self._framer is None:
            self._head += chunk
            self._framer = _framing(self._head)
            if self._framer is None:
                return []
            chunk, self._head = self._head, b""
        return list(self._framer.feed(chunk))

    def _flush_frames(self) -> list[Any]:
        """What the framing still holds (an unterminated SSE event is dropped)."""
        return [] if self._framer is None else list(self._framer.flush())

    def _on_frame(self, frame: Any) -> list[ModelEvent]:
        """One `GenerateContentResponse` (or an error object): SSE data or array element."""
        if isinstance(frame, ValueError):
            return [self._fail(f"malformed response stream: {frame}")]
        match parse_json(frame.data if isinstance(frame, SSEEvent) else frame):
            case Success(value) if isinstance(value, dict):
                return self._on_response(value)
            case Success(value):
                return [self._fail(f"malformed response: expected an object, got {value!r:.60}")]
            case Failure(reason):
                return [self._fail(f"malformed response stream: {reason}")]
        return []  # pragma: no cover - Result is Success or Failure

    def _on_end(self) -> list[ModelEvent]:
        """The stream ended: a response that gave its finish reason is complete."""
        if self._finish is None:
            return []
        return [*self._end_streamed(), self._respond(self._finish, self._usage)]

    def _on_response(self, response: Json) -> list[ModelEvent]:
        """Usage, candidate 0's parts, its finish reason; or the failure the chunk reports."""
        if isinstance(error := response.get("error"), dict):
            return [self._rpc_failure(error)]
        feedback = response.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            return [self._blocked(feedback)]
        meta = response.get("usageMetadata")
        if isinstance(meta, dict) and any(key.endswith("TokenCount") for key in meta):
            self._usage = _usage(meta)
        candidates = response.get("candidates")
        candidate = next((c for c in candidates or () if c.get("index", 0) == 0), None)
        if candidate is None:
            return []
        content = candidate.get("content") or {}
        events: list[ModelEvent] = []
        for part in content.get("parts") or []:
            events += self._on_part(part)
        if candidate.get("finishReason"):
            self._finish = str(candidate["finishReason"])
        return events

    def _on_part(self, part: Json) -> list[ModelEvent]:
        """A text, thought or functionCall part; other kinds are ignored."""
        signature = part.get("thoughtSignature") or None
        if isinstance(call := part.get("functionCall"), dict):
            return self._on_call(call, signature)
        if (why := not_object(call, "functionCall")) is not None:  # else dropped unseen
            return [self._fail(MALFORMED + why, retryable=True)]
        text = part.get("text")
        text = text if isinstance(text, str) else ""
        if part.get("thought"):
            return (
                [ReasoningDelta(provider=PROVIDER, text=text, signature=signature)]
                if text or signature
                else []
            )
        events: list[ModelEvent] = [TextDelta(text=text)] if text else []
        if signature:
            events.append(ReasoningDelta(provider=PROVIDER, signature=signature))
        return events

    def _on_call(self, call: Json, signature: str | None) -> list[ModelEvent]:
        """A whole call, or the start, a piece or the end of a Vertex streamed one."""
        if not call.get("name"):
            return self._continue_streamed(call)
        events = self._end_streamed()
        index, self._calls = self._calls, self._calls + 1
        call_id = str(call.get("id") or "")
        events.append(
            ToolCallStarted(index=index, call_id=call_id, name=call["name"], signature=signature)
        )
        if call.get("willContinue") and "args" not in call:
            self._streamed = _StreamedArgs(index)
            return events + self._continue_streamed(call)
        fragment = json.dumps(call.get("args") or {}, ensure_ascii=False)
        return [*events, ToolCallArgumentsDelta(index=index, fragment=fragment)]

    def _continue_streamed(self, call: Json) -> list[ModelEvent]:
        """Apply `partialArgs`; a `functionCall` without `willContinue` ends the call."""
        if self._streamed is None:
            return []
        for piece in call.get("partialArgs") or []:
            self._streamed.add(piece)
        return [] if call.get("willContinue") else self._end_streamed()

    def _end_streamed(self) -> list[ModelEvent]:
        """The assembled arguments of the streamed call still open, as one fragment."""
        streamed, self._streamed = self._streamed, None
        if streamed is None:
            return []
        fragment = json.dumps(streamed.args, ensure_ascii=False)
        return [ToolCallArgumentsDelta(index=streamed.index, fragment=fragment)]

    def _rpc_failure(self, error: Json) -> ModelCallFailed:
        """An error object inside a 200 body: retryable as its code would be."""
        status = _rpc_status(error)
        message = _rpc_message(error, b"")
        return self._fail(
            message if status is None else f"HTTP {status}: {message}",
            retryable=status is not None and status_retryable(status),
            status=status,
            retry_after=_retry_delay(error),
        )

    def _blocked(self, feedback: Json) -> ModelCallFailed:
        """The prompt was blocked (`promptFeedback.blockReason`): fatal, asking again is futile."""
        reason = f"prompt blocked: {feedback['blockReason']}"
        detail = feedback.get("blockReasonMessage")
        return self._fail(f"{reason} ({detail})" if detail else reason)
