"""Reading one model response as open_agent's blocks, shared by `query()` and `Client`.

The response arrives as core model events from `openai_sdk_model` over the
client `create_client` made. Text comes out piece by piece (a provider that
resends the whole text so far has only the new part shown); the calls come out
at the end, each asked of the PreToolUse hooks first.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import attrs

from toolreel.adapters._providers._openai_sdk import close_stream, plain
from toolreel.core import (
    ModelCallFailed,
    ModelEvent,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    arguments_object,
)

from ._errors import ModelError
from .hooks import HOOK_PRE_TOOL_USE, Hooks, PreToolUseEvent, run_hooks
from .types import ToolUseBlock, ToolUseError


@attrs.define
class Reading:
    """What one response brought so far: its text and its calls' pieces by index."""

    text: str = ""
    pieces: dict[int, list[str]] = attrs.field(factory=dict)

    def take(self, event: ModelEvent) -> str | None:
        """Fold one event in; the new text it shows, if any (a failure raises `ModelError`)."""
        match event:
            case TextDelta(text=piece):
                if self.text and piece.startswith(self.text) and len(piece) > len(self.text):
                    piece = piece[len(self.text) :]  # a provider resending the whole text
                self.text += piece
                return piece
            case ToolCallStarted(index=index, call_id=call_id, name=name):
                known = self.pieces.setdefault(index, ["", "", ""])
                known[0], known[1] = known[0] or call_id, known[1] or name
            case ToolCallArgumentsDelta(index=index, fragment=fragment):
                self.pieces.setdefault(index, ["", "", ""])[2] += fragment
            case ModelCallFailed(message=message, status=status):
                raise ModelError(message, status)
            case _:
                pass
        return None

    def calls(self, first_number: int) -> list[tuple[ToolCall, dict[str, Any] | None]]:
        """The calls in index order, with their parsed input (None when it is not an object)."""
        made = []
        for number, index in enumerate(sorted(self.pieces), start=first_number):
            call_id, name, arguments = self.pieces[index]
            call = ToolCall(id=call_id or f"call_{number}", name=name, arguments=arguments or "{}")
            made.append((call, arguments_object(call.arguments)))
        return made


@attrs.frozen
class Shown:
    """One call as the caller sees it: its block, the call to record, and what to run."""

    block: ToolUseBlock | ToolUseError
    call: ToolCall
    error: str | None = None  # the result recorded for a call that is not run
    blocked: bool = False


async def show_call(
    hooks: Hooks | None, call: ToolCall, given: dict[str, Any] | None, history: list[Any]
) -> Shown:
    """The block for one call: PreToolUse may block it or change its input."""
    if given is None:
        error = f"Invalid JSON in arguments for tool {call.name!r}: {call.arguments}"
        return Shown(
            block=ToolUseError(error=error, raw_data=call.arguments), call=call, error=error
        )
    event = PreToolUseEvent(
        tool_name=call.name, tool_input=given, tool_use_id=call.id, history=history
    )
    decision = await run_hooks(hooks, HOOK_PRE_TOOL_USE, event)
    if decision is not None and not decision.continue_:
        error = f"Tool use blocked by hook: {decision.reason or 'no reason given'}"
        block = ToolUseError(error=error, raw_data=json.dumps(given))
        return Shown(block=block, call=call, error=error, blocked=True)
    if decision is not None and decision.modified_input is not None:
        given = decision.modified_input
        call = attrs.evolve(call, arguments=json.dumps(given))
    return Shown(block=ToolUseBlock(id=call.id, name=call.name, input=given), call=call)


class Lenient:
    """The client as open_agent reads it: a stream that just stops is a complete answer.

    open_agent takes whatever chunks come as the answer; toolreel's codec calls a
    stream without a finish reason truncated. This wrapper adds the finish
    reason such a stream lacks.
    """

    def __init__(self, client: Any) -> None:
        """Wrap `client` (its `chat.completions.create` is called as it is)."""
        self.client = client
        self.api_key = getattr(client, "api_key", None)
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    async def _create(self, **body: Any) -> Any:
        """Call the client; a streamed answer gets its end made explicit."""
        answer = await self.client.chat.completions.create(**body)
        return _ended(answer) if hasattr(answer, "__aiter__") else answer


async def _ended(stream: Any) -> AsyncIterator[Any]:
    """The stream's chunks, then a finish chunk if none of them finished the answer."""
    finished = False
    try:
        async for chunk in stream:
            finished = finished or _finishes(plain(chunk))
            yield chunk
    finally:
        await close_stream(stream)
    if not finished:  # open_agent reads calls, not the reason: "stop" serves for both
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def _finishes(chunk: Any) -> bool:
    """Whether a chunk carries a finish reason."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return any(isinstance(c, dict) and c.get("finish_reason") for c in choices or ())
