"""Seed 002's eight planned tests (open_agent's auto-execution plan), in their original form.

Only the harness is ours: the tests import `toolreel.open_agent` where the plan
imports `open_agent`, run under anyio rather than pytest-asyncio, and the plan's
`fake_openai` fixture, `tool_call_chunks` and `text_chunks` (which it uses but does
not define) are written here: `fake_openai` patches
`toolreel.open_agent.client.create_client`, the seam open_agent's users patch, with
an AsyncOpenAI-shaped client streaming chunk objects shaped like the openai SDK's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("toolreel.open_agent.client", reason="toolreel.open_agent.client missing")

from toolreel.open_agent import (
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    AgentOptions,
    Client,
    HookDecision,
    TextBlock,
    ToolUseBlock,
    ToolUseError,
    tool,
)

pytestmark = pytest.mark.anyio

Chunks = list[SimpleNamespace]


@pytest.fixture
def anyio_backend() -> str:
    """open_agent runs on asyncio."""
    return "asyncio"


def _chunk(delta: SimpleNamespace, finish_reason: str | None = None) -> SimpleNamespace:
    """One `chat.completion.chunk`, attribute-shaped like the openai SDK's objects."""
    choice = SimpleNamespace(index=0, delta=delta, finish_reason=finish_reason, logprobs=None)
    return SimpleNamespace(
        id="chatcmpl-seed002",
        object="chat.completion.chunk",
        created=0,
        model="test",
        choices=[choice],
    )


def text_chunks(text: str) -> Chunks:
    """A streamed text answer: the text in one delta (one TextBlock), then finish "stop"."""
    return [
        _chunk(SimpleNamespace(role="assistant", content=text, tool_calls=None)),
        _chunk(SimpleNamespace(role=None, content=None, tool_calls=None), "stop"),
    ]


def tool_call_chunks(tool_id: str, name: str, arguments: str) -> Chunks:
    """A streamed tool call: id and name with half the arguments, the rest, then the finish."""
    half = len(arguments) // 2

    def call(**fields: Any) -> SimpleNamespace:
        function = SimpleNamespace(name=fields.pop("name", None), arguments=fields.pop("args"))
        return SimpleNamespace(index=0, type="function", function=function, **fields)

    first = call(id=tool_id, name=name, args=arguments[:half])
    rest = SimpleNamespace(
        index=0, id=None, type=None, function=SimpleNamespace(name=None, arguments=arguments[half:])
    )
    return [
        _chunk(SimpleNamespace(role="assistant", content=None, tool_calls=[first])),
        _chunk(SimpleNamespace(role=None, content=None, tool_calls=[rest])),
        _chunk(SimpleNamespace(role=None, content=None, tool_calls=None), "tool_calls"),
    ]


class _Stream:
    """What `create(stream=True)` returns: an async iterator of chunks that can be closed."""

    def __init__(self, chunks: Chunks) -> None:
        self.chunks = chunks

    def __aiter__(self) -> AsyncIterator[SimpleNamespace]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[SimpleNamespace]:
        for chunk in self.chunks:
            yield chunk

    async def close(self) -> None:
        """Nothing to release."""


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`enqueue(*responses)` queues streamed answers, one per model call; `requests` records
    each call's keyword arguments. A call with nothing queued fails loudly."""
    queued: list[Chunks] = []
    requests: list[dict[str, Any]] = []

    async def create(**kwargs: Any) -> _Stream:
        requests.append(kwargs)
        if not queued:
            raise RuntimeError("fake_openai: a model call with no response queued")
        return _Stream(queued.pop(0))

    async def close() -> None:
        """Nothing to release."""

    fake = SimpleNamespace(
        chat=SimpleNamespace(completions=SimpleNamespace(create=create)),
        close=close,
        api_key="not-needed",
        base_url="http://test",
    )
    monkeypatch.setattr("toolreel.open_agent.client.create_client", lambda _options: fake)
    enqueue: Callable[..., None] = lambda *responses: queued.extend(responses)  # noqa: E731
    return {"enqueue": enqueue, "requests": requests}


