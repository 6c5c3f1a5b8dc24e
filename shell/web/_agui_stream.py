"""The loop's notices as the AG-UI event stream (`POST /api/agui`), built with `ag-ui-protocol`.

`agui_events(stream, item, now)` is a pure fold like `ui_parts`: where the
encoding of one run stands and one notice (or the turn's `Finish`, or its pause)
in, the new state and the AG-UI events out. The events are the package's own
pydantic models (so each is valid when made); `agui_sse` writes one as SSE.
This module imports `ag_ui`: only the AG-UI route loads it.

Theory of operation (AG-UI 1.0; the client's rules are `@ag-ui/client`'s verifier):

1. A run is `RUN_STARTED` {threadId: the session, runId: the turn's,
   protocolVersion: the package's `PROTOCOL_VERSION`, which the spec requires}, its
   events, then exactly one of `RUN_FINISHED` or `RUN_ERROR`; nothing after.
2. One model call is one step: `STEP_STARTED` {stepName "round N", N counted
   in the run} opens lazily before its first text, reasoning or call, and
   `STEP_FINISHED` closes it when its round has every result (`RoundFinished`)
   or the run ends (the verifier refuses `RUN_FINISHED` inside a step).
3. Text is `TEXT_MESSAGE_START` (role assistant, id "{runId}-text-N"),
   `TEXT_MESSAGE_CONTENT` per piece, `TEXT_MESSAGE_END` before a call, another
   kind, a step's end or the run's end. Reasoning is the same with
   `REASONING_MESSAGE_*` (id "{runId}-reasoning-N").
4. A call is `TOOL_CALL_START` {toolCallId, toolCallName, parentMessageId: the
   step's text message, if it wrote one} as the model begins writing it
   (`ToolCallStreaming`), a `TOOL_CALL_ARGS` per fragment of its arguments text
   as it arrives (`ToolArgumentsStreamed`), and `TOOL_CALL_END` once it is
   announced (with the rest of its arguments first, if the announced text
   goes on from what was streamed). A call not streamed live (its start gave
   no id, or an id this run already started) is sent whole when announced:
   START, one ARGS with all its arguments, END. Where the ARGS sent for a
   call do not add up to the arguments it is announced with (a codec or a
   hook changed them; an id a retry voided came back), a `CUSTOM`
   "toolreel.tool_input" {toolCallId, arguments} follows its END: the text it
   runs with. A call still streaming when its step ends (a retry voided it,
   the run stopped) is ended there. Its result is `TOOL_CALL_RESULT`
   {messageId "{runId}-result-{callId}", content: the text the model reads},
   with `metadata.toolreel` {is_error, duration_ms}.
5. A call held for approval ends the run paused: `RUN_FINISHED` with outcome
   `interrupt`, one `Interrupt` per held call {id and toolCallId: the call's
   id, reason "tool_approval", message: the hook's reason, responseSchema:
   `APPROVAL_SCHEMA`}. The next run answers them with `resume` entries.
6. The `Finish`: a failed turn is `RUN_ERROR` {message, code: the failure's
   code, usage}; a cancelled one `RUN_FINISHED` outcome `cancelled`; any other
   `RUN_FINISHED` with `result` {text, reason, max_iterations_reached,
   block_reason?, budget?} and `usage` (one `TokenUsage`). Manual mode's
   `ResultsRequested` finishes with `pendingToolCallIds`.
7. What AG-UI has no event for is a `CUSTOM` event named "toolreel.NAME":
   `retry` (a retried model call: the text and the calls it streamed are void),
   `tool_input` (rule 4), `spent`
   (with a budget), `attempt`, `validation_failed`. `MessageRecorded` and
   `ApprovalRequested` send nothing (the history is the server's; the
   interrupt names the held calls).
"""

from __future__ import annotations

from typing import Any, assert_never

import attrs
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Interrupt,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from toolreel.core import AwaitApproval, Finish, ToolCall, Usage
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
)
from ._json import json_text

#: The reason of an interrupt that holds a call for approval.
APPROVAL_REASON = "tool_approval"

