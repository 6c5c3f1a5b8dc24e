"""The loop's notices as a plain JSON event stream: one SSE `event:`/`data:` pair per notice.

For backends whose frontend is not the AI SDK's (`POST /api/events`). Like
`ui_parts`, `plain_events(stream, item, now)` is a pure fold: the new state and
the `(type, data)` pairs one notice (or the turn's `Finish`) stands for.

- `session` `{id}`: first; the session the turn runs in (send it back to continue).
- `text` `{text}` / `reasoning` `{text}`: a piece of the model's text / reasoning.
- `tool_call_start` `{index, id, name}`: the model began writing a call (`index`:
  its place in the model's response).
- `tool_call_delta` `{index, fragment}`: a piece of the arguments text of the call
  begun at `index`, as the model writes it (the pieces joined are the JSON text).
- `tool_call` `{id, name, arguments}`: the model called a tool (arguments: the
  object, or the text when it is not a JSON object).
- `tool_result` `{id, name, content, is_error, duration_ms}`: a call's result;
  `duration_ms` counts from the last call its round announced.
- `round` `{number}`: every call of round `number` has its result.
- `retry` `{retry, seconds, message, status}`: a model call failed and is
  retried; the text it streamed is void.
- `results_requested` `{calls: [{id, name, arguments}]}`: manual mode; the
  caller must add these results.
- `approval_requested` `{id, name, arguments, reason}`: the call is held until
  a human approves or denies it (`POST /api/approvals`).
- `attempt` `{attempt}` / `validation_failed` `{attempt, problems}`: an agent's
  attempt starts / fails validation.
- `spent` `{turn, session}`: with a budget, after each model response: what
  the turn and the session spent so far (`spending_json`).
- `compacted` `{first, start, summary, too_long, tokens}`: the compaction policy
  left messages `first` to `start - 1` out of the requests (`ContextCompacted`).
- `usage` `{input_tokens, output_tokens}`: the turn's tokens, at its end (with
  `cache_read_tokens` / `cache_write_tokens`, of the input, when the prompt cache was used).
- `error` `{message, code}`: the turn failed (`code`: `model_error`,
  `retries_exhausted`, `max_iterations`, or the error's kind, e.g. `journal_unavailable`).
- `done` `{reason, max_turns_reached, text}`: last; how the turn ended, its answer;
  a turn over budget adds `budget` `{limit_name, limit, used, scope, message}`
  (`reason` "awaiting_approval", with `approvals` [ids]: the turn is paused).

`MessageRecorded` sends nothing (the history is the server's).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias, assert_never

import attrs

from toolreel.core import AwaitApproval, Finish, ToolCall, Usage, arguments_object
from toolreel.core.budget import Spending
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
from toolreel.core.record import Value

from ._json import json_text

#: One event of the plain stream: its type and its data.
PlainEvent: TypeAlias = tuple[str, dict[str, Any]]

#: The response headers of the plain event stream.
EVENT_STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PlainStream(Value):
    """Where the plain encoding of one turn stands."""

    session_id: str
    #: When the round last announced a call: its tools run from then on.
    calls_at: float | None = None


def sse_event(kind: str, data: dict[str, Any]) -> str:
    """One event as SSE: `event: kind`, `data: {json}`, a blank line."""
    encoded = json_text(data)
    return f"event: {kind}\ndata: {encoded}\n\n"


def plain_start(session_id: str) -> tuple[PlainStream, list[PlainEvent]]:
    """The first state and event (`session`) of a turn in `session_id`."""
    return PlainStream(session_id=session_id), [("session", {"id": session_id})]


def plain_events(
    stream: PlainStream, item: Notice | Finish | AwaitApproval, now: float
) -> tuple[PlainStream, list[PlainEvent]]:
    """Fold one notice (or the turn's `Finish`) into the stream: the new state and its events."""
    match item:
        case TextStreamed(text=text):
            return stream, [("text", {"text": text})] if text else []
        case ReasoningStreamed(text=text):
            return stream, [("reasoning", {"text": text})] if text else []
        case ToolCallStreaming(index=index, call_id=call_id, name=name):
            return stream, [("tool_call_start", {"index": index, "id": call_id, "name": name})]
        case ToolArgumentsStreamed(index=index, fragment=fragment):
            return stream, [("tool_call_delta", {"index": index, "fragment": fragment})]
        case ToolCallAnnounced(call=call):
            return attrs.evolve(stream, calls_at=now), [("tool_call", call_json(call))]
        case ToolResultReady(result=result):
            data = {
                "id": result.call_id,
                "name": result.name,
                "content": result.content,
                "is_error": result.is_error,
                "duration_ms": elapsed_ms(stream.calls_at, now),
            }
            return stream, [("tool_result", data)]
        case RoundFinished(iteration=iteration):
            return attrs.evolve(stream, calls_at=None), [("round", {"number": iteration})]
        case RetryScheduled():
            return attrs.evolve(stream, calls_at=None), [("retry", retry_json(item))]
        case ModelChanged():
            return attrs.evolve(stream, calls_at=None), [("model_changed", model_json(item))]
        case ResultsRequested(calls=calls):
            return stream, [("results_requested", {"calls": [call_json(call) for call in calls]})]
        case UsageReported(turn=turn, session=session):
            return stream, [
                ("spent", {"turn": spending_json(turn), "session": spending_json(session)})
            ]
        case ApprovalRequested(call=call, reason=reason):
            return stream, [("approval_requested", {**call_json(call), "reason": reason})]
        case AwaitApproval(requests=requests):
            done = {
                "reason": "awaiting_approval",
                "max_turns_reached": False,
                "text": "",
                "approvals": [request.call.id for request in requests],
            }
            return stream, [("done", done)]
        case MessageRecorded():
            return stream, []
        case ContextCompacted():
            return stream, [("compacted", attrs.asdict(item))]
        case AttemptStarted(attempt=attempt):
            return stream, [("attempt", {"attempt": attempt})]
        case ValidationFailed(attempt=attempt, problems=problems):
            return stream, [("validation_failed", {"attempt": attempt, "problems": list(problems)})]
        case Finish():
            return stream, _finish(item)
        case _:
            assert_never(item)


def plain_error(message: str, code: str) -> list[PlainEvent]:
    """The turn stopped without a `Finish` (a journal gave up, ...): `error`, then `done`."""
    done = {"reason": "failed", "max_turns_reached": False, "text": ""}
    return [("error", {"message": message, "code": code}), ("done", done)]


def call_json(call: ToolCall) -> dict[str, Any]:
    """A call as JSON: its arguments as an object, or as the text when they are not one."""
    arguments = arguments_object(call.arguments)
    shown: Any = call.arguments if arguments is None else arguments
    return {"id": call.id, "name": call.name, "arguments": shown}


def elapsed_ms(since: float | None, now: float) -> int | None:
    """Milliseconds since the round's calls were announced at `since`, if they were."""
    if since is None:
        return None
    return max(0, round((now - since) * 1000))


def streams_live(call_id: str, index: int, started: frozenset[str], live: Iterable[int]) -> bool:
    """Whether a call the model began can be told live as it is written (the UI and AG-UI
    streams' rule 4): it has an id, one the message has not used, at an index not already
    streaming. Else it is told whole once announced (the loop makes its id unique then)."""
    return bool(call_id) and call_id not in started and index not in live


def usage_json(usage: Usage) -> dict[str, int]:
    """A turn's tokens as JSON; the prompt-cache counters only when the cache was used."""
    data = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    if usage.cache_read_tokens:
        data["cache_read_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        data["cache_write_tokens"] = usage.cache_write_tokens
    return data


def spending_json(spending: Spending) -> dict[str, Any]:
    """What was spent as JSON: tokens, model calls, tool calls (by name) and cost in USD."""
    return {
        **usage_json(spending.usage),
        "model_calls": spending.model_calls,
        "tool_calls": dict(spending.tool_calls),
        "cost_usd": spending.cost,
    }


def budget_json(finish: Finish) -> dict[str, Any] | None:
    """The limit a turn over budget ran out of, as JSON; None for any other turn."""
    over = finish.over_budget
    if over is None:
        return None
    return {
        "limit_name": over.limit_name,
        "limit": over.limit,
        "used": over.used,
        "scope": over.scope.value,
        "message": over.message,
    }


def retry_json(retry: RetryScheduled) -> dict[str, Any]:
    """A retry as JSON: which one, when it starts, and the failure that caused it."""
    return {
        "retry": retry.retry,
        "seconds": retry.seconds,
        "message": retry.message,
        "status": retry.status,
    }


def model_json(changed: ModelChanged) -> dict[str, Any]:
    """A fallback as JSON: the model now asked, its position, the one before and why."""
    return {
        "model": changed.model,
        "index": changed.index,
        "previous": changed.previous,
        "message": changed.message,
        "status": changed.status,
    }


def _finish(finish: Finish) -> list[PlainEvent]:
    """The turn's end: its usage, an error if it failed, then `done`."""
    events: list[PlainEvent] = [("usage", usage_json(finish.usage))]
    if finish.error is not None:
        error = {"message": finish.error.message, "code": finish.error.code.value}
        events.append(("error", error))
    done: dict[str, Any] = {
        "reason": finish.reason.value,
        "max_turns_reached": finish.max_iterations_reached,
        "text": finish.text,
    }
    budget = budget_json(finish)
    if budget is not None:
        done["budget"] = budget
    events.append(("done", done))
    return events
