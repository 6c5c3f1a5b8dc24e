"""Shared by the tests/web modules: one of every notice, folds of the encoders, protocol checks.

`ui_message_chunk.schema.json` beside this file is derived from the `ai` package's
own `uiMessageChunkSchema` (ai@7.0.173, by derive_ui_chunk_schema.mjs); `check_ui`
validates parts with it and checks the order rules `processUIMessageStream` enforces.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema

from toolreel.core import Cancelled, ChatMessage, Finish, ToolCall, ToolResult, ToolRound, Usage
from toolreel.core.hooks import Blocked
from toolreel.core.notices import (
    AttemptStarted,
    MessageRecorded,
    Notice,
    ReasoningStreamed,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
    ValidationFailed,
)
from toolreel.core.outcomes import Capped, Completed, Failed, FailureCode
from toolreel.core.policies import MaxIterationsPolicy
from toolreel.web.streams import plain_events, plain_start, ui_parts, ui_start

HERE = Path(__file__).parent
SCHEMA = json.loads((HERE / "ui_message_chunk.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)

ADD = ToolCall(id="call_1", name="add", arguments='{"a": 2, "b": 3}')
DIVIDE = ToolCall(id="call_2", name="divide", arguments='{"a": 1, "b": 0}')
BROKEN = ToolCall(id="call_3", name="add", arguments='{"a": 2,')
ADDED = ToolResult(call_id="call_1", name="add", content='{"result": 5}')
FAILED_DIVIDE = ToolResult(
    call_id="call_2", name="divide", content="ValueError: Cannot divide by zero", is_error=True
)
ROUND = ToolRound(assistant_text="Let me see. ", tool_calls=(ADD, DIVIDE), results=(ADDED,))
USAGE = Usage(input_tokens=30, output_tokens=12)


def finish(outcome: Any, **extra: Any) -> Finish:
    """A turn's Finish with `outcome`, one round and USAGE."""
    return Finish(outcome=outcome, rounds=(ROUND,), iterations=2, usage=USAGE, **extra)


COMPLETED = finish(Completed(text="5"))
CAPPED = finish(Capped(text="", policy=MaxIterationsPolicy.STOP))
FAILED = finish(Failed(code=FailureCode.MODEL_ERROR, message="bad request", status=400))
CANCELLED = finish(Cancelled())
BLOCKED = finish(Blocked(reason="not today"))

#: One of every notice kind but manual mode's ResultsRequested (which ends the message),
#: and the Finish, in an order a turn could tell them.
EVERY_NOTICE: list[Notice | Finish] = [
    ReasoningStreamed(text="2 plus 3"),
    TextStreamed(text="Let me see. "),
    ToolCallStreaming(index=0, call_id="call_1", name="add"),
    ToolArgumentsStreamed(index=0, fragment='{"a": 2, '),
    ToolArgumentsStreamed(index=0, fragment='"b": 3}'),
    ToolCallAnnounced(call=ADD, iteration=1),
    ToolCallAnnounced(call=DIVIDE, iteration=1),
    ToolCallAnnounced(call=BROKEN, iteration=1),
    ToolResultReady(result=ADDED),
    ToolResultReady(result=FAILED_DIVIDE),
    RoundFinished(round=ROUND, iteration=1),
    TextStreamed(text="It is"),
    RetryScheduled(retry=1, seconds=0.5, message="overloaded", status=529),
    TextStreamed(text="It is 5."),
    MessageRecorded(message=ChatMessage(role="assistant", content="It is 5.")),
    AttemptStarted(attempt=1),
    ValidationFailed(attempt=1, problems=("not a number",)),
    COMPLETED,
]


def fold_ui(items: Sequence[Notice | Finish], message_id: str = "msg_1") -> list[dict[str, Any]]:
    """Every part of a message telling `items`; item i arrives at second i."""
    stream, parts = ui_start(message_id)
    for now, item in enumerate(items):
        stream, more = ui_parts(stream, item, float(now))
        parts += more
    return parts


def fold_plain(items: Sequence[Notice | Finish], session_id: str = "s1") -> list[Any]:
    """Every plain event telling `items`; item i arrives at second i."""
    stream, events = plain_start(session_id)
    for now, item in enumerate(items):
        stream, more = plain_events(stream, item, float(now))
        events += more
    return events


def schema_errors(part: dict[str, Any]) -> list[str]:
    """Why `part` is no UI message chunk of the ai package's schema ([] when it is one)."""
    return [error.message for error in VALIDATOR.iter_errors(part)]


def check_ui(parts: Sequence[dict[str, Any]]) -> None:
    """Each part valid against the schema, and in an order the AI SDK's reader accepts."""
    for part in parts:
        assert schema_errors(part) == [], part
    assert parts[0]["type"] == "start"
    assert parts[-1]["type"] == "finish"
    _check_order(parts)


def _check_order(parts: Sequence[dict[str, Any]]) -> None:
    """The rules of processUIMessageStream: ids opened before use, outputs in their step."""
    text: set[str] = set()
    reasoning: set[str] = set()
    calls: set[str] = set()  # announced in the current step
    in_step = False
    for part in parts:
        kind = part["type"]
        if kind == "start-step":
            assert not in_step, "a step started inside a step"
            in_step, calls = True, set()
        elif kind == "finish-step":
            assert in_step and not text and not reasoning, "a step finished with parts open"
            in_step = False
        elif kind == "text-start":
            text.add(part["id"])
        elif kind in ("text-delta", "text-end"):
            assert part["id"] in text, part
            if kind == "text-end":
                text.discard(part["id"])
        elif kind == "reasoning-start":
            reasoning.add(part["id"])
        elif kind in ("reasoning-delta", "reasoning-end"):
            assert part["id"] in reasoning, part
            if kind == "reasoning-end":
                reasoning.discard(part["id"])
        elif kind == "tool-input-start":
            assert in_step, "a call outside a step"
            calls.add(part["toolCallId"])
        elif kind in ("tool-input-delta", "tool-output-available", "tool-output-error"):
            assert part["toolCallId"] in calls, f"{part} is not about a call of this step"
        elif kind == "reset-step":
            assert in_step
            text, reasoning, calls = set(), set(), set()