#: What a resume entry's payload answers to an approval interrupt.
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AguiStream(Value):
    """Where the AG-UI encoding of one run stands."""

    thread_id: str
    run_id: str
    #: The open step's name, if one is open.
    step: str | None = None
    #: Steps begun so far in this run (their names count on from here).
    steps: int = 0
    #: The text / reasoning message being streamed, if one is.
    text_id: str | None = None
    reasoning_id: str | None = None
    #: Text and reasoning messages begun so far (their ids count on from here).
    made: int = 0
    #: The open step's last text message: the assistant message its calls belong to.
    said: str | None = None
    #: When the step last announced a call: the step's tools run from then on.
    calls_at: float | None = None
    #: `RUN_FINISHED` or `RUN_ERROR` was made: nothing more belongs to this run.
    finished: bool = False
    #: The calls of the open step streaming live: (index, call id, arguments sent) (rule 4).
    live: tuple[tuple[int, str, str], ...] = ()
    #: The ids of the calls this run sent `TOOL_CALL_START` for (rule 4).
    started: frozenset[str] = frozenset()


def agui_sse(event: BaseEvent) -> str:
    """One event as SSE (`data: {json}`, camelCase, unset fields left out)."""
    data = event.model_dump(mode="python", by_alias=True, exclude_none=True)
    return f"data: {json_text(data)}\n\n"


def agui_start(thread_id: str, run_id: str) -> tuple[AguiStream, list[BaseEvent]]:
    """The first state and event (`RUN_STARTED`) of run `run_id` in thread `thread_id`."""
    stream = AguiStream(thread_id=thread_id, run_id=run_id)
    started = RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION)
    return stream, [started]


def agui_events(
    stream: AguiStream, item: Notice | Finish | AwaitApproval, now: float
) -> tuple[AguiStream, list[BaseEvent]]:
    """Fold one notice (or the turn's `Finish` or pause) into the run: new state and events."""
    match item:
        case TextStreamed(text=text):
            return _piece(stream, "text", text)
        case ReasoningStreamed(text=text):
            return _piece(stream, "reasoning", text)
        case ToolCallStreaming(index=index, call_id=call_id, name=name):
            return _call_started(stream, index, call_id, name)
        case ToolArgumentsStreamed(index=index, fragment=fragment):
            return _fragment(stream, index, fragment)
        case ToolCallAnnounced(call=call):
            stream, events = _announced(stream, call)
            return attrs.evolve(stream, calls_at=now), events
        case ToolResultReady(result=result):
            meta: dict[str, Any] = {"is_error": result.is_error}
            duration = elapsed_ms(stream.calls_at, now)
            if duration is not None:
                meta["duration_ms"] = duration
            event = ToolCallResultEvent(
                message_id=f"{stream.run_id}-result-{result.call_id}",
                tool_call_id=result.call_id,
                content=result.content,
                role="tool",
                metadata={"toolreel": meta},
            )
            return stream, [event]
        case RoundFinished():
            return _step_finished(stream)
        case RetryScheduled():
            stream, events = _step_finished(stream)
            return stream, [*events, _custom("retry", retry_json(item))]
        case ModelChanged():
            stream, events = _step_finished(stream)
            return stream, [*events, _custom("model_changed", model_json(item))]
        case ResultsRequested(calls=calls):
            stream, events = _step_finished(stream)
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=[c.id for c in calls])
            events.append(_run_finished(stream, outcome=outcome))
            return attrs.evolve(stream, finished=True), events
        case UsageReported(turn=turn, session=session):
            spent = {"turn": spending_json(turn), "session": spending_json(session)}
            return stream, [_custom("spent", spent)]
        case ApprovalRequested() | MessageRecorded():
            return stream, []
        case AwaitApproval():
            return _paused(stream, item)
        case ContextCompacted():
            return stream, [_custom("compacted", attrs.asdict(item))]
        case AttemptStarted(attempt=attempt):
            return stream, [_custom("attempt", {"attempt": attempt})]
        case ValidationFailed(attempt=attempt, problems=problems):
            data = {"attempt": attempt, "problems": list(problems)}
            return stream, [_custom("validation_failed", data)]
        case Finish():
            return _finish(stream, item)
        case _:
            assert_never(item)


