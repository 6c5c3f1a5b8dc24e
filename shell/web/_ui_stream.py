"""The loop's notices as the AI SDK's UI message stream (v1): the parts `useChat()` reads.

`ui_parts(stream, item, now)` is a pure fold, like the core's `step`: it takes
where the encoding of one assistant message stands and one notice (or the
turn's `Finish`) and returns the new state and the parts to send. Nothing in
it reads a clock: `now` (seconds, any monotonic origin) arrives as an argument.

Theory of operation (the part schema is the `ai` package's `uiMessageChunkSchema`;
the client's rules are those of its `processUIMessageStream`):

1. A message is `start` (with its id), its steps, then `finish`; `data: [DONE]`
   closes the SSE stream (`sse`, `DONE`). One model call is one step:
   `start-step` opens lazily, before the first text, reasoning or call of a
   call, and `finish-step` closes it when its round has every result
   (`RoundFinished`) or the turn ends.
2. A tool's output must arrive in the step of its call (the client looks for
   the call among the current step's parts only): results come before the
   round's `finish-step`, as the loop reports them.
3. Text and reasoning are parts with ids (`text-1`, `reasoning-2`, ... per
   message); a part is ended (`-end`) before another kind starts, before a tool
   call, at a round's end and at the turn's end.
4. A call is `tool-input-start` as the model begins writing it
   (`ToolCallStreaming`), a `tool-input-delta` per fragment of its arguments
   text as it arrives (`ToolArgumentsStreamed`; the client shows the partial
   input, state `input-streaming`), then, once announced, `tool-input-available`
   with the arguments as an object; arguments that are not a JSON object give
   `tool-input-error` instead (the loop answers the call with an error result,
   which follows as `tool-output-error`). A call not streamed live (its start
   gave no id, or an id the message already used: the loop makes it unique
   when announcing) is sent whole when announced: its start, one delta with
   all its arguments, then its input. Fragments of a call whose start was
   not sent are not sent.
5. A result is `tool-output-available` (output: the text the model reads) or,
   for an error result (a failure, a refusal, a timeout), `tool-output-error`;
   both carry `providerMetadata.toolreel.duration_ms`, counted from the last
   call the step announced (the model's response ends there and the tools run).
6. A retried model call voids what it streamed: `reset-step` (only inside an
   open step: outside one it would erase the step before), plus a transient
   `data-retry` part saying when the retry starts. A call that falls back to
   another model (`ModelChanged`) voids it the same way, then a
   `data-model-changed` part (kept in the message: the page can say which
   model answered) names the model, the one before and the failure.
7. The `Finish`: a failed turn sends `error` (the provider's message, keys
   masked), then `data-usage` (this turn's tokens), then `finish` with the
   finish reason and `messageMetadata` {reason, max_iterations_reached,
   block_reason, budget (a turn over budget: the limit, its value, the amount
   used)}; a turn over budget finishes `stop` when it has an answer, else
   `length` when tokens or cost ran out, else `other`. Manual mode's
   `ResultsRequested` ends the message like the AI SDK's client-side tools do:
   `finish` with reason `tool-calls`.
8. `MessageRecorded` sends nothing (the history is the server's); the agent's
   `AttemptStarted`/`ValidationFailed` become transient `data-attempt` /
   `data-validation` parts; with a budget, `UsageReported` after each model
   response is a transient `data-spent` part (the turn's and session's spending);
   a compaction (`ContextCompacted`) a transient `data-compacted` part.
9. A call held for approval (`ApprovalRequested`) is a `tool-approval-request`
   part (`approvalId` is the call's id; its `reason`, if any); the pause
   (`AwaitApproval`) ends the message with `finish`, reason `tool-calls`,
   `messageMetadata.reason` "awaiting_approval" and the ids waiting (`approvals`).
10. A stream that continues the client's own assistant message after its
    `addToolApprovalResponse` (`ui_start(..., denied=ids)`) ends each call the
    human denied with `tool-output-denied` (the part's state `output-denied`,
    its `approval` kept), as the `ai` package's own server does; the reason
    still reaches the model as the call's error result.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias, assert_never

import attrs

from toolreel.core import AwaitApproval, Finish, ToolCall, ToolResult, arguments_object
from toolreel.core.notices import (
    ApprovalRequested,
    AttemptStarted,
    ContextCompacted,
    MessageRecorded,
    ModelChanged,
    Notice,
    ReasoningStreamed,
    ResultsRequested,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
    ToolResultReady,
    UsageReported,
    ValidationFailed,
)
from toolreel.core.outcomes import FinishReason
from toolreel.core.record import Value

from ._event_stream import (
    budget_json,
    elapsed_ms,
    model_json,
    retry_json,
    spending_json,
    streams_live,
    usage_json,
)
from ._json import json_text

#: One UI message stream part (a JSON object).
Part: TypeAlias = dict[str, Any]

#: What closes a UI message stream.
DONE = "data: [DONE]\n\n"

#: The response headers of a UI message stream (`x-vercel-ai-ui-message-stream: v1`).
UI_STREAM_HEADERS = {
    "x-vercel-ai-ui-message-stream": "v1",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}

#: The budget limits a turn that ran out of them without an answer reports as `length`.
BUDGET_LENGTH_LIMITS = frozenset({"input_tokens", "output_tokens", "total_tokens", "cost_usd"})

#: The AI SDK finish reason of each provider finish reason that is not plain "stop".
MODEL_FINISH_REASONS = {
    "length": "length",
    "max_tokens": "length",
    "MAX_TOKENS": "length",
    "content_filter": "content-filter",
    "SAFETY": "content-filter",
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UIStream(Value):
    """Where the encoding of one assistant message stands."""

    message_id: str
    #: A step has started and not yet finished.
    step_open: bool = False
    #: The text / reasoning part being streamed, if one is.
    text_id: str | None = None
    reasoning_id: str | None = None
    #: Text and reasoning parts begun so far (their ids count on from here).
    made: int = 0
    #: When the step last announced a call: the step's tools run from then on.
    calls_at: float | None = None
    #: `finish` was sent: nothing more belongs to this message.
    finished: bool = False
    #: Calls the human denied in the client's message this stream continues (rule 10).
    denied: frozenset[str] = frozenset()
    #: The calls of the open step streamed live, as (index, call id) (rule 4).
    live: tuple[tuple[int, str], ...] = ()
    #: The ids of the calls whose `tool-input-start` the message holds (rule 4).
    started: frozenset[str] = frozenset()


def sse(part: Part) -> str:
    """One part as an SSE event (`data: {json}` and a blank line)."""
    return f"data: {json_text(part)}\n\n"


def ui_start(message_id: str, *, denied: Iterable[str] = ()) -> tuple[UIStream, list[Part]]:
    """The first state and part (`start`) of the assistant message `message_id`.

    `denied`: the calls whose denial the client's message already holds, when
    this stream continues it (rule 10).
    """
    stream = UIStream(message_id=message_id, denied=frozenset(denied))
    return stream, [{"type": "start", "messageId": message_id}]


def ui_parts(
    stream: UIStream, item: Notice | Finish | AwaitApproval, now: float
) -> tuple[UIStream, list[Part]]:
    """Fold one notice (or the turn's `Finish`) into the stream: the new state and its parts."""
    match item:
        case TextStreamed(text=text):
            return _piece(stream, "text", text)
        case ReasoningStreamed(text=text):
            return _piece(stream, "reasoning", text)
        case ToolCallStreaming(index=index, call_id=call_id, name=name):
            return _call_started(stream, index, call_id, name)
        case ToolArgumentsStreamed(index=index, fragment=fragment):
            return stream, _fragment_parts(stream, index, fragment)
        case ToolCallAnnounced(call=call):
            ends = _ends(stream)
            stream, parts = _opened(_closed(stream))
            live = call.id in stream.started
            stream = attrs.evolve(stream, calls_at=now, started=stream.started | {call.id})
            return stream, [*ends, *parts, *_call_parts(call, live=live)]
        case ToolResultReady(result=result):
            if result.is_error and result.call_id in stream.denied:
                return stream, [{"type": "tool-output-denied", "toolCallId": result.call_id}]
            return stream, [_result_part(result, elapsed_ms(stream.calls_at, now))]
        case RoundFinished():
            return _step_finished(stream)
        case RetryScheduled():
            return _reset(stream, _transient("data-retry", retry_json(item)))
        case ModelChanged():
            return _reset(stream, {"type": "data-model-changed", "data": model_json(item)})
        case ResultsRequested():
            stream, parts = _step_finished(stream)
            finish = {"type": "finish", "finishReason": "tool-calls"}
            return attrs.evolve(stream, finished=True), [*parts, finish]
        case UsageReported(turn=turn, session=session):
            spent = {"turn": spending_json(turn), "session": spending_json(session)}
            return stream, [_transient("data-spent", spent)]
        case ApprovalRequested(call=call, reason=reason):
            request: Part = {"type": "tool-approval-request", "approvalId": call.id}
            request["toolCallId"] = call.id
            return stream, [{**request, "reason": reason} if reason else request]
        case AwaitApproval():
            return _paused(stream, item)
        case MessageRecorded():
            return stream, []
        case ContextCompacted():
            return stream, [_transient("data-compacted", attrs.asdict(item))]
        case AttemptStarted(attempt=attempt):
            return stream, [_transient("data-attempt", {"attempt": attempt})]
        case ValidationFailed(attempt=attempt, problems=problems):
            data = {"attempt": attempt, "problems": list(problems)}
            return stream, [_transient("data-validation", data)]
        case Finish():
            return _finish(stream, item)
        case _:
            assert_never(item)


def ui_error(stream: UIStream, message: str) -> tuple[UIStream, list[Part]]:
    """The turn stopped without a `Finish` (a journal gave up, ...): `error`, then `finish`."""
    stream, parts = _step_finished(stream)
    parts += [
        {"type": "error", "errorText": message},
        {"type": "finish", "finishReason": "error", "messageMetadata": {"reason": "failed"}},
    ]
    return attrs.evolve(stream, finished=True), parts


# --- text and reasoning ------------------------------------------------------------------


def _opened(stream: UIStream) -> tuple[UIStream, list[Part]]:
    """The stream inside a step: `start-step` if none is open (rule 1)."""
    if stream.step_open:
        return stream, []
    return attrs.evolve(stream, step_open=True, calls_at=None), [{"type": "start-step"}]


def _closed(stream: UIStream) -> UIStream:
    """The stream with no text or reasoning part open (their `-end` parts: `_ends`)."""
    return attrs.evolve(stream, text_id=None, reasoning_id=None)


def _ends(stream: UIStream) -> list[Part]:
    """The `-end` parts of the text and reasoning parts open (rule 3)."""
    parts = []
    if stream.reasoning_id is not None:
        parts.append({"type": "reasoning-end", "id": stream.reasoning_id})
    if stream.text_id is not None:
        parts.append({"type": "text-end", "id": stream.text_id})
    return parts


def _piece(stream: UIStream, kind: str, text: str) -> tuple[UIStream, list[Part]]:
    """A piece of `kind` ("text" or "reasoning"): in the open part of that kind, or a new one."""
    if not text:
        return stream, []
    stream, parts = _opened(stream)
    part_id = stream.text_id if kind == "text" else stream.reasoning_id
    if part_id is None:
        parts += _ends(stream)  # only the other kind can be open
        part_id = f"{kind}-{stream.made + 1}"
        opened: dict[str, Any] = {f"{kind}_id": part_id}
        stream = attrs.evolve(_closed(stream), made=stream.made + 1, **opened)
        parts.append({"type": f"{kind}-start", "id": part_id})
    return stream, [*parts, {"type": f"{kind}-delta", "id": part_id, "delta": text}]


# --- tools -------------------------------------------------------------------------------


def _call_started(
    stream: UIStream, index: int, call_id: str, name: str
) -> tuple[UIStream, list[Part]]:
    """The model began writing a call: its `tool-input-start`, if it can stream live (rule 4)."""
    if not streams_live(call_id, index, stream.started, (at for at, _ in stream.live)):
        return stream, []
    ends = _ends(stream)
    stream, parts = _opened(_closed(stream))
    live = (*stream.live, (index, call_id))
    stream = attrs.evolve(stream, live=live, started=stream.started | {call_id})
    start = {"type": "tool-input-start", "toolCallId": call_id, "toolName": name}
    return stream, [*ends, *parts, start]


def _fragment_parts(stream: UIStream, index: int, fragment: str) -> list[Part]:
    """A fragment of a call streaming live: its `tool-input-delta` (rule 4)."""
    for at, call_id in stream.live:
        if at == index:
            return [{"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": fragment}]
    return []


def _call_parts(call: ToolCall, *, live: bool) -> list[Part]:
    """A call announced: its input (after its start and arguments text unless `live`, rule 4)."""
    ids = {"toolCallId": call.id}
    parts: list[Part] = []
    if not live:
        parts += [
            {"type": "tool-input-start", **ids, "toolName": call.name},
            {"type": "tool-input-delta", **ids, "inputTextDelta": call.arguments},
        ]
    arguments = arguments_object(call.arguments)
    if arguments is None:
        error = "the arguments are not a JSON object"
        parts.append(
            {
                "type": "tool-input-error",
                **ids,
                "toolName": call.name,
                "input": call.arguments,
                "errorText": error,
            }
        )
    else:
        parts.append(
            {"type": "tool-input-available", **ids, "toolName": call.name, "input": arguments}
        )
    return parts


def _result_part(result: ToolResult, duration_ms: int | None) -> Part:
    """A result: its output, or its error (rule 5)."""
    part: Part = {"toolCallId": result.call_id}
    if result.is_error:
        part = {"type": "tool-output-error", **part, "errorText": result.content}
    else:
        part = {"type": "tool-output-available", **part, "output": result.content}
    if duration_ms is not None:
        part["providerMetadata"] = {"toolreel": {"duration_ms": duration_ms}}
    return part


# --- steps and the end -------------------------------------------------------------------


def _step_finished(stream: UIStream) -> tuple[UIStream, list[Part]]:
    """Open parts ended and the step finished, if one is open."""
    parts = _ends(stream)
    if stream.step_open:
        parts.append({"type": "finish-step"})
    return attrs.evolve(_closed(stream), step_open=False, calls_at=None, live=()), parts


def _reset(stream: UIStream, told: Part) -> tuple[UIStream, list[Part]]:
    """A retry (or a fallback) voids the open step's parts, then is `told` (rule 6)."""
    parts = _ends(stream)
    if stream.step_open:
        parts.append({"type": "reset-step"})
    parts.append(told)
    voided = stream.started - {call_id for _, call_id in stream.live}  # (their starts too)
    return attrs.evolve(_closed(stream), calls_at=None, live=(), started=voided), parts


def _transient(kind: str, data: dict[str, Any]) -> Part:
    """A data part the client hands to `onData` and does not keep in the message."""
    return {"type": kind, "data": data, "transient": True}


def finish_reason(finish: Finish) -> str:
    """The AI SDK finish reason of a turn's `Finish`."""
    reason = finish.reason
    if reason is FinishReason.COMPLETED:
        return MODEL_FINISH_REASONS.get(finish.model_finish_reason or "stop", "stop")
    if reason is FinishReason.MAX_ITERATIONS:
        return "tool-calls"  # as streamText's step limit ending on a tool-call step says
    if reason is FinishReason.FAILED:
        return "error"
    if reason is FinishReason.CANCELLED:
        return "interrupted"
    over = finish.over_budget
    if over is not None and over.text is not None:
        return "stop"  # the model answered (FINAL_ANSWER's last call, or an answer past the limit)
    if over is not None and over.limit_name in BUDGET_LENGTH_LIMITS:
        return "length"  # as a provider's token limit says
    return "other"  # BLOCKED: the prompt hook stopped it (metadata says why)


def _paused(stream: UIStream, pause: AwaitApproval) -> tuple[UIStream, list[Part]]:
    """The turn paused for approval: the message ends, saying which calls wait (rule 9)."""
    stream, parts = _step_finished(stream)
    waiting = [request.call.id for request in pause.requests]
    metadata = {"reason": "awaiting_approval", "approvals": waiting}
    parts.append({"type": "finish", "finishReason": "tool-calls", "messageMetadata": metadata})
    return attrs.evolve(stream, finished=True), parts


def _finish(stream: UIStream, finish: Finish) -> tuple[UIStream, list[Part]]:
    """The turn's end: error if it failed, its usage, then `finish` (rule 7)."""
    stream, parts = _step_finished(stream)
    if finish.error is not None:
        parts.append({"type": "error", "errorText": finish.error.message})
    parts.append({"type": "data-usage", "data": usage_json(finish.usage)})
    metadata: dict[str, Any] = {
        "reason": finish.reason.value,
        "max_iterations_reached": finish.max_iterations_reached,
    }
    if finish.block_reason is not None:
        metadata["block_reason"] = finish.block_reason
    budget = budget_json(finish)
    if budget is not None:
        metadata["budget"] = budget
    parts.append(
        {"type": "finish", "finishReason": finish_reason(finish), "messageMetadata": metadata}
    )
    return attrs.evolve(stream, finished=True), parts
