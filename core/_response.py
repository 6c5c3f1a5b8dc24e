"""The model response being streamed in.

Tool calls are keyed by index (OpenAI streams the id and name only on a call's
first delta; argument fragments may split anywhere, even inside a number), so
arguments are only parsed when the response is complete (`finished_calls`,
then `arguments_error` in core/_arguments.py). The four delta functions take
the partial response and return the next one; what a reducer tells its caller
about a delta (the loop streams text and reasoning) is its own policy.

Every delta makes a new `Stream` (old states stay valid), so the builders here
skip attrs' keyword `__init__` (see core/_slots.py). The answer's text is a
short `tail` that each delta grows, and before it a chain of pieces of about
`PIECE` characters each (`Pieces`), joined once, when the text is read: a delta
costs the same however long the answer already is (one string grown per delta
would copy all of it every time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeAlias

import attrs

from ._events import ReasoningDelta, TextDelta, ToolCallArgumentsDelta, ToolCallStarted
from ._record import Record, Value
from ._records import Reasoning, ToolCall
from ._slots import blank, setters

Delta: TypeAlias = TextDelta | ReasoningDelta | ToolCallStarted | ToolCallArgumentsDelta

#: Text before the tail: None, or (the pieces before, the last piece).
Pieces: TypeAlias = "tuple[Pieces, str] | None"
#: A tail this long becomes the last piece; the next delta starts a new tail.
PIECE = 2048


def joined(pieces: Pieces) -> str:
    """The text a chain of pieces holds, in order."""
    found: list[str] = []
    while pieces is not None:
        pieces, piece = pieces
        found.append(piece)
    found.reverse()
    return "".join(found)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialCall(Value):
    """A tool call still streaming in: id and name from its start, argument text so far."""

    index: int
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    signature: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Stream(Record):
    """The partial response: what the current model call has streamed so far.

    Two streams are equal when they hold the same text (however it was cut into
    pieces), reasoning and calls.
    """

    #: The text before `tail`, as `Pieces` (Any: a recursive type no converter names).
    earlier: Any = None
    #: The text's last characters (fewer than about `PIECE`).
    tail: str = ""
    reasoning: tuple[Reasoning, ...] = ()
    reasoning_open: bool = False
    #: The calls so far, except `written`: read them with `calls_of`.
    calls: tuple[PartialCall, ...] = ()
    #: Argument text of the last of `calls` not yet in its `arguments` (the fragments of
    #: the call streaming now: appended here, no new `PartialCall` per fragment).
    written: str = ""

    @property
    def text(self) -> str:
        """The answer's text so far."""
        if self.earlier is None:
            return self.tail
        return joined((self.earlier, self.tail))

    def _key(self) -> tuple[str, tuple[Reasoning, ...], bool, tuple[PartialCall, ...]]:
        """What equality and the hash compare."""
        return (self.text, self.reasoning, self.reasoning_open, calls_of(self))

    def __eq__(self, other: object) -> bool:
        """The same text, reasoning and calls."""
        if other.__class__ is not Stream:
            return NotImplemented
        assert isinstance(other, Stream)
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        """The hash of what equality compares."""
        return hash(self._key())


EMPTY_STREAM = Stream()

_earlier, _tail, _reasoning, _open, _calls, _written = setters(Stream)
_index, _id, _name, _arguments, _signature = setters(PartialCall)


def _stream(  # noqa: PLR0917 - one per slot, on the per-delta path (keywords cost more)
    earlier: Pieces,
    tail: str,
    reasoning: tuple[Reasoning, ...],
    reasoning_open: bool,
    calls: tuple[PartialCall, ...],
    written: str,
) -> Stream:
    """A `Stream` built slot by slot."""
    stream = blank(Stream)
    _earlier(stream, earlier)
    _tail(stream, tail)
    _reasoning(stream, reasoning)
    _open(stream, reasoning_open)
    _calls(stream, calls)
    _written(stream, written)
    return stream


def calls_of(stream: Stream) -> tuple[PartialCall, ...]:
    """The stream's calls, each with all its argument text so far."""
    calls = stream.calls
    if not stream.written:
        return calls
    last = calls[-1]
    arguments = last.arguments + stream.written
    return (*calls[:-1], _partial(last.index, last.call_id, last.name, arguments, last.signature))


def _partial(
    index: int, call_id: str, name: str, arguments: str, signature: str | None
) -> PartialCall:
    """A `PartialCall` built slot by slot."""
    call = blank(PartialCall)
    _index(call, index)
    _id(call, call_id)
    _name(call, name)
    _arguments(call, arguments)
    _signature(call, signature)
    return call


def add_text(stream: Stream, text: str) -> Stream:
    """Append answer text to the tail; a tail of `PIECE` characters becomes a piece first.

    A delta copies at most the short tail; the pieces are joined once, when read.
    """
    tail = stream.tail
    if len(tail) < PIECE:
        earlier, tail = stream.earlier, tail + text
    else:
        earlier, tail = (stream.earlier, tail), text
    return _stream(
        earlier, tail, stream.reasoning, stream.reasoning_open, stream.calls, stream.written
    )


