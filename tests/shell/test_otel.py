"""Traces: `toolreel.otel.instrument()` makes GenAI spans of turns, model calls and tool calls.

Through the public API (a Client or `execute_agent` against a scripted
OpenAI-compatible server on 127.0.0.1), read with the SDK's
`InMemorySpanExporter`. Skipped, with the reason, where OpenTelemetry's SDK
is not installed (`pip install 'toolreel[otel]'`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import attrs
import pytest

pytest.importorskip("opentelemetry.sdk", reason="OpenTelemetry is not installed: toolreel[otel]")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from toolreel import otel
from toolreel.core import Finish
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentSuccess,
    Client,
    OutputTool,
    execute_agent,
    tool,
)
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, text, tool_calls

KEY = "sk-live-0123456789abcdefghijklmnop"
FAST = RetryPolicy(base_delay=0.001, max_delay=0.001)

add = tool("add", "Add", {"a": int, "b": int})(lambda args: args["a"] + args["b"])


@tool
def fails(word: str) -> str:
    """A tool that raises, repeating the key it was handed."""
    raise RuntimeError(f"auth failed for {KEY}")


@tool
def current_span_name(word: str) -> str:
    """The name of the span current while the tool runs (in its worker thread)."""
    span = trace.get_current_span()
    return getattr(span, "name", "none")


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Instrument with a provider of our own for the test; uninstrument after it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    yield exporter
    otel.uninstrument()


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    extra.setdefault("auto_execute_tools", True)
    extra.setdefault("api_key", "sk-test")
    return AgentOptions(
        model="test",
        base_url=server.url,
        tools=[add, fails, current_span_name],
        retry=FAST,
        **extra,
    )


def turn(script: list[Reply], **extra: Any) -> Finish:
    """One Client turn against `script` (session "s1"); its Finish."""
    with ScriptedServer(script) as server:

        async def main() -> Finish:
            async with Client(options(server, session_id="s1", **extra)) as client:
                await client.query("go")
                finish = await client.wait()
                assert finish is not None
                return finish

        return anyio.run(main)


def named(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    """The finished spans by name, in the order they ended."""
    found: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_a_turn_is_one_span_with_model_and_parallel_tool_spans_under_it(
    spans: InMemorySpanExporter,
) -> None:
    script = [
        tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
        text("done"),
    ]
    turn(script)
    by_name = named(spans)
    assert sorted(by_name) == ["chat test", "execute_tool add", "invoke_agent"]
    [agent] = by_name["invoke_agent"]
    chats, tools = by_name["chat test"], by_name["execute_tool add"]
    assert (len(chats), len(tools)) == (2, 2)
    assert agent.parent is None
    turn_id = agent.context.span_id
    assert {parent_id(span) for span in [*chats, *tools]} == {turn_id}  # siblings, one parent
    assert {span.context.trace_id for span in [*chats, *tools]} == {agent.context.trace_id}
    assert (agent.kind, chats[0].kind, tools[0].kind) == (
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
    )


def test_the_turn_span_carries_the_genai_attributes(spans: InMemorySpanExporter) -> None:
    turn([tool_calls(("c1", "add", {"a": 1, "b": 2})), text("done")])
    [agent] = named(spans)["invoke_agent"]
    attributes = dict(agent.attributes or {})
    assert attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "test",
        "gen_ai.conversation.id": "s1",
        "toolreel.run": "loop",
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 10,
        "gen_ai.response.finish_reasons": ("stop",),
        "toolreel.finish_reason": "completed",
        "toolreel.iterations": 2,
        "toolreel.max_iterations_reached": False,
    }
    assert agent.status.status_code is StatusCode.UNSET


def test_model_spans_carry_request_response_and_server(spans: InMemorySpanExporter) -> None:
    turn([tool_calls(("c1", "add", {"a": 1, "b": 2})), text("done")], max_tokens=100)
    first, second = named(spans)["chat test"]
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == "test"
    assert attributes["gen_ai.request.max_tokens"] == 100
    assert attributes["server.address"] == "127.0.0.1"
    assert isinstance(attributes["server.port"], int)
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        10,
        5,
    )
    assert (attributes["toolreel.iteration"], attributes["toolreel.retry"]) == (1, 0)
    assert dict(second.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)


def test_tool_spans_carry_name_call_id_and_type(spans: InMemorySpanExporter) -> None:
    turn([tool_calls(("call-7", "add", {"a": 1, "b": 2})), text("done")])
    [span] = named(spans)["execute_tool add"]
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call-7",
        "gen_ai.tool.type": "function",
    }
    assert span.status.status_code is StatusCode.UNSET


def test_a_tool_runs_with_its_span_current(spans: InMemorySpanExporter) -> None:
    finish = turn([tool_calls(("c1", "current_span_name", {"word": "x"})), text("done")])
    assert finish.rounds[0].results[0].content == "execute_tool current_span_name"


def test_a_tool_error_fails_its_span_and_no_key_is_recorded(spans: InMemorySpanExporter) -> None:
    finish = turn([tool_calls(("c1", "fails", {"word": "x"})), text("sorry")], api_key=KEY)
    assert finish.reason is FinishReason.COMPLETED  # the model read the error and answered
    by_name = named(spans)
    [span] = by_name["execute_tool fails"]
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "tool_error"
    [agent] = by_name["invoke_agent"]
    assert agent.status.status_code is StatusCode.UNSET
    assert KEY[:12] not in repr([s.to_json() for s in spans.get_finished_spans()])


def test_a_retried_model_call_is_two_spans_the_first_failed(spans: InMemorySpanExporter) -> None:
    turn([http_error(429, f"slow down, {KEY}"), text("ok")], api_key=KEY)
    failed, answered = named(spans)["chat test"]
    assert failed.status.status_code is StatusCode.ERROR
    assert "slow down, ***" in (failed.status.description or "")
    assert dict(failed.attributes or {})["error.type"] == "429"
    assert dict(answered.attributes or {})["toolreel.retry"] == 1
    assert answered.status.status_code is StatusCode.UNSET
    [agent] = named(spans)["invoke_agent"]
    assert [event.name for event in agent.events] == ["toolreel.retry_scheduled"]
    assert KEY[:12] not in repr([s.to_json() for s in spans.get_finished_spans()])


def test_a_failed_turn_sets_error_status_on_its_span(spans: InMemorySpanExporter) -> None:
    finish = turn([http_error(400, "bad request")])
    assert finish.reason is FinishReason.FAILED
    by_name = named(spans)
    [agent] = by_name["invoke_agent"]
    assert agent.status.status_code is StatusCode.ERROR
    assert dict(agent.attributes or {})["error.type"] == "model_error"
    [chat] = by_name["chat test"]
    assert dict(chat.attributes or {})["error.type"] == "400"


def test_the_iteration_cap_is_an_attribute_not_an_error(spans: InMemorySpanExporter) -> None:
    again = tool_calls(("c", "add", {"a": 1, "b": 1}))
    turn([again, again], max_tool_iterations=1)
    [agent] = named(spans)["invoke_agent"]
    attributes = dict(agent.attributes or {})
    assert attributes["toolreel.max_iterations_reached"] is True
    assert attributes["toolreel.finish_reason"] == "max_iterations"
    assert agent.status.status_code is StatusCode.UNSET


def test_an_interrupted_turn_ends_every_span_as_cancelled(spans: InMemorySpanExporter) -> None:
    slow = attrs.evolve(text("late"), delay=30.0)
    with ScriptedServer([slow]) as server:

        async def main() -> Finish | None:
            async with Client(options(server)) as client:
                await client.query("go")
                while not _chat_started(server):
                    await anyio.sleep(0.01)
                await client.interrupt()
                return client.last_finish

        finish = anyio.run(main)
    assert finish is not None and finish.reason is FinishReason.CANCELLED
    by_name = named(spans)
    [chat], [agent] = by_name["chat test"], by_name["invoke_agent"]
    assert dict(chat.attributes or {})["error.type"] == "cancelled"
    assert dict(agent.attributes or {})["error.type"] == "cancelled"
    assert agent.status.status_code is StatusCode.ERROR


def _chat_started(server: ScriptedServer) -> bool:
    """Whether the server has the request (the model call is under way)."""
    return bool(server.requests)


def test_each_turn_of_a_conversation_is_its_own_trace(spans: InMemorySpanExporter) -> None:
    with ScriptedServer([text("one"), text("two")]) as server:

        async def main() -> None:
            async with Client(options(server)) as client:
                for prompt in ("first", "second"):
                    await client.query(prompt)
                    await client.wait()

        anyio.run(main)
    first, second = named(spans)["invoke_agent"]
    assert first.context.trace_id != second.context.trace_id


def test_a_turn_nests_under_the_callers_current_span(spans: InMemorySpanExporter) -> None:
    with ScriptedServer([text("hi")]) as server:

        async def main() -> int:
            tracer = TracerProvider().get_tracer("app")
            with tracer.start_as_current_span("request") as request:
                async with Client(options(server)) as client:
                    await client.query("go")
                    await client.wait()
                return request.get_span_context().span_id

        request_id = anyio.run(main)
    [agent] = named(spans)["invoke_agent"]
    assert parent_id(agent) == request_id


def test_uninstrumented_runs_make_no_spans(spans: InMemorySpanExporter) -> None:
    otel.uninstrument()
    assert not otel.is_instrumented()
    turn([text("hi")])
    assert spans.get_finished_spans() == ()


def test_instrumenting_twice_traces_once(spans: InMemorySpanExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    otel.instrument(tracer_provider=provider)
    turn([text("hi")])
    assert [span.name for span in spans.get_finished_spans()] == ["chat test", "invoke_agent"]


# --- agent runs -------------------------------------------------------------------------


@attrs.frozen
class Answer:
    value: int


def agent_run(script: list[Reply], **definition: Any) -> AgentSuccess[Answer] | AgentFailure:
    """`execute_agent` against `script` with the `add` helper."""
    with ScriptedServer(script) as server:
        agent = AgentDefinition(
            build_prompt=lambda text: text,
            output=OutputTool.of(Answer, name="answer"),
            helpers=[add],
            **definition,
        )
        opts = AgentOptions(model="test", base_url=server.url, api_key="sk-test", retry=FAST)
        return anyio.run(lambda: execute_agent(agent, "1 + 1?", opts))


def test_an_agent_run_is_one_invoke_agent_span_with_its_calls_under_it(
    spans: InMemorySpanExporter,
) -> None:
    script = [
        tool_calls(("c1", "add", {"a": 1, "b": 1})),
        tool_calls(("c2", "answer", {"value": 2})),
    ]
    assert isinstance(agent_run(script), AgentSuccess)
    by_name = named(spans)
    [agent] = by_name["invoke_agent"]
    attributes = dict(agent.attributes or {})
    assert attributes["toolreel.run"] == "agent"
    assert attributes["gen_ai.output.type"] == "json"
    assert attributes["toolreel.finish_reason"] == "output"
    assert attributes["gen_ai.usage.input_tokens"] == 20
    children = [*by_name["chat test"], *by_name["execute_tool add"]]
    assert len(children) == 3
    assert {parent_id(span) for span in children} == {agent.context.span_id}


def test_a_failed_agent_run_sets_error_status_with_its_code(spans: InMemorySpanExporter) -> None:
    again = tool_calls(("c", "add", {"a": 1, "b": 1}))
    assert isinstance(agent_run([again], max_iterations_per_attempt=1), AgentFailure)
    [agent] = named(spans)["invoke_agent"]
    assert agent.status.status_code is StatusCode.ERROR
    assert dict(agent.attributes or {})["error.type"] == "MAX_ITERATIONS"


def test_importing_toolreel_otel_loads_the_api_not_the_sdk() -> None:
    program = "import sys, toolreel.otel\nprint('opentelemetry.sdk' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", program], check=True, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["False"]