# Test 1: tool registry validation


def test_client_rejects_duplicate_tool_names():
    tool1 = tool("add", "Add", {"a": int, "b": int})(lambda args: args["a"] + args["b"])
    tool2 = tool("add", "Add2", {"x": int, "y": int})(lambda args: args["x"] + args["y"])

    options = AgentOptions(
        system_prompt="test", model="test", base_url="http://test", tools=[tool1, tool2]
    )

    with pytest.raises(ValueError, match="Duplicate tool name: add"):
        Client(options)


# Test 2: auto-execution with a successful tool


async def test_auto_execute_successful_tool(fake_openai):
    # Setup: Model returns tool call, then text response
    fake_openai["enqueue"](
        tool_call_chunks(tool_id="call-1", name="add", arguments='{"a": 25, "b": 17}'),
        text_chunks("The answer is 42"),
    )

    add_tool = tool("add", "Add", {"a": int, "b": int})(
        lambda args: {"result": args["a"] + args["b"]}
    )

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[add_tool],
        auto_execute_tools=True,
    )

    async with Client(options) as client:
        await client.query("Calculate 25 + 17")

        blocks = []
        async for block in client.receive_messages():
            blocks.append(block)

        # Should yield: ToolUseBlock, TextBlock
        assert len(blocks) == 2
        assert isinstance(blocks[0], ToolUseBlock)
        assert blocks[0].name == "add"
        assert isinstance(blocks[1], TextBlock)
        assert "42" in blocks[1].text


# Test 3: a tool that raises


async def test_auto_execute_tool_exception(fake_openai):
    fake_openai["enqueue"](
        tool_call_chunks(tool_id="call-1", name="divide", arguments='{"a": 10, "b": 0}'),
        text_chunks("Cannot divide by zero"),
    )

    def divide_handler(args):
        if args["b"] == 0:
            raise ValueError("Division by zero")
        return {"result": args["a"] / args["b"]}

    divide_tool = tool("divide", "Divide", {"a": int, "b": int})(divide_handler)

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[divide_tool],
        auto_execute_tools=True,
    )

    async with Client(options) as client:
        await client.query("Divide 10 by 0")

        blocks = []
        async for block in client.receive_messages():
            blocks.append(block)

        # Should yield: ToolUseBlock, ToolUseError, TextBlock
        assert len(blocks) == 3
        assert isinstance(blocks[0], ToolUseBlock)
        assert isinstance(blocks[1], ToolUseError)
        assert "Division by zero" in blocks[1].error
        assert isinstance(blocks[2], TextBlock)


# Test 4: an unknown tool name


async def test_auto_execute_unknown_tool(fake_openai):
    fake_openai["enqueue"](
        tool_call_chunks(tool_id="call-1", name="nonexistent", arguments="{}"),
        text_chunks("Tool not found"),
    )

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[],  # No tools registered
        auto_execute_tools=True,
    )

    async with Client(options) as client:
        await client.query("Use nonexistent tool")

        blocks = []
        async for block in client.receive_messages():
            blocks.append(block)

        assert len(blocks) == 3
        assert isinstance(blocks[0], ToolUseBlock)
        assert isinstance(blocks[1], ToolUseError)
        assert "Unknown tool: nonexistent" in blocks[1].error


# Test 5: the max iterations limit


@pytest.mark.xfail(
    strict=True,
    reason="the plan's 3; open-agent-sdk 0.4.2 as released (and toolreel.open_agent) yields 4 "
    "tool calls at max_tool_iterations=3: its test_auto_execution_max_iterations_limit",
)
async def test_auto_execute_max_iterations(fake_openai):
    # Model keeps calling same tool infinitely
    for _ in range(10):  # Enqueue 10 tool calls
        fake_openai["enqueue"](tool_call_chunks(tool_id=f"call-{_}", name="loop", arguments="{}"))

    loop_tool = tool("loop", "Loop", {})(lambda args: {"status": "looping"})

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[loop_tool],
        auto_execute_tools=True,
        max_tool_iterations=3,
    )

    async with Client(options) as client:
        await client.query("Start loop")

        blocks = []
        async for block in client.receive_messages():
            blocks.append(block)

        # Should stop at 3 iterations (not 10)
        tool_blocks = [b for b in blocks if isinstance(b, ToolUseBlock)]
        assert len(tool_blocks) == 3


