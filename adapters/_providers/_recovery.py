"""Tool calls that small local models write as text, turned into real calls (opt-in).

Models behind llama.cpp, Ollama, LM Studio or vLLM without a tool parser put
the call in the answer's text. `tool_call_recovery` on the OpenAI-compatible
and Ollama codecs names the formats to look for:

- "hermes" (Hermes, Qwen): `<tool_call>{"name": N, "arguments": {...}}</tool_call>`,
  one block per call, text around them;
- "llama3": `<|python_tag|>{"name": N, "parameters": {...}}` to the end of the
  answer, or a bare `{"name": N, "parameters": {...}}` as the whole answer
  (also inside a ```json fence, as coding models write it);
- "mistral": `[TOOL_CALLS][{"name": N, "arguments": {...}}, ...]`, or the newer
  `[TOOL_CALLS]N[ARGS]{...}`, to the end of the answer;
- "auto": all of them, whichever comes first.

Theory of operation. `TextCalls` is a pure state machine over one response's
text: text in, text pieces and `Found` calls out. `Recovery` puts it between a
decoder and its caller, on events (the driver applies it in _http.py, so the
journal records the calls it made: replay folds those recorded events and is
exact; the history sends them back as real calls).

1. Text is let out as soon as it cannot be the start of a marker; a tail that
   may be one (`<tool`, `[TOOL_`) is held until the next text decides it.
   Nothing is dropped: what turns out not to be a call is let out as text, in
   order, and at the end of the response everything held is let out (as text
   when the response failed).
2. A `<tool_call>` block is held until `</tool_call>` (or the end); a
   `<|python_tag|>` or `[TOOL_CALLS]` payload until the end of the response.
   A marker followed by something no call starts with (prose: `<tool_call> tags`)
   is let out as text at once, and the text after it is searched again.
3. A payload is a call attempt when it starts with JSON (`{` or `[`), or
   `NAME[ARGS]` after `[TOOL_CALLS]`. An attempt whose JSON is valid gives
   one call per `{"name", "arguments"|"parameters"}` object (a list, or
   several objects separated by `;` hold several); text after the JSON is let
   out as text. A payload that is not an attempt (prose after a marker, or
   JSON that is not call-shaped) is let out as text, markers included.
4. An attempt whose JSON is broken still becomes a call (its name when one can
   be read, else ""), with the broken text as its arguments: the loop answers
   it with "arguments are not valid JSON: ...", which the model reads and can
   correct. Silent text would leave the model believing it called the tool.
5. A call inside a marker becomes a call whatever its name: an unknown one is
   answered "Unknown tool: N" by the loop, so the model learns the right
   names. A bare JSON answer (no marker) is a call only when it is nothing
   but call objects naming offered tools (with no keys besides name,
   arguments/parameters, type, id): otherwise it is a JSON answer, let out
   at the end of the response.
6. Arguments are re-serialised as JSON object text (a string holding a JSON
   object is unwrapped); ids are left for the core to make
   (`call_<turn>_<iteration>_<index>`, deterministic and unique in the
   session); real calls from the server keep coming, renumbered after
   recovered ones so indices never clash.
7. No tools offered, or `tool_choice="none"`: nothing is recovered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final, Literal, TypeAlias, TypeVar, get_args

import attrs

from toolreel.core import (
    ConfigError,
    ModelCallFailed,
    ModelEvent,
    ModelRequest,
    ModelResponded,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from toolreel.core.record import Value

#: The formats `tool_call_recovery` accepts.
ToolCallRecovery: TypeAlias = Literal["auto", "hermes", "llama3", "mistral"]
RECOVERY_MODES: Final = get_args(ToolCallRecovery)

HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
PYTHON_TAG = "<|python_tag|>"
MISTRAL = "[TOOL_CALLS]"
#: Stands for "a bare JSON answer is being held" where a marker would be.
_BARE = "{"
_FENCE = "```"

_MARKERS: Final[dict[str, tuple[str, ...]]] = {
    "auto": (HERMES_OPEN, PYTHON_TAG, MISTRAL),
    "hermes": (HERMES_OPEN,),
    "llama3": (PYTHON_TAG,),
    "mistral": (MISTRAL,),
}
#: The keys a bare JSON answer may have and still be a call (rule 5).
_BARE_KEYS = frozenset({"name", "arguments", "parameters", "type", "id"})
_DECODER = json.JSONDecoder()
_VISIBLE = re.compile(r"\S")
_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_NAME_ARGS = re.compile(r"\s*([^\s\[\]{}\"]+)\[ARGS\]")

C = TypeVar("C")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Found(Value):
    """A call read from text: its name and its arguments as JSON text (maybe broken)."""

    name: str
    arguments: str


Piece: TypeAlias = str | Found


class TextCalls:
    """The per-response state machine of rules 1-5: text in, text and calls out."""

    def __init__(self, mode: ToolCallRecovery, tools: frozenset[str]) -> None:
        """Look for `mode`'s formats; `tools` are the offered names (for bare JSON)."""
        self._markers = _MARKERS[mode]
        self._tools = tools
        self._held = ""
        #: The marker whose payload is held (`_BARE` for a bare JSON answer), or None.
        self._inside: str | None = None
        #: Whether only whitespace came so far (a bare JSON answer may still begin).
        self._start = mode in ("auto", "llama3")
        self._searched = 0

    def feed(self, text: str) -> list[Piece]:
        """The pieces the next text completes."""
        self._held += text
        return _joined(self._advance())

    def close(self) -> list[Piece]:
        """The pieces at the end of the response: everything held is decided now."""
        held, inside = self._held, self._inside
        self._held, self._inside, self._searched = "", None, 0
        if inside is None:
            return [held] if held else []
        if inside == HERMES_OPEN:
            return self._block(held, held[len(HERMES_OPEN) :])
        if inside == _BARE:
            return self._bare(held)
        return self._rest(inside, held)

    def spill(self) -> list[Piece]:
        """Everything held, as text (a failed response: nothing in it is a call)."""
        held = self._held
        self._held, self._inside, self._searched = "", None, 0
        return [held] if held else []

    def _advance(self) -> list[Piece]:
        """Let out what is decided; hold what may still be a marker or a payload."""
        out: list[Piece] = []
        while True:
            if self._inside is None:
                if self._start and self._begins_bare():
                    return out
                marker, at = self._first_marker()
                if marker is None:
                    keep = self._prefix_tail()
                    if len(self._held) > keep:
                        out.append(self._held[: len(self._held) - keep])
                        self._held = self._held[len(self._held) - keep :]
                    return out
                if at:
                    out.append(self._held[:at])
                self._held, self._inside, self._searched = self._held[at:], marker, 0
            elif self._inside != _BARE and self._no_attempt(self._inside):
                out.append(self._inside)  # prose after a marker: the marker is text
                self._held, self._inside = self._held[len(self._inside) :], None
            elif self._inside == HERMES_OPEN:
                end = self._held.find(HERMES_CLOSE, max(len(HERMES_OPEN), self._searched))
                if end < 0:
                    self._searched = max(0, len(self._held) - len(HERMES_CLOSE) + 1)
                    return out
                block, self._held = (
                    self._held[: end + len(HERMES_CLOSE)],
                    self._held[end + len(HERMES_CLOSE) :],
                )
                self._inside = None
                out += self._block(block, block[len(HERMES_OPEN) : end])
            else:
                return out  # a payload to the end of the response (rule 2)

    def _no_attempt(self, marker: str) -> bool:
        """Whether what follows the marker already shows it starts no call (rule 3)."""
        first = _VISIBLE.search(self._held, len(marker))
        if first is None:
            return False
        char = first.group()
        return char not in "{[" and (marker != MISTRAL or char in ']}"')

    def _begins_bare(self) -> bool:
        """Whether to hold on: only whitespace so far, or a bare JSON answer (may) begin."""
        verdict = bare_start(self._held.lstrip())
        if verdict is None:
            return True
        self._start = False
        if verdict:
            self._inside = _BARE
        return verdict

    def _first_marker(self) -> tuple[str | None, int]:
        """The earliest whole marker in the held text, and where it starts."""
        best: tuple[str | None, int] = (None, -1)
        for marker in self._markers:
            at = self._held.find(marker)
            if at >= 0 and (best[0] is None or at < best[1]):
                best = (marker, at)
        return best

    def _prefix_tail(self) -> int:
        """The length of the longest tail of the held text that begins a marker."""
        held = self._held
        for size in range(min(len(held), max(map(len, self._markers)) - 1), 0, -1):
            tail = held[-size:]
            if any(marker.startswith(tail) for marker in self._markers):
                return size
        return 0

    def _block(self, raw: str, payload: str) -> list[Piece]:
        """A `<tool_call>` block: its calls, or itself as text (rule 3)."""
        read = read_calls(payload)
        return [raw] if read is None else _pieces(*read)

    def _rest(self, marker: str, raw: str) -> list[Piece]:
        """A payload to the end: each part between markers, as calls or as text."""
        out: list[Piece] = []
        for part in raw[len(marker) :].split(marker):
            read = read_calls(part, named=marker == MISTRAL)
            out += [marker + part] if read is None else _pieces(*read)
        return _joined(out)

    def _bare(self, held: str) -> list[Piece]:
        """A whole answer that began with `{`: calls to offered tools, or text as it came."""
        calls = bare_calls(held, self._tools)
        if calls is not None:
            return list(calls)
        self._held = held  # not a call: look for markers in it, then end as usual
        return _joined(self._advance() + self.close())


