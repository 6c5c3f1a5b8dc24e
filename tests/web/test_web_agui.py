"""`POST /api/agui`: an AG-UI `RunAgentInput` in, the AG-UI event stream out.

Every event is parsed back with `ag-ui-protocol`'s own models (the `Event` union),
and `check_run` holds the run to the rules `@ag-ui/client`'s verifier enforces:
RUN_STARTED first, one RUN_FINISHED / RUN_ERROR last, text messages, tool calls
and steps opened before and closed before the run ends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx2
import pytest
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter
from test_web_app import call, options
from web_support import BLOCKED, CANCELLED, CAPPED, COMPLETED, EVERY_NOTICE, FAILED, ROUND

from toolreel.adapters import JournalError, MemoryJournal
from toolreel.core import AwaitApproval, ToolCall
from toolreel.core.notices import (
    ApprovalRequested,
    RetryScheduled,
    RoundFinished,
    TextStreamed,
    ToolArgumentsStreamed,
    ToolCallAnnounced,
    ToolCallStreaming,
)
from toolreel.shell import AgentOptions, scripted, tool
from toolreel.shell.scripted import Reply, ScriptedServer
from toolreel.testing import MakeScriptedModel, http_error
from toolreel.web import app
from toolreel.web._agui_stream import agui_events, agui_start
from toolreel.web._respond import agui_stream

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def run_input(
    text: str | None = "What is 25 plus 17?",
    thread: str = "thread-1",
    run: str = "run-1",
    **extra: Any,
) -> dict[str, Any]:
    """The body `HttpAgent.runAgent()` posts: a user message (or none), in `thread`."""
    messages = [] if text is None else [{"id": "u1", "role": "user", "content": text}]
    return {
        "threadId": thread,
        "runId": run,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
        **extra,
    }


def events_of(response: httpx2.Response) -> list[Any]:
    """The AG-UI events of a response, each validated by ag-ui-protocol's models."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = [c for c in response.text.split("\n\n") if c]
    events = [EVENTS.validate_python(json.loads(c.removeprefix("data: "))) for c in chunks]
    check_run(events)
    return events


def check_run(events: list[Any]) -> None:
    """The run's shape as @ag-ui/client's verifier requires it."""
    assert events[0].type is EventType.RUN_STARTED
    assert events[-1].type in (EventType.RUN_FINISHED, EventType.RUN_ERROR)
    assert all(e.type not in (EventType.RUN_FINISHED, EventType.RUN_ERROR) for e in events[:-1])
    texts: set[str] = set()
    calls: set[str] = set()
    steps: set[str] = set()
    for event in events:
        match event.type:
            case EventType.TEXT_MESSAGE_START:
                assert event.message_id not in texts
                texts.add(event.message_id)
            case EventType.TEXT_MESSAGE_CONTENT:
                assert event.message_id in texts
            case EventType.TEXT_MESSAGE_END:
                texts.remove(event.message_id)
            case EventType.TOOL_CALL_START:
                assert event.tool_call_id not in calls  # "already in progress"
                calls.add(event.tool_call_id)
            case EventType.TOOL_CALL_ARGS:
                assert event.tool_call_id in calls
            case EventType.TOOL_CALL_END:
                calls.remove(event.tool_call_id)
            case EventType.STEP_STARTED:
                steps.add(event.step_name)
            case EventType.STEP_FINISHED:
                steps.remove(event.step_name)
    assert (texts, calls, steps) == (set(), set(), set())


def of_type(events: list[Any], kind: EventType) -> list[Any]:
    """The events of one type."""
    return [e for e in events if e.type is kind]


def text_of(events: list[Any]) -> str:
    """Every text message content, joined."""
    return "".join(e.delta for e in of_type(events, EventType.TEXT_MESSAGE_CONTENT))


@pytest.fixture(scope="module")
def calculator() -> Iterator[ScriptedServer]:
    """The scripted calculator model, on 127.0.0.1."""
    with ScriptedServer(scripted.calculator) as server:
        yield server


