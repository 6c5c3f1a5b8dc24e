"""Structured-output agents end to end: `execute_agent` against a scripted OpenAI-compatible
HTTP server on 127.0.0.1, through the real adapter — no patching of internals."""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import PROVIDERS, ErrorCode, ErrorContext, ErrorPhase, EventModel, codec_for
from toolreel.core import (
    ModelCallFailed,
    ModelResponded,
    TimerFired,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    Usage,
)
from toolreel.core.outcomes import AttemptErrors
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentSuccess,
    OutputTool,
    execute_agent,
    tool,
)
from toolreel.shell._driver import Driver
from toolreel.shell.scripted import (
    Reply,
    ScriptedServer,
    http_error,
    reply_events,
    text,
    tool_calls,
)


@attrs.frozen
class Line:
    description: str
    amount: float


@attrs.frozen
class Invoice:
    number: str
    lines: list[Line]
    total: float


GOOD = {"number": "INV-1", "lines": [{"description": "Widget", "amount": 40}], "total": 40}
WRONG_TOTAL = {**GOOD, "total": 45}
EXPECTED = Invoice(number="INV-1", lines=[Line(description="Widget", amount=40.0)], total=40.0)


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of `currency`."""
    return {"USD": 0.92, "EUR": 1.0}[currency]


def totals_add_up(invoice: Invoice) -> list[str]:
    lines = sum(line.amount for line in invoice.lines)
    return [] if lines == invoice.total else [f"total is {invoice.total} but lines add to {lines}"]


def agent(**overrides: Any) -> AgentDefinition[str, Invoice]:
    """The invoice agent: plain output unless an `output` is given."""
    overrides.setdefault("output", OutputTool.of(Invoice, name="record_invoice"))
    overrides.setdefault("helpers", [currency_rate])
    overrides.setdefault("validators", [totals_add_up])
    return AgentDefinition(
        build_prompt=lambda source: f"Extract the invoice from: {source}",
        system_prompt="You extract invoices.",
        **overrides,
    )


def reflected(invoice: Invoice) -> str:
    return f"{invoice.number}: {len(invoice.lines)} line(s), total {invoice.total:.2f}"


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    return AgentOptions(model="test", base_url=server.url, api_key="sk-test", **extra)


def execute(definition: AgentDefinition, script: list[Reply], **kwargs: Any) -> tuple[Any, list]:
    """Run the agent against the script; the result and the requests the server received."""
    with ScriptedServer(script) as server:
        result = anyio.run(
            lambda: execute_agent(definition, "INV-1 Widget 40", options(server), **kwargs)
        )
        return result, server.requests


def tool_message(request: dict[str, Any], call_id: str) -> dict[str, Any]:
    [message] = [m for m in request["messages"] if m.get("tool_call_id") == call_id]
    return message


def test_helper_then_output_gives_the_typed_output() -> None:
    script = [
        tool_calls(("c1", "currency_rate", {"currency": "USD"})),
        tool_calls(("c2", "record_invoice", GOOD)),
    ]
    result, requests = execute(agent(), script)
    assert isinstance(result, AgentSuccess)
    assert result.output == EXPECTED
    assert (result.metadata.attempts, result.metadata.iterations) == (1, 2)
    assert [t["function"]["name"] for t in requests[0]["tools"]] == [
        "currency_rate",
        "record_invoice",
    ]
    assert requests[0]["messages"][:2] == [
        {"role": "system", "content": "You extract invoices."},
        {"role": "user", "content": "Extract the invoice from: INV-1 Widget 40"},
    ]
    assert tool_message(requests[1], "c1")["content"] == "0.92"


def test_output_with_reflection_twice_then_submit() -> None:
    seen: list[Invoice] = []

    def show(invoice: Invoice) -> str:
        seen.append(invoice)
        return reflected(invoice)

    script = [
        tool_calls(("c1", "record_invoice", WRONG_TOTAL)),
        tool_calls(("c2", "record_invoice", GOOD)),
        tool_calls(("c3", "submit", {})),
    ]
    definition = agent(
        output=OutputTool.of(Invoice, name="record_invoice", reflection_handler=show)
    )
    result, requests = execute(definition, script)
    assert isinstance(result, AgentSuccess)
    assert result.output == EXPECTED
    assert seen == [attrs.evolve(EXPECTED, total=45.0), EXPECTED]
    submit = requests[0]["tools"][-1]["function"]
    assert submit == {
        "name": "submit",
        "description": "Submit your final output for validation. "
        "Call this when you are satisfied with your output.",
        "parameters": {"type": "object", "properties": {}},
    }
    assert tool_message(requests[1], "c1")["content"] == "INV-1: 1 line(s), total 45.00"
    assert tool_message(requests[2], "c2")["content"] == "INV-1: 1 line(s), total 40.00"
    assert len(requests) == 3


def test_submit_before_output_fails() -> None:
    definition = agent(
        output=OutputTool.of(Invoice, name="record_invoice", reflection_handler=reflected)
    )
    result, requests = execute(definition, [tool_calls(("c1", "submit", {}))])
    assert isinstance(result, AgentFailure)
    assert result.error.code == "SUBMIT_BEFORE_OUTPUT"
    assert result.error.context == ErrorContext(phase=ErrorPhase.ITERATION, attempt=1, iteration=1)
    assert len(requests) == 1


def test_validation_failing_once_then_passing_feeds_the_errors_back() -> None:
    failures: list[tuple[int, list[str]]] = []
    starts: list[int] = []
    script = [
        tool_calls(("c1", "record_invoice", WRONG_TOTAL)),
        tool_calls(("c2", "record_invoice", GOOD)),
    ]
    definition = agent(
        on_attempt_start=lambda state, attempt: starts.append(attempt),
        on_validation_failure=lambda state, attempt, problems: failures.append((attempt, problems)),
    )
    result, requests = execute(definition, script)
    assert isinstance(result, AgentSuccess)
    assert result.output == EXPECTED
    assert requests[1]["messages"][-1] == {
        "role": "user",
        "content": "Your output failed validation (attempt 1 of 3):\n"
        "- total is 45.0 but lines add to 40.0\n"
        "Call record_invoice again with a corrected output.",
    }
    assert tool_message(requests[1], "c1")["content"] == "Output received."
    assert starts == [1, 2]
    assert failures == [(1, ["total is 45.0 but lines add to 40.0"])]
    assert result.metadata.validation_errors == (
        AttemptErrors(attempt=1, problems=("total is 45.0 but lines add to 40.0",)),
    )


def test_schema_errors_are_listed_by_field() -> None:
    broken = {"number": 7, "lines": [{"description": "Widget", "amount": "forty"}]}
    script = [
        tool_calls(("c1", "record_invoice", broken)),
        tool_calls(("c2", "record_invoice", GOOD)),
    ]
    result, requests = execute(agent(), script)
    assert isinstance(result, AgentSuccess)
    assert result.metadata.validation_errors[0].problems == (
        "$.number: expected a string, got 7",
        "$.lines[0].amount: expected a number, got 'forty'",
        "$.total: required field missing",
    )


def test_validation_failing_in_every_attempt_reports_every_attempts_errors() -> None:
    called: list[Invoice] = []

    def never(invoice: Invoice) -> list[str]:
        called.append(invoice)
        return ["never good enough"]

    script = [tool_calls((f"c{i}", "record_invoice", GOOD)) for i in range(2)]
    result, _ = execute(agent(validators=[totals_add_up, never], max_attempts=2), script)
    assert isinstance(result, AgentFailure)
    assert result.error.code is ErrorCode.VALIDATION_FAILED
    assert result.error.context.limit == 2
    assert [e.problems for e in result.error.context.validation_errors] == [
        ("never good enough",),
        ("never good enough",),
    ]
    assert len(called) == 2


def test_max_iterations_fails_without_validating() -> None:
    validated: list[Invoice] = []
    script = [tool_calls((f"c{i}", "currency_rate", {"currency": "EUR"})) for i in range(5)]
    definition = agent(max_iterations_per_attempt=3, validators=[validated.append])
    result, requests = execute(definition, script)
    assert isinstance(result, AgentFailure)
    assert result.error.code == "MAX_ITERATIONS"
    assert result.error.context == ErrorContext(
        phase=ErrorPhase.ITERATION, attempt=1, iteration=3, limit=3
    )
    assert len(requests) == 3
    assert validated == []
    assert result.metadata.usage == Usage(input_tokens=30, output_tokens=15)


def test_cancellation_mid_iteration_stops_before_the_next_model_call() -> None:
    abort = anyio.Event()

    @tool
    def slow_lookup(currency: str) -> float:
        """Looks a rate up while the caller gives up."""
        abort.set()
        return 0.92

    script = [
        tool_calls(("c1", "slow_lookup", {"currency": "USD"})),
        tool_calls(("c2", "record_invoice", GOOD)),
    ]
    result, requests = execute(agent(helpers=[slow_lookup]), script, abort=abort)
    assert isinstance(result, AgentFailure)
    assert result.error.code == "EXECUTION_CANCELLED"
    assert result.error.context == ErrorContext(phase=ErrorPhase.ITERATION, attempt=1, iteration=2)
    assert len(requests) == 1  # the second model call was never made
    [_, rounds] = result.metadata.history
    assert rounds.tool_rounds[0].results[0].content == "0.92"  # the tool's work is kept


def test_abort_cuts_a_model_call_in_flight() -> None:
    abort = anyio.Event()
    with ScriptedServer(
        [attrs.evolve(tool_calls(("c1", "record_invoice", GOOD)), delay=5)]
    ) as server:

        async def main() -> Any:
            with anyio.fail_after(3):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(lambda: _set_soon(abort))
                    # a cut mistaken for a broken stream would back off for 5 s first
                    slow_retry = RetryPolicy(base_delay=5.0)
                    opts = options(server, retry=slow_retry)
                    return await execute_agent(agent(), "x", opts, abort=abort)

        result = anyio.run(main)
    assert isinstance(result, AgentFailure)
    assert result.error.code == "EXECUTION_CANCELLED"
    assert (result.error.context.attempt, result.error.context.iteration) == (1, 1)


async def _set_soon(event: anyio.Event) -> None:
    await anyio.sleep(0.1)
    event.set()


def test_an_anyio_cancel_stops_the_run_and_propagates() -> None:
    with ScriptedServer([attrs.evolve(text("late"), delay=5)]) as server:

        async def main() -> bool:
            with anyio.move_on_after(0.1) as scope:
                await execute_agent(agent(), "x", options(server))
            return scope.cancelled_caught

        assert anyio.run(main) is True


def test_a_raising_callback_is_recorded_and_never_breaks_the_run() -> None:
    results: list[tuple[str, str]] = []

    def on_tool_call(state, name, arguments):
        raise RuntimeError(f"log sink down ({name})")

    async def on_attempt_start(state, attempt):
        raise ValueError("no dashboard")

    script = [
        tool_calls(("c1", "currency_rate", {"currency": "USD"})),
        tool_calls(("c2", "record_invoice", GOOD)),
    ]
    definition = agent(
        on_tool_call=on_tool_call,
        on_attempt_start=on_attempt_start,
        on_tool_result=lambda state, name, result: results.append((name, result)),
    )
    result, _ = execute(definition, script)
    assert isinstance(result, AgentSuccess)
    assert result.metadata.callback_errors == (
        "test_a_raising_callback_is_recorded_and_never_breaks_the_run.<locals>.on_attempt_start "
        "raised ValueError: no dashboard",
        "test_a_raising_callback_is_recorded_and_never_breaks_the_run.<locals>.on_tool_call "
        "raised RuntimeError: log sink down (currency_rate)",
    )
    assert results == [("currency_rate", "0.92")]


def test_usage_totals_across_two_attempts() -> None:
    script = [
        attrs.evolve(tool_calls(("c1", "currency_rate", {"currency": "USD"})), usage=(100, 10)),
        attrs.evolve(tool_calls(("c2", "record_invoice", WRONG_TOTAL)), usage=(150, 20)),
        attrs.evolve(tool_calls(("c3", "record_invoice", GOOD)), usage=(210, 30)),
    ]
    result, _ = execute(agent(), script)
    assert isinstance(result, AgentSuccess)
    assert result.metadata.usage == Usage(input_tokens=460, output_tokens=60)
    assert (result.metadata.attempts, result.metadata.iterations) == (2, 3)
    assert result.metadata.latency > 0


def test_usage_is_in_the_metadata_of_a_failure_too() -> None:
    script = [
        attrs.evolve(tool_calls(("c1", "record_invoice", WRONG_TOTAL)), usage=(100, 10)),
        attrs.evolve(text("I give up."), usage=(120, 5)),
    ]
    result, _ = execute(agent(), script)
    assert isinstance(result, AgentFailure)
    assert result.error.code == "INVALID_RESPONSE"
    assert result.metadata.usage == Usage(input_tokens=220, output_tokens=15)
    assert result.error.context.validation_errors[0].attempt == 1


def test_tool_and_reflection_errors_and_unknown_tools_become_error_results() -> None:
    tool_results: list[tuple[str, str]] = []

    def broken(invoice: Invoice) -> str:
        raise RuntimeError("renderer crashed")

    script = [
        tool_calls(
            ("c1", "currency_rate", {"currency": "JPY"}),
            ("c2", "web_search", {"q": "rates"}),
            ("c3", "record_invoice", GOOD),
        ),
        tool_calls(("c4", "submit", {})),
    ]
    definition = agent(
        output=OutputTool.of(Invoice, name="record_invoice", reflection_handler=broken),
        on_tool_result=lambda state, name, result: tool_results.append((name, result)),
    )
    result, requests = execute(definition, script)
    assert isinstance(result, AgentSuccess)
    contents = {
        m["tool_call_id"]: m["content"] for m in requests[1]["messages"] if m["role"] == "tool"
    }
    assert contents == {
        "c1": "KeyError: 'JPY'",
        "c2": "Unknown tool: web_search",
        "c3": "RuntimeError: renderer crashed",
    }
    assert sorted(tool_results) == [
        ("currency_rate", "KeyError: 'JPY'"),
        ("record_invoice", "RuntimeError: renderer crashed"),
    ]


def test_a_response_without_tool_calls_is_an_invalid_response() -> None:
    result, _ = execute(agent(), [text("INV-1 totals 40.")])
    assert isinstance(result, AgentFailure)
    assert result.error.code is ErrorCode.INVALID_RESPONSE
    assert result.metadata.history[-1].content == "INV-1 totals 40."


def test_a_fatal_http_error_is_a_provider_error() -> None:
    result, _ = execute(agent(), [http_error(401, "Incorrect API key provided")])
    assert isinstance(result, AgentFailure)
    assert result.error.code is ErrorCode.PROVIDER_ERROR
    assert result.error.message.startswith("HTTP 401: Incorrect API key provided")
    assert result.error.context.status == 401


def test_an_output_tool_from_a_json_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
        "additionalProperties": False,
    }
    definition = AgentDefinition(
        build_prompt=lambda city: f"Weather in {city}?",
        output=OutputTool.from_schema(schema, name="report", description="Report the weather"),
    )
    script = [
        tool_calls(("c1", "report", {"city": "Oslo", "celsius": "3", "wind": 4})),
        tool_calls(("c2", "report", {"city": "Oslo", "celsius": 3})),
    ]
    with ScriptedServer(script) as server:
        result = anyio.run(execute_agent, definition, "Oslo", options(server))
        feedback = server.requests[1]["messages"][-1]["content"]
    assert isinstance(result, AgentSuccess)
    assert result.output == {"city": "Oslo", "celsius": 3}
    assert '- $.celsius: expected number, got "3"\n- $.wind: unexpected field' in feedback


def test_the_requests_encode_for_every_provider() -> None:
    """The agent only speaks `ModelPort`: its conversations fit every codec unchanged."""
    requests = []

    def model(request):
        requests.append(request)
        arguments = json.dumps(WRONG_TOTAL if len(requests) == 1 else GOOD)
        return [
            ToolCallStarted(index=0, call_id=f"c{len(requests)}", name="record_invoice"),
            ToolCallArgumentsDelta(index=0, fragment=arguments),
            ModelResponded(finish_reason="tool_calls"),
        ]

    result = anyio.run(
        lambda: execute_agent(agent(), "x", AgentOptions(model="m"), model=EventModel(model))
    )
    assert isinstance(result, AgentSuccess)
    last = requests[-1]  # prompt, iteration, results, feedback
    for provider in PROVIDERS:
        body = codec_for(provider).encode(last, stream=False)
        assert body
    anthropic = codec_for("anthropic").encode(last, stream=False)["messages"]
    assert [m["role"] for m in anthropic] == ["user", "assistant", "user"]
    kinds = [block["type"] for block in anthropic[-1]["content"]]
    assert kinds == ["tool_result", "text"]  # the results and the feedback: one user message


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_the_http_model_is_built_from_the_options_for_each_provider(provider: str) -> None:
    """No network: a refused connection is a provider error whatever the provider."""
    opts = AgentOptions(
        model="m", provider=provider, base_url="http://127.0.0.1:9", api_key="k", retry=_no_retry()
    )
    result = anyio.run(execute_agent, agent(), "x", opts)
    assert isinstance(result, AgentFailure)
    assert result.error.code is ErrorCode.PROVIDER_ERROR


def _no_retry() -> RetryPolicy:
    return RetryPolicy(max_retries=0)


def test_duplicate_tool_names_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="Duplicate tool name: currency_rate"):
        anyio.run(execute_agent, agent(helpers=[currency_rate, currency_rate]), "x", AgentOptions())
    clash = agent(helpers=[tool("record_invoice", "Clash", {})(lambda args: 1)])
    with pytest.raises(ValueError, match="Duplicate tool name: record_invoice"):
        anyio.run(execute_agent, clash, "x", AgentOptions())


def test_the_provider_retry_after_sets_the_backoff(monkeypatch) -> None:
    slept: list[float] = []

    async def no_real_sleep(self: Driver, token: str, seconds: float) -> None:
        slept.append(seconds)
        self.post(TimerFired(token=token))

    monkeypatch.setattr(Driver, "timer", no_real_sleep)
    replies = [
        [ModelCallFailed(retryable=True, message="HTTP 429: slow down", status=429, retry_after=7)],
        reply_events(tool_calls(("c1", "record_invoice", GOOD))),
    ]
    model = EventModel(lambda request: replies[len(model.requests) - 1])
    retry = RetryPolicy(max_retries=2, base_delay=0.5, max_delay=30)
    opts = AgentOptions(model="test", retry=retry)
    result = anyio.run(lambda: execute_agent(agent(), "INV-1 Widget 40", opts, model=model))
    assert isinstance(result, AgentSuccess)
    assert slept == [7]  # the provider's wait, not the policy's 0.5 s


def test_an_attempt_makes_fifteen_model_calls_unless_its_definition_says_otherwise() -> None:
    # the agent API's default; the core's max_iterations counts the calls of one attempt
    from toolreel.shell import Connection  # noqa: PLC0415
    from toolreel.shell.engine import agent_config  # noqa: PLC0415 - this test's alone

    definition = AgentDefinition(build_prompt=str, output=OutputTool.of(Invoice))
    assert definition.max_iterations_per_attempt == 15
    assert agent_config(definition, Connection(model="m"), {}).max_iterations == 15
