"""Accumulating one streamed response, and turning it into calls once it ends.

Tool calls are keyed by index (OpenAI streams the id and name only on a call's
first delta; argument fragments may split anywhere, even inside a number), so
arguments are only parsed when the response is complete.
"""

from __future__ import annotations

import json

import attrs

from ._records import Reasoning, ToolCall
from ._state import PartialCall, Stream


def add_text(stream: Stream, text: str) -> Stream:
    """Append answer text."""
    return Stream(
        text=stream.text + text,
        reasoning=stream.reasoning,
        reasoning_open=stream.reasoning_open,
        calls=stream.calls,
    )


def add_reasoning(stream: Stream, text: str, signature: str | None, redacted: str | None) -> Stream:
    """Append reasoning text to the open block; a signature closes it; redacted stands alone."""
    blocks = stream.reasoning
    if redacted is not None:
        return attrs.evolve(
            stream, reasoning=(*blocks, Reasoning(redacted=redacted)), reasoning_open=False
        )
    if stream.reasoning_open:
        last = blocks[-1]
        block = Reasoning(text=last.text + text, signature=signature)
        blocks = (*blocks[:-1], block)
    else:
        blocks = (*blocks, Reasoning(text=text, signature=signature))
    return attrs.evolve(stream, reasoning=blocks, reasoning_open=signature is None)


def _call_at(calls: tuple[PartialCall, ...], index: int) -> int:
    """Position of the call with `index`, or -1 (few calls per response: a scan is cheapest)."""
    for position in range(len(calls) - 1, -1, -1):
        if calls[position].index == index:
            return position
    return -1


def _put(stream: Stream, position: int, call: PartialCall) -> Stream:
    """Replace (or, at -1, append) one partial call."""
    calls = stream.calls
    calls = (*calls, call) if position < 0 else (*calls[:position], call, *calls[position + 1 :])
    return Stream(
        text=stream.text,
        reasoning=stream.reasoning,
        reasoning_open=stream.reasoning_open,
        calls=calls,
    )


def start_call(
    stream: Stream, index: int, call_id: str, name: str, signature: str | None
) -> Stream:
    """Open the call at `index`; a repeated start only fills in what was missing."""
    position = _call_at(stream.calls, index)
    if position < 0:
        call = PartialCall(index=index, call_id=call_id, name=name, signature=signature)
    else:
        old = stream.calls[position]
        call = attrs.evolve(
            old,
            call_id=old.call_id or call_id,
            name=old.name or name,
            signature=old.signature or signature,
        )
    return _put(stream, position, call)


def add_fragment(stream: Stream, index: int, fragment: str) -> Stream:
    """Append an argument fragment to the call at `index` (opening it if it never started)."""
    position = _call_at(stream.calls, index)
    if position < 0:
        call = PartialCall(index=index, arguments=fragment)
    else:
        old = stream.calls[position]
        call = PartialCall(
            index=index,
            call_id=old.call_id,
            name=old.name,
            arguments=old.arguments + fragment,
            signature=old.signature,
        )
    return _put(stream, position, call)


def arguments_error(arguments: str) -> str | None:
    """Why `arguments` is not a JSON object, or None when it is."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError) as exc:  # deep nesting exhausts the parser's stack
        return f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return f"arguments are not valid JSON: expected an object, got {type(value).__name__}"
    return None


def finished_calls(stream: Stream, turn: int, iteration: int) -> tuple[ToolCall, ...]:
    """The response's calls in index order, with ids made present and unique.

    A missing id becomes `call_<turn>_<iteration>_<index>`; a repeated one gets `_<index>`
    appended, so every result can be paired with exactly one call.
    Empty or absent arguments mean `{}`.
    """
    calls: list[ToolCall] = []
    seen: set[str] = set()
    for partial in sorted(stream.calls, key=lambda call: call.index):
        call_id = partial.call_id or f"call_{turn}_{iteration}_{partial.index}"
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