def test_every_notice_folds_into_valid_events_of_one_run() -> None:
    stream, events = agui_start("t", "r")
    for now, item in enumerate(EVERY_NOTICE):
        stream, more = agui_events(stream, item, float(now))
        events += more
    parsed = [EVENTS.validate_python(e.model_dump(by_alias=True)) for e in events]
    check_run(parsed)
    kinds = [e.type for e in parsed]
    assert EventType.REASONING_MESSAGE_START in kinds
    assert [e.name for e in of_type(parsed, EventType.CUSTOM)] == [
        "toolreel.retry",
        "toolreel.attempt",
        "toolreel.validation_failed",
    ]
    [finished] = of_type(parsed, EventType.RUN_FINISHED)
    assert finished.result["text"] == "5" and finished.usage[0].input_tokens == 30


def folded(*items: Any) -> list[Any]:
    """The events of a run telling `items`, parsed back and checked."""
    stream, events = agui_start("t", "r")
    for item in items:
        stream, more = agui_events(stream, item, 0.0)
        events += more
    parsed = [EVENTS.validate_python(e.model_dump(by_alias=True)) for e in events]
    check_run(parsed)
    return parsed


@pytest.mark.parametrize(
    ("end", "last", "says"),
    [
        (FAILED, EventType.RUN_ERROR, {"message": "bad request", "code": "model_error"}),
        (CANCELLED, EventType.RUN_FINISHED, {"outcome": {"type": "cancelled"}}),
        (CAPPED, EventType.RUN_FINISHED, {"result": {"reason": "max_iterations"}}),
        (BLOCKED, EventType.RUN_FINISHED, {"result": {"block_reason": "not today"}}),
    ],
)
def test_every_way_a_turn_ends_closes_the_open_step_and_ends_the_run(
    end: Any, last: EventType, says: dict[str, Any]
) -> None:
    events = folded(TextStreamed(text="Hm"), end)
    assert events[-1].type is last and events[-2].type is EventType.STEP_FINISHED
    data = events[-1].model_dump(mode="json", by_alias=True, exclude_none=True)
    for key, value in says.items():
        assert value.items() <= data[key].items() if isinstance(value, dict) else data[key] == value
    assert data["usage"] == [{"inputTokens": 30, "outputTokens": 12, "totalTokens": 42}]


def test_a_round_s_end_finishes_its_step_and_the_next_text_opens_another() -> None:
    events = folded(
        TextStreamed(text="a"),
        RoundFinished(round=ROUND, iteration=1),
        TextStreamed(text="b"),
        COMPLETED,
    )
    kinds = [e.type for e in events[1:]]
    assert kinds[:5] == [
        EventType.STEP_STARTED,
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_END,
        EventType.STEP_FINISHED,
    ]
    assert [e.step_name for e in of_type(events, EventType.STEP_STARTED)] == ["round 1", "round 2"]


def test_an_error_the_turn_raises_mid_stream_ends_the_run_with_run_error() -> None:
    async def items() -> AsyncIterator[Any]:
        yield TextStreamed(text="Hm")
        raise JournalError("the journal gave up")

    async def chunks() -> list[str]:
        return [c async for c in agui_stream(items(), thread_id="t", run_id="r")]

    events = [EVENTS.validate_json(c.removeprefix("data: ")) for c in anyio.run(chunks)]
    check_run(events)
    assert events[-1].type is EventType.RUN_ERROR
    assert "the journal gave up" in events[-1].message and events[-1].code == "journal_error"


def fold_agui(items: list[Any]) -> list[Any]:
    """The events of one run telling `items` (item i at second i), parsed back."""
    stream, events = agui_start("t", "r")
    for now, item in enumerate(items):
        stream, more = agui_events(stream, item, float(now))
        events += more
    return [EVENTS.validate_python(e.model_dump(by_alias=True)) for e in events]


def calls_of(events: list[Any]) -> list[tuple[str, str]]:
    """The tool-call events, as (type, what they carry), in order."""
    told: list[tuple[str, str]] = []
    for e in events:
        if e.type is EventType.TOOL_CALL_START:
            told.append(("START", e.tool_call_id))
        elif e.type is EventType.TOOL_CALL_ARGS:
            told.append(("ARGS", e.delta))
        elif e.type is EventType.TOOL_CALL_END:
            told.append(("END", e.tool_call_id))
        elif e.type is EventType.CUSTOM and e.name == "toolreel.tool_input":
            told.append(("tool_input", e.value["arguments"]))
    return told


