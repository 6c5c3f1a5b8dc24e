"""A user's file: README.md's examples as a project under `mypy --strict` writes them.

Not a test module (pytest does not collect it): `test_readme_typing.py` runs
`mypy --strict` over it, so a public signature that a strict user cannot call
(an untyped decorator, a field typed too narrowly or as `Any`) fails the suite
instead of every user's type check. The code is the README's, with the
annotations a strict project adds; `assert_type` pins what users get back.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, assert_type

import anyio
import attrs

from toolreel.core import (
    CallModel,
    Finish,
    LoopConfig,
    ModelEvent,
    ModelResponded,
    PromptSubmitted,
    RunTool,
    TextDelta,
    ToolCall,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    ToolFinished,
    ToolRound,
    ToolSpec,
    arguments_object,
    initial_state,
    step,
)
from toolreel.core.notices import TextStreamed, ToolCallAnnounced
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentSuccess,
    Client,
    OutputTool,
    Tool,
    execute_agent,
    tool,
)
from toolreel.shell.hooks import (
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)
from toolreel.testing import MakeScriptedModel, OpenRecording, http_error, text, tool_calls

# --- The core in one example -------------------------------------------------------------

add_spec = ToolSpec(
    name="add",
    description="Add two numbers",
    parameters={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
state = initial_state(LoopConfig(model="gpt-4o-mini", tools=(add_spec,), max_iterations=5))
state, effects = step(state, PromptSubmitted(text="What is 25 plus 17?"))
assert isinstance(effects[-1], CallModel)
# A strict project annotates the list: mypy joins the event classes to `object`.
streamed: list[ModelEvent] = [
    ToolCallStarted(index=0, call_id="call_1", name="add"),
    ToolCallArgumentsDelta(index=0, fragment='{"a": 2'),
    ToolCallArgumentsDelta(index=0, fragment='5, "b": 17}'),
    ModelResponded(finish_reason="tool_calls"),
]
for event in streamed:
    state, effects = step(state, event)
[run] = [e for e in effects if isinstance(e, RunTool)]
state, effects = step(state, ToolFinished(call_id="call_1", output="42"))
state, effects = step(state, TextDelta(text="25 plus 17 is 42."))
state, effects = step(state, ModelResponded(finish_reason="stop"))
finish = effects[-1]
assert isinstance(finish, Finish)
print(finish.reason.value, finish.text, len(finish.rounds))

# --- Using it: Client ---------------------------------------------------------------------


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add(args: dict[str, Any]) -> dict[str, float]:
    return {"result": args["a"] + args["b"]}


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


@tool(timeout=5, idempotent=True)
def lookup(key: str) -> str:
    """A tool with its own timeout that a resumed session may run again."""
    return key


add_tool: Tool[[dict[str, Any]], Coroutine[Any, Any, dict[str, float]]] = add
multiply_tool: Tool[[float, float], float] = multiply
lookup_tool: Tool[[str], str] = lookup
# A tool stays callable as the function it wraps, its signature checked for callers,
assert_type(multiply(2, 3), float)
pending = add({"a": 1, "b": 2})
pending = assert_type(pending, Coroutine[Any, Any, dict[str, float]])
pending.close()
multiply("2", 3)  # type: ignore[arg-type]
lookup()  # type: ignore[call-arg]
# and is still a Tool wherever tools are accepted.
every_tool: list[Tool] = [add, multiply, lookup]


async def gate(event: PreToolUseEvent) -> HookDecision | None:
    if event.tool_name == "delete_file":
        return HookDecision(continue_=False, reason="Dangerous operation blocked")
    return None


def polite(event: UserPromptSubmitEvent) -> HookDecision:
    return HookDecision(modified_prompt=f"Please: {event.prompt}")


def announce(call: ToolCall) -> None:
    print("calling", call.name)


async def count(tool_round: ToolRound) -> None:
    print(len(tool_round.results), "results")


def plain_function(x: int) -> int:
    """Plain typed functions are tools too."""
    return x


options = AgentOptions(
    system_prompt="You are a calculator.",
    model="qwen2.5-32b-instruct",
    base_url="http://localhost:1234/v1",
    tools=[add, multiply, plain_function],
    auto_execute_tools=True,
    max_tool_iterations=5,
    journal="sessions.db",
    hooks={HOOK_PRE_TOOL_USE: [gate], HOOK_USER_PROMPT_SUBMIT: [polite]},
    on_tool_call=announce,
    on_round=count,
)
hooks_built_first = {HOOK_PRE_TOOL_USE: [gate]}
with_hooks = attrs.evolve(options, hooks=hooks_built_first)


async def main() -> None:
    async with Client(options) as client:
        await client.query("What's 7 times 8, then add 5?")
        async for notice in client.events():
            match notice:
                case ToolCallAnnounced(call=call):  # before the call runs
                    print("tool:", call.name, arguments_object(call.arguments))
                case TextStreamed(text=piece):
                    print(piece, end="", flush=True)
                case Finish(reason=reason):
                    print(f"\n[{reason.value}]")


async def resume() -> None:
    async with Client.resume("the-session-id", options) as client:
        done = await client.wait()  # None only when no turn ever ran
        assert_type(done, Finish | None)


# --- Structured-output agents ------------------------------------------------------------


@attrs.frozen
class Line:
    description: str
    quantity: int
    unit_price: float


@attrs.frozen
class Invoice:
    number: str
    currency: str
    lines: list[Line]
    total: float
    total_eur: float


RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}


@tool
def currency_rate(currency: str) -> float:
    """How many euros one unit of `currency` is worth."""
    return RATES[currency]


def totals_add_up(invoice: Invoice) -> list[str]:
    problems = []
    lines = sum(line.quantity * line.unit_price for line in invoice.lines)
    if abs(lines - invoice.total) > 0.005:
        problems.append(f"total is {invoice.total:.2f} but the lines add up to {lines:.2f}")
    return problems


def show(invoice: Invoice) -> str:
    rows = [f"  {x.quantity} x {x.description} @ {x.unit_price:.2f}" for x in invoice.lines]
    return "\n".join([f"Invoice {invoice.number} ({invoice.currency})", *rows])


invoice_tool = OutputTool.of(
    Invoice, name="record_invoice", description="Record the invoice.", reflection_handler=show
)
assert_type(invoice_tool, OutputTool[Invoice])

# The input type comes from `build_prompt`; a lambda does not say it, so name it here.
extract_invoice: AgentDefinition[str, Invoice] = AgentDefinition(
    system_prompt="You extract invoices. Convert totals to euros with currency_rate.",
    build_prompt=lambda text: f"Extract the invoice from this email:\n\n{text}",
    helpers=[currency_rate],
    output=invoice_tool,
    validators=[totals_add_up],
    max_attempts=3,
    max_iterations_per_attempt=15,
)

weather = OutputTool.from_schema(
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    name="report",
    description="Report the weather",
)
assert_type(weather, OutputTool[dict[str, Any]])


async def extract(email: str) -> None:
    options = AgentOptions(model="qwen2.5:14b", base_url="http://localhost:11434/v1")
    result = await execute_agent(extract_invoice, email, options)
    if isinstance(result, AgentSuccess):
        invoice = result.output
        print(invoice.number, invoice.total, invoice.currency, "=", invoice.total_eur, "EUR")
    else:
        assert_type(result, AgentFailure)
        print(result.error.code, result.error.message, result.error.context)
    meta = result.metadata
    print(f"{meta.attempts} attempts, {meta.usage.total_tokens} tokens")


# --- Testing your agent: the toolreel.testing plugin -------------------------------------


@tool
def add_ints(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_my_agent_adds(scripted_model: MakeScriptedModel) -> None:
    model = scripted_model(
        [
            tool_calls(("call_1", "add_ints", {"a": 2, "b": 3})),
            http_error(429, "slow down", retry_after=0),
            text("2 + 3 = 5"),
        ]
    )
    options = model.options(tools=[add_ints], auto_execute_tools=True, journal="my.jsonl")

    async def main() -> Finish | None:
        async with Client(options, model=model.model) as client:
            await client.query("What is 2 + 3?")
            return await client.wait()

    finish = anyio.run(main)
    assert finish is not None
    assert finish.text == "2 + 3 = 5"
    assert finish.rounds[0].results[0].content == "5"


async def test_a_recorded_session_reruns(recorded_session: OpenRecording) -> None:
    recording = recorded_session("tests/recordings/calc.jsonl")
    reasons = await recording.rerun(AgentOptions(model="m", tools=[add_ints]))
    print([reason.value for reason in reasons])


anyio.run(main)


# --- What strict typing refuses (each ignore must stay needed: warn_unused_ignores) ------


def reads_a_number(event: int) -> None:
    print(event)


def wants_a_round(tool_round: ToolRound) -> None:
    print(tool_round)


refused = AgentOptions(
    model="m",
    hooks={HOOK_PRE_TOOL_USE: [reads_a_number]},  # type: ignore[list-item]
    on_tool_call=wants_a_round,  # type: ignore[arg-type]
)