# Test 6: PreToolUse blocks execution in auto mode


@pytest.mark.xfail(
    strict=True,
    reason="the plan's ToolUseBlock, ToolUseError, TextBlock; open-agent-sdk 0.4.2 as released "
    "(and toolreel.open_agent) yields only the ToolUseError and ends the turn: its "
    "test_auto_execution_pretooluse_hook_blocks_execution",
)
async def test_pre_tool_use_blocks_auto_execution(fake_openai):
    fake_openai["enqueue"](
        tool_call_chunks(tool_id="call-1", name="dangerous", arguments="{}"),
        text_chunks("Operation blocked"),
    )

    async def block_hook(event):
        if event.tool_name == "dangerous":
            return HookDecision(continue_=False, reason="Blocked")
        return None

    dangerous_tool = tool("dangerous", "Dangerous", {})(lambda args: {"result": "executed"})

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[dangerous_tool],
        auto_execute_tools=True,
        hooks={HOOK_PRE_TOOL_USE: [block_hook]},
    )

    async with Client(options) as client:
        await client.query("Use dangerous tool")

        blocks = []
        async for block in client.receive_messages():
            blocks.append(block)

        # Should yield: ToolUseBlock, ToolUseError (from hook), TextBlock
        # Tool should NOT execute (no add_tool_result call)
        assert len(blocks) == 3
        assert isinstance(blocks[1], ToolUseError)
        assert "Blocked" in blocks[1].error


# Test 7: UserPromptSubmit fires once, not on the continuation


async def test_user_prompt_submit_fires_once(fake_openai):
    fake_openai["enqueue"](
        tool_call_chunks(tool_id="call-1", name="add", arguments='{"a": 1, "b": 2}'),
        text_chunks("Result: 3"),
    )

    hook_calls = []

    async def track_hook(event):
        hook_calls.append(event.prompt)
        return None  # noqa: RET501 (the plan's own line)

    add_tool = tool("add", "Add", {"a": int, "b": int})(
        lambda args: {"result": args["a"] + args["b"]}
    )

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[add_tool],
        auto_execute_tools=True,
        hooks={HOOK_USER_PROMPT_SUBMIT: [track_hook]},
    )

    async with Client(options) as client:
        await client.query("Calculate 1 + 2")

        async for _ in client.receive_messages():
            pass

        # Hook should fire exactly once (initial query, not continuation)
        assert len(hook_calls) == 1
        assert hook_calls[0] == "Calculate 1 + 2"


# Test 8: auto_execute_tools=False behaves as before (manual mode)


async def test_manual_mode_unchanged(fake_openai):
    fake_openai["enqueue"](
        tool_call_chunks(tool_id="call-1", name="add", arguments='{"a": 1, "b": 2}')
    )

    add_tool = tool("add", "Add", {"a": int, "b": int})(
        lambda args: {"result": args["a"] + args["b"]}
    )

    options = AgentOptions(
        system_prompt="test",
        model="test",
        base_url="http://test",
        tools=[add_tool],
        auto_execute_tools=False,  # Explicit manual mode
    )

    async with Client(options) as client:
        await client.query("Calculate 1 + 2")

        blocks = []
        async for block in client.receive_messages():
            blocks.append(block)

        # Should yield only ToolUseBlock (no auto-execution)
        assert len(blocks) == 1
        assert isinstance(blocks[0], ToolUseBlock)

        # User must manually execute and continue
        result = await add_tool.execute(blocks[0].input)
        await client.add_tool_result(blocks[0].id, result, name="add")

        # History should have tool result
        assert len(client.history) == 3  # user, assistant, tool