ADD = ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')


def test_a_call_is_started_as_it_is_written_its_fragments_sent_as_they_arrive() -> None:
    events = fold_agui(
        [
            TextStreamed(text="Let me see. "),
            ToolCallStreaming(index=0, call_id="c1", name="add"),
            ToolArgumentsStreamed(index=0, fragment='{"a": 2, '),
            ToolArgumentsStreamed(index=0, fragment='"b": 3}'),
            ToolCallAnnounced(call=ADD, iteration=1),
            RoundFinished(round=ROUND, iteration=1),
            COMPLETED,
        ]
    )
    check_run(events)
    kinds = [e.type for e in events]
    assert kinds.index(EventType.TEXT_MESSAGE_END) < kinds.index(EventType.TOOL_CALL_START)
    [start] = of_type(events, EventType.TOOL_CALL_START)
    assert start.parent_message_id == "r-text-1"  # the call joins the text written before it
    assert calls_of(events) == [
        ("START", "c1"),
        ("ARGS", '{"a": 2, '),
        ("ARGS", '"b": 3}'),
        ("END", "c1"),
    ]


def test_announced_arguments_that_go_on_from_the_streamed_text_send_the_rest() -> None:
    events = fold_agui(
        [
            ToolCallStreaming(index=0, call_id="c1", name="add"),
            ToolArgumentsStreamed(index=0, fragment='{"a": 2, '),
            ToolCallAnnounced(call=ADD, iteration=1),
            COMPLETED,
        ]
    )
    assert calls_of(events) == [
        ("START", "c1"),
        ("ARGS", '{"a": 2, '),
        ("ARGS", '"b": 3}'),
        ("END", "c1"),
    ]


def test_announced_arguments_unlike_the_streamed_text_are_told_after_the_end() -> None:
    events = fold_agui(
        [
            ToolCallStreaming(index=0, call_id="c1", name="add"),
            ToolArgumentsStreamed(index=0, fragment='{"a": 9}'),
            ToolCallAnnounced(call=ADD, iteration=1),
            COMPLETED,
        ]
    )
    check_run(events)
    assert calls_of(events) == [
        ("START", "c1"),
        ("ARGS", '{"a": 9}'),
        ("END", "c1"),
        ("tool_input", '{"a": 2, "b": 3}'),
    ]


def test_a_call_without_an_id_or_at_an_index_already_live_is_sent_whole() -> None:
    other = ToolCall(id="c2", name="add", arguments="{}")
    events = fold_agui(
        [
            ToolCallStreaming(index=0, call_id="", name="add"),
            ToolArgumentsStreamed(index=0, fragment="{}"),
            ToolCallStreaming(index=1, call_id="c1", name="add"),
            ToolCallStreaming(index=1, call_id="c2", name="add"),
            ToolArgumentsStreamed(index=1, fragment='{"a": 2, "b": 3}'),
            ToolCallAnnounced(call=ADD, iteration=1),
            ToolCallAnnounced(call=other, iteration=1),
            COMPLETED,
        ]
    )
    check_run(events)
    assert calls_of(events) == [
        ("START", "c1"),
        ("ARGS", '{"a": 2, "b": 3}'),
        ("END", "c1"),
        ("START", "c2"),
        ("ARGS", "{}"),
        ("END", "c2"),
    ]


def test_a_retry_ends_a_call_being_written_and_its_id_back_is_told_as_tool_input() -> None:
    events = fold_agui(
        [
            ToolCallStreaming(index=0, call_id="c1", name="add"),
            ToolArgumentsStreamed(index=0, fragment='{"a": 2, '),
            RetryScheduled(retry=1, seconds=0.5, message="overloaded", status=529),
            ToolCallStreaming(index=0, call_id="c1", name="add"),
            ToolArgumentsStreamed(index=0, fragment='{"a": 2, "b": 3}'),
            ToolCallAnnounced(call=ADD, iteration=1),
            COMPLETED,
        ]
    )
    check_run(events)  # one START per id: the verifier refuses a second
    assert calls_of(events) == [
        ("START", "c1"),
        ("ARGS", '{"a": 2, '),
        ("END", "c1"),
        ("tool_input", '{"a": 2, "b": 3}'),
    ]
    kinds = [e.type for e in events]
    retry = next(i for i, e in enumerate(events) if getattr(e, "name", "") == "toolreel.retry")
    assert kinds.index(EventType.TOOL_CALL_END) < retry


