"""toolreel.open_agent's hooks, tools and options: open-agent-sdk 0.4.2's semantics."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from oa_stub import StubOpenAI, call_chunks, options, text_chunks, use

from toolreel.open_agent import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    AgentOptions,
    Client,
    HookDecision,
    PostToolUseEvent,
    PreToolUseEvent,
    PromptBlocked,
    Tool,
    ToolUseBlock,
    ToolUseError,
    UserPromptSubmitEvent,
    tool,
)


@tool("add", "Add two numbers", {"a": int, "b": int})
async def add(args: dict[str, Any]) -> dict[str, Any]:
    return {"result": args["a"] + args["b"]}


async def read(client: Client) -> list[Any]:
    """Every block `receive_messages()` yields now."""
    return [block async for block in client.receive_messages()]


def run_turn(opts: AgentOptions, prompt: str = "Go") -> tuple[list[Any], Client]:
    """One turn read to its end."""
    client = Client(opts)

    async def main() -> list[Any]:
        async with client:
            await client.query(prompt)
            return await read(client)

    return anyio.run(main), client


def test_a_pre_tool_use_block_ends_the_turn_in_auto_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = use(monkeypatch, StubOpenAI(call_chunks(("c1", "add", '{"a": 1, "b": 2}'))))
    ran: list[Any] = []
    gated = tool("add", "Add", {"a": int, "b": int})(ran.append)

    async def gate(event: PreToolUseEvent) -> HookDecision | None:
        return HookDecision(continue_=False, reason="Blocked by policy")

    opts = options(tools=[gated], auto_execute_tools=True, hooks={HOOK_PRE_TOOL_USE: [gate]})
    blocks, client = run_turn(opts)

    assert len(blocks) == 1
    assert isinstance(blocks[0], ToolUseError)
    assert "Blocked by policy" in blocks[0].error
    assert ran == []
    assert len(stub.bodies) == 1  # no further model call
    # The history stays provider-valid: the blocked call is answered with the reason.
    assert json.loads(client.history[-1]["content"])["error"].endswith("Blocked by policy")


def test_a_modified_input_is_shown_on_the_block_and_run(monkeypatch: pytest.MonkeyPatch) -> None:
    use(
        monkeypatch,
        StubOpenAI(call_chunks(("c1", "add", '{"a": 1, "b": 2}')), text_chunks("300")),
    )
    seen: list[dict[str, Any]] = []

    def rewrite(event: PreToolUseEvent) -> HookDecision:
        seen.append(dict(event.tool_input))
        return HookDecision(modified_input={"a": 100, "b": 200}, reason="sandboxed")

    opts = options(tools=[add], auto_execute_tools=True, hooks={HOOK_PRE_TOOL_USE: [rewrite]})
    blocks, client = run_turn(opts)

    assert seen == [{"a": 1, "b": 2}]
    assert blocks[0] == ToolUseBlock(id="c1", name="add", input={"a": 100, "b": 200})
    assert client.history[2]["content"] == '{"result": 300}'
    assert client.history[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 100, "b": 200}'


def test_post_tool_use_sees_the_tools_own_value(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, StubOpenAI(call_chunks(("c1", "add", '{"a": 1, "b": 2}')), text_chunks("3")))
    told: list[PostToolUseEvent] = []

    async def audit(event: PostToolUseEvent) -> HookDecision:
        told.append(event)
        return HookDecision(reason="logged")

    opts = options(tools=[add], auto_execute_tools=True, hooks={HOOK_POST_TOOL_USE: [audit]})
    run_turn(opts)

    [event] = told
    assert (event.tool_name, event.tool_input, event.tool_use_id) == ("add", {"a": 1, "b": 2}, "c1")
    assert event.tool_result == {"result": 3}
    assert [m["role"] for m in event.history] == ["user", "assistant", "tool"]


def test_a_blocked_prompt_raises_and_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = use(monkeypatch, StubOpenAI())
    order: list[str] = []

    def first(event: UserPromptSubmitEvent) -> None:
        order.append("first")

    def second(event: UserPromptSubmitEvent) -> HookDecision:
        order.append("second")
        return HookDecision(continue_=False, reason="Forbidden word")

    def third(event: UserPromptSubmitEvent) -> None:
        order.append("third")

    hooks = {HOOK_USER_PROMPT_SUBMIT: [first, second, third]}
    client = Client(options(hooks=hooks))

    async def main() -> None:
        await client.query("forbidden")

    with pytest.raises(PromptBlocked, match="Query blocked by hook: Forbidden word") as raised:
        anyio.run(main)
    assert isinstance(raised.value, RuntimeError)
    assert order == ["first", "second"]  # the first decision wins
    assert stub.bodies == []
    assert client.message_history == []


def test_user_prompt_submit_runs_once_per_prompt_never_on_continuations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub = use(
        monkeypatch, StubOpenAI(call_chunks(("c1", "add", '{"a": 1, "b": 2}')), text_chunks("3"))
    )
    prompts: list[str] = []

    def sanitize(event: UserPromptSubmitEvent) -> HookDecision:
        prompts.append(event.prompt)
        return HookDecision(modified_prompt=event.prompt + " [SANITIZED]")

    opts = options(
        tools=[add], auto_execute_tools=True, hooks={HOOK_USER_PROMPT_SUBMIT: [sanitize]}
    )
    _, client = run_turn(opts, "Calculate 1 + 2")

    assert prompts == ["Calculate 1 + 2"]
    assert client.history[0]["content"] == "Calculate 1 + 2 [SANITIZED]"
    assert stub.bodies[0]["messages"][1]["content"] == "Calculate 1 + 2 [SANITIZED]"


def test_a_hook_that_raises_raises_to_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, StubOpenAI())

    def broken(event: UserPromptSubmitEvent) -> None:
        raise ValueError("Hook failed")

    client = Client(options(hooks={HOOK_USER_PROMPT_SUBMIT: [broken]}))

    async def main() -> None:
        await client.query("Test")

    with pytest.raises(ValueError, match="Hook failed"):
        anyio.run(main)


def test_add_tool_result_checks_the_call_and_the_content(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, StubOpenAI(call_chunks(("c1", "add", '{"a": 1, "b": 2}'))))
    client = Client(options(tools=[add]))

    async def main() -> None:
        await client.query("Go")
        await read(client)
        with pytest.raises(ValueError, match="Unknown tool_call_id"):
            await client.add_tool_result("missing", "data")
        with pytest.raises(TypeError, match="content must be a str, dict, or list"):
            await client.add_tool_result("c1", 123)  # type: ignore[arg-type]
        await client.add_tool_result("c1", ["a", "b"])

    anyio.run(main)
    assert json.loads(client.history[-1]["content"]) == ["a", "b"]


def test_tools_are_executable_and_offered_in_openai_format() -> None:
    shout = tool("shout", "Uppercase", {"text": str, "times": {"type": "integer", "default": 1}})(
        lambda args: args["text"].upper()
    )

    assert isinstance(shout, Tool)
    assert shout.input_schema == {"text": str, "times": {"type": "integer", "default": 1}}
    assert anyio.run(shout.execute, {"text": "hi"}) == "HI"
    assert anyio.run(add, {"a": 2, "b": 3}) == {"result": 5}
    assert shout.to_openai_format() == {
        "type": "function",
        "function": {
            "name": "shout",
            "description": "Uppercase",
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "times": {"type": "integer", "default": 1},
                },
                "required": ["text"],
            },
        },
    }


def test_two_tools_with_one_name_are_refused() -> None:
    twin = tool("add", "Another add", {})(lambda args: 0)

    with pytest.raises(ValueError, match="Duplicate tool name 'add'"):
        Client(options(tools=[add, twin]))


def test_options_are_checked_as_open_agent_checks_them() -> None:
    assert options().timeout == 60.0
    assert (options().max_turns, options().max_tool_iterations) == (1, 5)
    assert options().auto_execute_tools is False
    with pytest.raises(TypeError):
        AgentOptions(system_prompt="x", base_url="http://localhost:1234/v1")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="model cannot be empty"):
        options(model="")
    with pytest.raises(ValueError, match="base_url cannot be empty"):
        options(base_url="")
    with pytest.raises(ValueError, match="base_url must start with http:// or https://"):
        options(base_url="localhost:1234/v1")