def add_reasoning(
    stream: Stream, text: str, signature: str | None, redacted: str | None, provider: str = ""
) -> Stream:
    """Append reasoning text to the open block; a signature closes it; redacted stands alone.

    The block's `provider` is the one any of its pieces named (the closing one at the latest).
    """
    blocks = stream.reasoning
    if redacted is not None:
        blocks = (*blocks, Reasoning(redacted=redacted, provider=provider))
        return _stream(stream.earlier, stream.tail, blocks, False, stream.calls, stream.written)
    if stream.reasoning_open:
        last = blocks[-1]
        block = Reasoning(
            text=last.text + text, signature=signature, provider=provider or last.provider
        )
        blocks = (*blocks[:-1], block)
    else:
        blocks = (*blocks, Reasoning(text=text, signature=signature, provider=provider))
    open_ = signature is None
    return _stream(stream.earlier, stream.tail, blocks, open_, stream.calls, stream.written)


def _call_at(calls: tuple[PartialCall, ...], index: int) -> int:
    """Position of the call with `index`, or -1 (few calls per response: a scan is cheapest)."""
    for position in range(len(calls) - 1, -1, -1):
        if calls[position].index == index:
            return position
    return -1


def _put(stream: Stream, position: int, call: PartialCall) -> Stream:
    """Replace (or, at -1, append) one partial call (of `calls_of(stream)`)."""
    calls = calls_of(stream)
    if position < 0:
        calls = (*calls, call)
    elif position == len(calls) - 1:
        calls = (*calls[:-1], call)
    else:
        calls = (*calls[:position], call, *calls[position + 1 :])
    return _stream(stream.earlier, stream.tail, stream.reasoning, stream.reasoning_open, calls, "")


def start_call(
    stream: Stream, index: int, call_id: str, name: str, signature: str | None
) -> Stream:
    """Open the call at `index`; a repeated start only fills in what was missing."""
    position = _call_at(stream.calls, index)
    if position < 0:
        return _put(stream, position, _partial(index, call_id, name, "", signature))
    old = calls_of(stream)[position]
    call = _partial(
        index,
        old.call_id or call_id,
        old.name or name,
        old.arguments,
        old.signature or signature,
    )
    return _put(stream, position, call)


def call_at(stream: Stream, index: int) -> PartialCall:
    """The partial call at `index` (one that has started or has fragments)."""
    return calls_of(stream)[_call_at(stream.calls, index)]


def add_fragment(stream: Stream, index: int, fragment: str) -> Stream:
    """Append an argument fragment to the call at `index` (opening it if it never started)."""
    calls = stream.calls
    if calls and calls[-1].index == index:  # the usual case: the call streaming now
        written = stream.written + fragment
        return _stream(
            stream.earlier, stream.tail, stream.reasoning, stream.reasoning_open, calls, written
        )
    position = _call_at(calls, index)
    if position < 0:
        return _put(stream, position, _partial(index, "", "", fragment, None))
    old = calls_of(stream)[position]
    call = _partial(index, old.call_id, old.name, old.arguments + fragment, old.signature)
    return _put(stream, position, call)


def _text_delta(stream: Stream, event: TextDelta) -> Stream:
    """The response after a piece of text."""
    return add_text(stream, event.text)


def _reasoning_delta(stream: Stream, event: ReasoningDelta) -> Stream:
    """The response after a piece of a reasoning block."""
    return add_reasoning(stream, event.text, event.signature, event.redacted, event.provider)


def _call_started(stream: Stream, event: ToolCallStarted) -> Stream:
    """The response after a tool call began."""
    return start_call(stream, event.index, event.call_id, event.name, event.signature)


def _arguments_delta(stream: Stream, event: ToolCallArgumentsDelta) -> Stream:
    """The response after an argument fragment."""
    return add_fragment(stream, event.index, event.fragment)


#: The four delta handlers, by event type: `DELTAS[type(event)](stream, event)`.
DELTAS: Mapping[type, Callable[[Stream, Any], Stream]] = MappingProxyType(
    {
        TextDelta: _text_delta,
        ReasoningDelta: _reasoning_delta,
        ToolCallStarted: _call_started,
        ToolCallArgumentsDelta: _arguments_delta,
    }
)


def finished_calls(stream: Stream, scope: int, iteration: int) -> tuple[ToolCall, ...]:
    """The response's calls in index order, with ids made present and unique.

    A missing id becomes `call_<scope>_<iteration>_<index>` (scope: `Turn.scope`,
    the turn's number advanced by each further attempt); a repeated one gets
    `_<index>` appended, so every result can be paired with exactly one call.
    Empty or absent arguments mean `{}`.
    """
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for partial in sorted(calls_of(stream), key=lambda call: call.index):
        call_id = partial.call_id or f"call_{scope}_{iteration}_{partial.index}"
        if call_id in seen:
            call_id = f"{call_id}_{partial.index}"
        seen.add(call_id)
        arguments = partial.arguments if partial.arguments.strip() else "{}"
        calls.append(
            ToolCall(
                id=call_id, name=partial.name, arguments=arguments, signature=partial.signature
            )
        )
    return tuple(calls)