def test_a_call_still_streaming_when_the_run_ends_is_ended_first() -> None:
    events = fold_agui(
        [
            ToolCallStreaming(index=0, call_id="c1", name="add"),
            ToolArgumentsStreamed(index=0, fragment='{"a"'),
            CANCELLED,
        ]
    )
    check_run(events)
    assert calls_of(events) == [("START", "c1"), ("ARGS", '{"a"'), ("END", "c1")]


def test_a_served_call_streams_its_arguments_fragment_by_fragment(
    calculator: ScriptedServer,
) -> None:
    events = events_of(call(app(options(calculator)), "POST", "/api/agui", run_input()))
    told = calls_of(events)
    fragments = [what for kind, what in told if kind == "ARGS"]
    assert len(fragments) >= 2  # one per fragment the model streamed, not one with the whole text
    assert [kind for kind, _ in told] == ["START", *["ARGS"] * len(fragments), "END"]
    assert json.loads("".join(fragments)) == {"a": 25, "b": 17}


def test_a_tool_round_is_steps_calls_results_and_the_answer(calculator: ScriptedServer) -> None:
    events = events_of(call(app(options(calculator)), "POST", "/api/agui", run_input()))
    started = events[0]
    assert (started.thread_id, started.run_id) == ("thread-1", "run-1")
    assert started.protocol_version == "1.0"
    [start] = of_type(events, EventType.TOOL_CALL_START)
    written = "".join(e.delta for e in of_type(events, EventType.TOOL_CALL_ARGS))
    [result] = of_type(events, EventType.TOOL_CALL_RESULT)
    assert start.tool_call_name == "add" and json.loads(written) == {"a": 25, "b": 17}
    said = of_type(events, EventType.TEXT_MESSAGE_START)[0].message_id
    assert start.parent_message_id == said == "run-1-text-1"  # the call joins the step's text
    assert result.tool_call_id == start.tool_call_id and "42" in result.content
    assert result.metadata["toolreel"]["is_error"] is False
    names = [e.step_name for e in of_type(events, EventType.STEP_STARTED)]
    assert names == ["round 1", "round 2"]
    assert "The answer is 42." in text_of(events)
    finished = events[-1]
    assert finished.type is EventType.RUN_FINISHED and finished.outcome is None
    assert finished.result["reason"] == "completed"


def test_the_thread_is_the_session_a_new_one_when_unknown(calculator: ScriptedServer) -> None:
    journal = MemoryJournal()
    web = app(options(calculator), journal=journal)
    events_of(call(web, "POST", "/api/agui", run_input(thread="t-new")))
    second = run_input("What is 2 times 3?", thread="t-new", run="run-2")
    events = events_of(call(web, "POST", "/api/agui", second))
    assert events[0].run_id == "run-2" and "6" in text_of(events)
    detail = call(web, "GET", "/api/sessions/t-new").json()
    assert len(detail["turns"]) == 2


def test_a_failed_model_call_is_run_error(scripted_model: MakeScriptedModel) -> None:
    model = scripted_model([http_error(400, "this model does not exist")])
    events = events_of(call(app(model.options()), "POST", "/api/agui", run_input("hi")))
    error = events[-1]
    assert error.type is EventType.RUN_ERROR
    assert "this model does not exist" in error.message and error.code == "model_error"


@pytest.mark.parametrize(
    "body",
    [
        {"threadId": "t", "messages": []},  # no runId
        {"threadId": "t", "runId": "r", "messages": [{"role": "user"}]},  # a message without id
        run_input(None),  # neither a user message nor resume entries
        run_input("   "),
        run_input(thread="a/b"),
        run_input(resume=[{"interruptId": "c1", "status": "resolved", "payload": "yes"}]),
        [1, 2],
    ],
)
def test_bad_input_is_400_and_starts_no_run(calculator: ScriptedServer, body: Any) -> None:
    response = call(app(options(calculator)), "POST", "/api/agui", body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]


DELETED: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