def read_calls(payload: str, *, named: bool = False) -> tuple[list[Found], str] | None:
    """The calls a payload holds and the text after them; None when it is no attempt.

    `named` also reads Mistral's `NAME[ARGS]{...}`.
    """
    if named and (match := _NAME_ARGS.match(payload)):
        return [_named_call(match.group(1), payload, match.end())], ""
    pos = _gap(payload, 0)
    calls: list[Found] = []
    while pos < len(payload) and payload[pos] in "{[":
        try:
            value, end = _DECODER.raw_decode(payload, pos)
        except (ValueError, RecursionError):
            broken = payload[pos:].strip()
            return [*calls, Found(name=_guess_name(broken), arguments=broken)], ""
        found = call_objects(value)
        if found is None:
            break
        calls += found
        pos = _gap(payload, end)
        if pos >= len(payload) or payload[pos] not in "{[":
            pos = end
            break
    if not calls:
        return None
    rest = payload[pos:]
    return calls, rest if rest.strip() else ""


def _gap(text: str, pos: int) -> int:
    """Where the whitespace, `;` and `,` from `pos` end (what may separate call objects)."""
    while pos < len(text) and (text[pos] in ";," or text[pos].isspace()):
        pos += 1
    return pos


def bare_start(text: str) -> bool | None:
    """Whether an answer starting with `text` is a bare JSON one; None: not known yet.

    A JSON object, or one in a Markdown fence (```json), as coding models write.
    """
    if not text:
        return None
    if text[0] == "{":
        return True
    if not text.startswith(_FENCE):
        return None if _FENCE.startswith(text) else False
    header, newline, body = text[len(_FENCE) :].partition("\n")
    if not newline:
        return None if "json".startswith(header.strip().lower()) else False
    if header.strip().lower() not in ("", "json"):
        return False
    body = body.lstrip()
    return None if not body else body[0] == "{"