def agui_error(stream: AguiStream, message: str, code: str) -> tuple[AguiStream, list[BaseEvent]]:
    """The turn stopped without a `Finish` (a journal gave up, ...): `RUN_ERROR`."""
    stream, events = _step_finished(stream)
    events.append(RunErrorEvent(message=message, code=code))
    return attrs.evolve(stream, finished=True), events


# --- text, reasoning and steps -----------------------------------------------------------


def _opened(stream: AguiStream) -> tuple[AguiStream, list[BaseEvent]]:
    """The stream inside a step: `STEP_STARTED` if none is open (rule 2)."""
    if stream.step is not None:
        return stream, []
    name = f"round {stream.steps + 1}"
    opened = attrs.evolve(stream, step=name, steps=stream.steps + 1, calls_at=None, said=None)
    return opened, [StepStartedEvent(step_name=name)]


def _closed(stream: AguiStream) -> AguiStream:
    """The stream with no text or reasoning message open (their ends: `_ends`)."""
    return attrs.evolve(stream, text_id=None, reasoning_id=None)


def _ends(stream: AguiStream) -> list[BaseEvent]:
    """The end events of the text and reasoning messages open (rule 3)."""
    events: list[BaseEvent] = []
    if stream.reasoning_id is not None:
        events.append(ReasoningMessageEndEvent(message_id=stream.reasoning_id))
    if stream.text_id is not None:
        events.append(TextMessageEndEvent(message_id=stream.text_id))
    return events


def _piece(stream: AguiStream, kind: str, text: str) -> tuple[AguiStream, list[BaseEvent]]:
    """A piece of `kind` ("text" or "reasoning"): in the open message of that kind, or a new one."""
    if not text:
        return stream, []
    stream, events = _opened(stream)
    message_id = stream.text_id if kind == "text" else stream.reasoning_id
    if message_id is None:
        events += _ends(stream)  # only the other kind can be open
        message_id = f"{stream.run_id}-{kind}-{stream.made + 1}"
        opened: dict[str, Any] = {f"{kind}_id": message_id}
        stream = attrs.evolve(_closed(stream), made=stream.made + 1, **opened)
        if kind == "text":
            stream = attrs.evolve(stream, said=message_id)
            events.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
        else:
            events.append(ReasoningMessageStartEvent(message_id=message_id))
    if kind == "text":
        events.append(TextMessageContentEvent(message_id=message_id, delta=text))
    else:
        events.append(ReasoningMessageContentEvent(message_id=message_id, delta=text))
    return stream, events


def _step_finished(stream: AguiStream) -> tuple[AguiStream, list[BaseEvent]]:
    """Open messages and calls ended and the step finished, if one is open."""
    events = _ends(stream)
    events += [ToolCallEndEvent(tool_call_id=call_id) for _, call_id, _ in stream.live]
    if stream.step is not None:
        events.append(StepFinishedEvent(step_name=stream.step))
    return attrs.evolve(_closed(stream), step=None, calls_at=None, live=()), events


def _custom(name: str, value: dict[str, Any]) -> CustomEvent:
    """What AG-UI has no event for, as `CUSTOM` "toolreel.NAME" (rule 7)."""
    return CustomEvent(name=f"toolreel.{name}", value=value)


# --- tools -------------------------------------------------------------------------------


def _call_started(
    stream: AguiStream, index: int, call_id: str, name: str
) -> tuple[AguiStream, list[BaseEvent]]:
    """The model began writing a call: its `TOOL_CALL_START`, if it can stream live (rule 4)."""
    if not streams_live(call_id, index, stream.started, (at for at, *_ in stream.live)):
        return stream, []
    ends = _ends(stream)
    stream, events = _opened(_closed(stream))
    start = ToolCallStartEvent(
        tool_call_id=call_id, tool_call_name=name, parent_message_id=stream.said
    )
    live = (*stream.live, (index, call_id, ""))
    stream = attrs.evolve(stream, live=live, started=stream.started | {call_id})
    return stream, [*ends, *events, start]


def _fragment(stream: AguiStream, index: int, fragment: str) -> tuple[AguiStream, list[BaseEvent]]:
    """A fragment of a call streaming live: its `TOOL_CALL_ARGS` (rule 4)."""
    for position, (at, call_id, sent) in enumerate(stream.live):
        if at == index and fragment:
            live = list(stream.live)
            live[position] = (at, call_id, sent + fragment)
            event = ToolCallArgsEvent(tool_call_id=call_id, delta=fragment)
            return attrs.evolve(stream, live=tuple(live)), [event]
    return stream, []