def delete_model(request: dict[str, Any]) -> Reply:
    """Calls `delete` once (as c1), then answers with the tool result it read."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(calls=(("c1", "delete", json.dumps({"path": "a.txt"})),))
    return Reply(text="Result: " + results[0])


@pytest.fixture
def held() -> Iterator[Any]:
    """An app whose `delete` is held for approval."""
    DELETED.clear()
    with ScriptedServer(delete_model) as server:
        agent = AgentOptions(model="m", base_url=server.url, api_key="sk-test", tools=[delete])
        yield app(agent, journal=MemoryJournal())


def resumed(run: str, *entries: dict[str, Any]) -> dict[str, Any]:
    """A run answering the interrupts of thread-1's last run."""
    return run_input(None, run=run, resume=list(entries))


def test_a_held_call_is_an_interrupt_and_resolving_it_continues(held: Any) -> None:
    first = events_of(call(held, "POST", "/api/agui", run_input("Delete a.txt")))
    [start] = of_type(first, EventType.TOOL_CALL_START)
    assert start.tool_call_id == "c1" and of_type(first, EventType.TOOL_CALL_RESULT) == []
    outcome = first[-1].outcome
    assert outcome.type == "interrupt"
    [interrupt] = outcome.interrupts
    assert (interrupt.id, interrupt.tool_call_id, interrupt.reason) == ("c1", "c1", "tool_approval")
    assert interrupt.response_schema["required"] == ["approved"]
    assert DELETED == []
    entry = {"interruptId": "c1", "status": "resolved", "payload": {"approved": True}}
    second = events_of(call(held, "POST", "/api/agui", resumed("run-2", entry)))
    assert second[0].run_id == "run-2"
    [result] = of_type(second, EventType.TOOL_CALL_RESULT)
    assert result.tool_call_id == "c1" and result.content == "deleted a.txt"
    assert of_type(second, EventType.TOOL_CALL_START) == []  # the call was the first run's
    assert "Result: deleted a.txt" in text_of(second)
    assert second[-1].type is EventType.RUN_FINISHED and second[-1].outcome is None
    assert DELETED == ["a.txt"]


@pytest.mark.parametrize(
    "entry",
    [
        {"interruptId": "c1", "status": "resolved", "payload": {"approved": False, "reason": "no"}},
        {"interruptId": "c1", "status": "cancelled"},
    ],
)
def test_denying_or_cancelling_the_interrupt_gives_the_model_an_error(
    held: Any, entry: dict[str, Any]
) -> None:
    events_of(call(held, "POST", "/api/agui", run_input("Delete a.txt")))
    second = events_of(call(held, "POST", "/api/agui", resumed("run-2", entry)))
    [result] = of_type(second, EventType.TOOL_CALL_RESULT)
    assert result.metadata["toolreel"]["is_error"] is True
    assert DELETED == []
    assert second[-1].type is EventType.RUN_FINISHED


def test_resuming_an_unknown_call_or_thread_is_refused(held: Any) -> None:
    events_of(call(held, "POST", "/api/agui", run_input("Delete a.txt")))
    entry = {"interruptId": "c9", "status": "resolved", "payload": {"approved": True}}
    assert call(held, "POST", "/api/agui", resumed("run-2", entry)).status_code == 400
    elsewhere = run_input(None, thread="nowhere", resume=[entry])
    assert call(held, "POST", "/api/agui", elsewhere).status_code == 404
    again = call(held, "POST", "/api/agui", run_input("Delete b.txt", run="run-3"))
    assert again.status_code == 409 and again.json()["approvals"] == ["c1"]


def test_a_pause_folds_into_one_interrupt_per_held_call() -> None:
    first = ToolCallAnnounced(call=delete_call("c1"), iteration=1)
    requests = (ApprovalRequested(call=delete_call("c1"), reason="it deletes"),)
    stream, events = agui_start("t", "r")
    for item in (first, *requests, AwaitApproval(requests=requests)):
        stream, more = agui_events(stream, item, 0.0)
        events += more
    last = events[-1]
    assert stream.finished and last.type is EventType.RUN_FINISHED
    assert [(i.id, i.message) for i in last.outcome.interrupts] == [("c1", "it deletes")]


def delete_call(call_id: str) -> ToolCall:
    """A call of `delete`."""
    return ToolCall(id=call_id, name="delete", arguments='{"path": "a.txt"}')