def _unfenced(text: str) -> str:
    """The JSON inside a Markdown fence (closed or not), or the text itself."""
    text = text.strip()
    if not text.startswith(_FENCE):
        return text
    body = text[len(_FENCE) :].partition("\n")[2]
    return body[: -len(_FENCE)] if body.endswith(_FENCE) else body  # (stripped above)


def bare_calls(text: str, tools: frozenset[str]) -> list[Found] | None:
    """A whole answer as calls when it is nothing but call objects naming offered tools."""
    try:
        value = json.loads(_unfenced(text))
    except (ValueError, RecursionError):
        return None
    items = value if isinstance(value, list) else [value]
    if not items or not all(
        isinstance(item, dict) and set(item) <= _BARE_KEYS and item.get("name") in tools
        for item in items
    ):
        return None
    return call_objects(value)


def call_objects(value: Any) -> list[Found] | None:
    """A call object, or a non-empty list of them, as calls; None if it is not that shape."""
    items = value if isinstance(value, list) else [value]
    calls = [_call_object(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _call_object(item: Any) -> Found | None:
    """`{"name", "arguments"|"parameters"}` (or OpenAI's `{"function": {...}}`) as a call."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict) and "name" not in item:
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = item.get("arguments", item.get("parameters"))
    return Found(name=name, arguments=arguments_json(arguments))


def arguments_json(arguments: Any) -> str:
    """Arguments as JSON text: an object re-serialised; a string holding JSON unwrapped.

    Anything else goes as it is, for the loop to answer (rule 4).
    """
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        try:
            inner = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
        return _dumps(inner) if isinstance(inner, dict) else arguments
    return _dumps(arguments)


def _dumps(value: Any) -> str:
    """Compact-enough JSON text, non-ASCII kept as it is."""
    return json.dumps(value, ensure_ascii=False)


def _named_call(name: str, payload: str, start: int) -> Found:
    """Mistral's `NAME[ARGS]{...}`: the arguments re-serialised, or as sent if broken."""
    text = payload[start:].strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return Found(name=name, arguments=text)
    return Found(name=name, arguments=arguments_json(value))


def _guess_name(broken: str) -> str:
    """The `"name"` a broken call object spells out, or ""."""
    match = _NAME.search(broken)
    if match is None:
        return ""
    try:
        name = json.loads(f'"{match.group(1)}"')
    except ValueError:
        return ""
    return name if isinstance(name, str) else ""


def _pieces(calls: list[Found], rest: str) -> list[Piece]:
    """Calls, then the text after them."""
    return [*calls, rest] if rest else list(calls)


def _joined(pieces: Iterable[Piece]) -> list[Piece]:
    """Pieces with neighbouring texts joined (one text delta, not several)."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, str) and out and isinstance(out[-1], str):
            out[-1] += piece
        elif piece != "":
            out.append(piece)
    return out


class Recovery:
    """One response's events with its text calls made real calls (rule 6 for indices)."""

    def __init__(self, mode: ToolCallRecovery, tools: frozenset[str]) -> None:
        """A fresh state machine for one response."""
        self._text = TextCalls(mode, tools)
        self._indices: dict[int, int] = {}
        self._next = 0

    def __call__(self, events: list[ModelEvent]) -> list[ModelEvent]:
        """The events to pass on for the decoder's next events."""
        out: list[ModelEvent] = []
        for event in events:
            if isinstance(event, TextDelta):
                out += self._events(self._text.feed(event.text))
            elif isinstance(event, ToolCallStarted | ToolCallArgumentsDelta):
                out.append(attrs.evolve(event, index=self._renumbered(event.index)))
            elif isinstance(event, ModelResponded):
                out += self._events(self._text.close())
                out.append(event)
            elif isinstance(event, ModelCallFailed):
                out += self._events(self._text.spill())
                out.append(event)
            else:
                out.append(event)
        return out

    def _renumbered(self, index: int) -> int:
        """A server call's index, after the recovered calls'."""
        if index not in self._indices:
            self._indices[index] = self._next
            self._next += 1
        return self._indices[index]

    def _events(self, pieces: list[Piece]) -> list[ModelEvent]:
        """Text pieces as text deltas, calls as a start and their arguments."""
        events: list[ModelEvent] = []
        for piece in pieces:
            if isinstance(piece, str):
                events.append(TextDelta(text=piece))
                continue
            index, self._next = self._next, self._next + 1
            events.append(ToolCallStarted(index=index, call_id="", name=piece.name))
            if piece.arguments:
                events.append(ToolCallArgumentsDelta(index=index, fragment=piece.arguments))
        return events


def recovery_for(codec: object, request: ModelRequest) -> Recovery | None:
    """The recovery one response to `request` goes through, if the codec asks for one (rule 7)."""
    mode: ToolCallRecovery | None = getattr(codec, "tool_call_recovery", None)
    if mode is None or not request.tools or request.tool_choice == "none":
        return None
    return Recovery(mode, frozenset(spec.name for spec in request.tools))


def recovers(codec_type: type) -> bool:
    """Whether a codec class can recover text calls (it has a `tool_call_recovery` field)."""
    return attrs.has(codec_type) and "tool_call_recovery" in attrs.fields_dict(codec_type)


def with_recovery(codec: C, mode: str) -> C:
    """`codec` recovering `mode`'s text calls; an unknown mode or codec: `ConfigError`."""
    if mode not in RECOVERY_MODES:
        allowed = ", ".join(repr(name) for name in RECOVERY_MODES)
        raise ConfigError("tool_call_recovery", mode, f"None or one of {allowed}")
    if not recovers(type(codec)):
        name = getattr(codec, "name", type(codec).__name__)
        detail = f"a provider that can send tool calls as text (openai, ollama), not {name}"
        raise ConfigError("tool_call_recovery", mode, detail)
    return attrs.evolve(codec, tool_call_recovery=mode)  # type: ignore[misc]