def _announced(stream: AguiStream, call: ToolCall) -> tuple[AguiStream, list[BaseEvent]]:
    """A call announced: ended if it streamed live, else sent whole (rule 4)."""
    sent = next((text for _, call_id, text in stream.live if call_id == call.id), None)
    if sent is None and call.id in stream.started:  # a retry ended its live start
        return stream, [_tool_input(call)]
    if sent is None:
        return _sent_whole(stream, call)
    stream = attrs.evolve(stream, live=tuple(e for e in stream.live if e[1] != call.id))
    events: list[BaseEvent] = []
    if call.arguments.startswith(sent) and len(call.arguments) > len(sent):
        events.append(ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments[len(sent) :]))
    events.append(ToolCallEndEvent(tool_call_id=call.id))
    if not call.arguments.startswith(sent):
        events.append(_tool_input(call))
    return stream, events


def _sent_whole(stream: AguiStream, call: ToolCall) -> tuple[AguiStream, list[BaseEvent]]:
    """A call that did not stream live: START, one ARGS with all its arguments, END (rule 4)."""
    ends = _ends(stream)
    stream, events = _opened(_closed(stream))
    start = ToolCallStartEvent(
        tool_call_id=call.id, tool_call_name=call.name, parent_message_id=stream.said
    )
    stream = attrs.evolve(stream, started=stream.started | {call.id})
    args = ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments)
    return stream, [*ends, *events, start, args, ToolCallEndEvent(tool_call_id=call.id)]


def _tool_input(call: ToolCall) -> CustomEvent:
    """The arguments a call runs with, where the ARGS sent for it do not add up to them."""
    return _custom("tool_input", {"toolCallId": call.id, "arguments": call.arguments})


# --- the end -----------------------------------------------------------------------------


def _run_finished(stream: AguiStream, **fields: Any) -> RunFinishedEvent:
    """`RUN_FINISHED` of this run with `fields`."""
    return RunFinishedEvent(thread_id=stream.thread_id, run_id=stream.run_id, **fields)


def token_usage(usage: Usage) -> TokenUsage:
    """A turn's tokens as AG-UI counts them (cache reads and writes are parts of the input)."""
    return TokenUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        cached_input_tokens=usage.cache_read_tokens or None,
        cache_write_input_tokens=usage.cache_write_tokens or None,
    )


def _paused(stream: AguiStream, pause: AwaitApproval) -> tuple[AguiStream, list[BaseEvent]]:
    """The turn paused for approval: the run finishes with one interrupt per held call (rule 5)."""
    stream, events = _step_finished(stream)
    interrupts = [
        Interrupt(
            id=request.call.id,
            reason=APPROVAL_REASON,
            message=request.reason or None,
            tool_call_id=request.call.id,
            response_schema=APPROVAL_SCHEMA,
        )
        for request in pause.requests
    ]
    outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
    events.append(_run_finished(stream, outcome=outcome))
    return attrs.evolve(stream, finished=True), events


def _finish(stream: AguiStream, finish: Finish) -> tuple[AguiStream, list[BaseEvent]]:
    """The turn's end: `RUN_ERROR` if it failed, else `RUN_FINISHED` (rule 6)."""
    stream, events = _step_finished(stream)
    usage = [token_usage(finish.usage)]
    error = finish.error
    if error is not None:
        events.append(RunErrorEvent(message=error.message, code=error.code.value, usage=usage))
    elif finish.reason is FinishReason.CANCELLED:
        events.append(_run_finished(stream, outcome=RunFinishedCancelledOutcome(), usage=usage))
    else:
        result: dict[str, Any] = {
            "text": finish.text,
            "reason": finish.reason.value,
            "max_iterations_reached": finish.max_iterations_reached,
        }
        if finish.block_reason is not None:
            result["block_reason"] = finish.block_reason
        budget = budget_json(finish)
        if budget is not None:
            result["budget"] = budget
        events.append(_run_finished(stream, result=result, usage=usage))
    return attrs.evolve(stream, finished=True), events
