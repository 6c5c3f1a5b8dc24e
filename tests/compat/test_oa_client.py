"""toolreel.open_agent's Client and query(): open-agent-sdk 0.4.2's behaviour, import changed.

The model is a stub patched in at `toolreel.open_agent.client.create_client`
(the seam open_agent's users and tests patch), or the real `openai.AsyncOpenAI`
talking to the scripted server on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
import pytest
from oa_stub import StubOpenAI, call_chunks, options, text_chunks, use

from toolreel.core import ChatMessage
from toolreel.open_agent import (
    AssistantMessage,
    Client,
    ModelError,
    NothingToReceive,
    ResultsOwed,
    TextBlock,
    ToolUseBlock,
    ToolUseError,
    query,
    tool,
)
from toolreel.testing import MakeScriptedModel, text, tool_calls


@tool("add", "Add two numbers", {"a": int, "b": int})
async def add(args: dict[str, Any]) -> dict[str, Any]:
    return {"result": args["a"] + args["b"]}


ADD_1_2 = ("call-1", "add", '{"a": 1, "b": 2}')


async def read(client: Client) -> list[Any]:
    """Every block `receive_messages()` yields now."""
    return [block async for block in client.receive_messages()]


def test_manual_mode_add_tool_result_then_query_empty_continues(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub = use(monkeypatch, StubOpenAI(call_chunks(ADD_1_2), text_chunks("1 + 2 = 3")))

    async def main() -> tuple[Any, ...]:
        async with Client(options(tools=[add])) as client:
            await client.query("Calculate 1 + 2")
            first = await read(client)
            result = await add.execute(first[0].input)
            await client.add_tool_result(first[0].id, result, name="add")
            after_result = len(client.history)
            await client.query("")
            return first, after_result, await read(client), client.history, client.records

    first, after_result, answer, history, records = anyio.run(main)

    assert first == [ToolUseBlock(id="call-1", name="add", input={"a": 1, "b": 2})]
    assert after_result == 3  # user, assistant, tool
    assert answer == [TextBlock(text="1 + 2 = 3")]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2] == {
        "role": "tool",
        "tool_call_id": "call-1",
        "content": '{"result": 3}',
        "name": "add",
    }
    # The continuation sent no new user message; toolreel's records hold the turn compactly.
    assert [m["role"] for m in stub.bodies[1]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    assert "stream_options" not in stub.bodies[0]  # local servers may refuse it
    assert [m.role for m in records] == ["user", "assistant"]
    assert records[1].content == "1 + 2 = 3"
    assert records[1].tool_rounds[0].results[0].content == '{"result": 3}'


def test_the_seeds_nested_manual_loop_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, StubOpenAI(call_chunks(ADD_1_2), text_chunks("It is ", "3.")))
    printed: list[str] = []

    async def main() -> None:
        async with Client(options(tools=[add])) as client:
            await client.query("What's 1 + 2?")
            async for block in client.receive_messages():
                if isinstance(block, ToolUseBlock):
                    result = await add.execute(block.input)
                    await client.add_tool_result(block.id, result, name=block.name)
                    await client.query("")
                    async for response in client.receive_messages():
                        if hasattr(response, "text"):
                            printed.append(response.text)

    anyio.run(main)
    assert printed == ["It is ", "3."]


def test_query_empty_continues_after_the_results_and_a_new_prompt_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stub = use(monkeypatch, StubOpenAI(call_chunks(ADD_1_2), text_chunks("3"), text_chunks("Bye")))

    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        async with Client(options(tools=[add])) as client:
            await client.query("1 + 2?")
            calls = await read(client)
            await client.add_tool_result("call-1", {"result": 3})
            await client.query("")
            answer = await read(client)
            await client.query("Thanks")
            return calls, answer, await read(client)

    calls, answer, bye = anyio.run(main)
    assert [type(block) for block in calls] == [ToolUseBlock]
    assert (answer, bye) == ([TextBlock(text="3")], [TextBlock(text="Bye")])
    assert len(stub.bodies) == 3


def test_a_prompt_while_calls_still_await_results_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    two = (ADD_1_2, ("call-2", "add", '{"a": 3, "b": 4}'))
    use(monkeypatch, StubOpenAI(call_chunks(*two)))

    async def main() -> None:
        async with Client(options(tools=[add])) as client:
            await client.query("Two sums")
            await read(client)
            await client.add_tool_result("call-1", {"result": 3})
            with pytest.raises(ResultsOwed, match=r"add_tool_result: call-2 \(add\)"):
                await client.query("")
            await client.interrupt()

    anyio.run(main)


def test_receive_messages_before_any_query_raises_and_after_a_response_returns_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use(monkeypatch, StubOpenAI(text_chunks("Hi")))

    async def main() -> tuple[list[Any], list[Any]]:
        client = Client(options())
        with pytest.raises(NothingToReceive, match=r"Call query\(\)"):
            await read(client)
        await client.query("Hello")
        return await read(client), await read(client)

    answer, again = anyio.run(main)
    assert answer == [TextBlock(text="Hi")]
    assert again == []


def test_the_client_works_without_async_with_and_counts_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use(monkeypatch, StubOpenAI(text_chunks("Paris"), text_chunks("About 2 million")))
    client = Client(options(max_turns=5))

    async def main() -> None:
        await client.query("Capital of France?")
        await read(client)
        await client.query("Its population?")
        await read(client)

    anyio.run(main)
    assert client.turn_count == 2
    assert client.turn_metadata == {"turn_count": 2, "max_turns": 5}
    assert [m["content"] for m in client.message_history] == [
        "Capital of France?",
        "Paris",
        "Its population?",
        "About 2 million",
    ]


def test_a_failed_model_call_raises_from_query_and_leaves_the_history_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use(monkeypatch, StubOpenAI(RuntimeError("boom")))
    client = Client(options())

    async def main() -> None:
        await client.query("hello")

    with pytest.raises(ModelError, match="boom") as raised:
        anyio.run(main)
    assert isinstance(raised.value, RuntimeError)
    assert client.message_history == []
    assert client.response_stream is None


def test_an_edited_history_is_what_the_next_call_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = use(monkeypatch, StubOpenAI(text_chunks("A"), text_chunks("B"), text_chunks("C")))
    client = Client(options())

    async def turn(prompt: str) -> None:
        await client.query(prompt)
        await read(client)

    async def main() -> None:
        await turn("one")
        await turn("two")
        client.message_history = client.history[-2:]  # keep the last exchange only
        await turn("three")

    anyio.run(main)
    sent = [m["content"] for m in stub.bodies[2]["messages"][1:]]
    assert sent == ["two", "B", "three"]
    assert [m.content for m in client.records] == ["two", "B", "three", "C"]


def test_interrupt_without_async_with_stops_the_response(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, StubOpenAI(text_chunks("First ", "Second ", "Third"), text_chunks("Again")))
    client = Client(options())

    async def main() -> tuple[list[Any], list[Any]]:
        await client.query("Test")
        seen = []
        async for block in client.receive_messages():
            seen.append(block)
            await client.interrupt()
        await client.query("Test 2")
        return seen, await read(client)

    seen, after = anyio.run(main)
    assert seen == [TextBlock(text="First ")]
    assert after == [TextBlock(text="Again")]
    assert client.response_stream is None


def test_query_streams_pieces_then_the_calls_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[Any] = []

    @tool("search", "Search", {"query": str})
    def search(args: dict[str, Any]) -> str:
        ran.append(args)
        return "found"

    stub = use(
        monkeypatch,
        StubOpenAI(
            text_chunks("Hello", "Hello world") + call_chunks(("c1", "search", '{"query": "x"}'))
        ),
    )

    async def main() -> list[AssistantMessage]:
        return [m async for m in query("Hi?", options(tools=[search], auto_execute_tools=True))]

    messages = anyio.run(main)
    assert [m.content for m in messages] == [
        [TextBlock(text="Hello")],
        [TextBlock(text=" world")],  # a provider resending the whole text: only the new part
        [ToolUseBlock(id="c1", name="search", input={"query": "x"})],
    ]
    assert ran == []
    assert stub.closed
    assert stub.bodies[0]["tools"] == [search.to_openai_format()]


def test_auto_mode_runs_tools_until_the_model_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    @tool("divide", "Divide", {"a": int, "b": int})
    def divide(args: dict[str, Any]) -> float:
        return args["a"] / args["b"]

    stub = use(
        monkeypatch,
        StubOpenAI(
            call_chunks(ADD_1_2, ("call-2", "divide", '{"a": 1, "b": 0}')),
            call_chunks(("call-3", "nope", "{}")),
            text_chunks("Done"),
        ),
    )

    async def main() -> tuple[list[Any], list[dict[str, Any]]]:
        async with Client(options(tools=[add, divide], auto_execute_tools=True)) as client:
            await client.query("Go")
            return await read(client), client.history

    blocks, history = anyio.run(main)
    assert [type(b).__name__ for b in blocks] == [
        "ToolUseBlock",
        "ToolUseBlock",
        "ToolUseError",
        "ToolUseBlock",
        "ToolUseError",
        "TextBlock",
    ]
    assert "division by zero" in blocks[2].error
    assert blocks[4].error == "Unknown tool: nope"
    tools = [json.loads(m["content"]) for m in history if m["role"] == "tool"]
    assert tools == [
        {"result": 3},
        {"error": "division by zero", "tool": "divide"},
        {"error": "Unknown tool: nope", "tool": "nope"},
    ]
    assert len(stub.bodies) == 3


def test_auto_mode_calls_the_model_once_more_at_the_iteration_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looping = [call_chunks((f"call-{n}", "add", '{"a": 1, "b": 1}')) for n in range(10)]
    stub = use(monkeypatch, StubOpenAI(*looping))
    runs: list[Any] = []
    counted = tool("add", "Add", {"a": int, "b": int})(lambda args: runs.append(args) or 2)

    async def main() -> list[dict[str, Any]]:
        opts = options(tools=[counted], auto_execute_tools=True, max_tool_iterations=3)
        async with Client(opts) as client:
            await client.query("Loop")
            blocks = await read(client)
            assert [b.id for b in blocks if isinstance(b, ToolUseBlock)] == [
                "call-0",
                "call-1",
                "call-2",
                "call-3",
            ]
            return client.history

    history = anyio.run(main)
    assert len(stub.bodies) == 4
    assert len(runs) == 3  # the response at the cap is shown, its call not run
    last = json.loads(history[-1]["content"])
    assert last["error"].startswith("not run: max_tool_iterations (3)")


def test_the_real_sdk_client_end_to_end(scripted_model: MakeScriptedModel) -> None:
    scripted = scripted_model([tool_calls(("call_1", "add", {"a": 25, "b": 17})), text("42")])
    assert scripted.server is not None
    opts = options(base_url=scripted.server.url, tools=[add], auto_execute_tools=True)

    async def main() -> tuple[list[Any], tuple[ChatMessage, ...]]:
        async with Client(opts) as client:
            await client.query("What's 25 + 17?")
            return await read(client), client.records

    blocks, records = anyio.run(main)
    assert blocks[0] == ToolUseBlock(id="call_1", name="add", input={"a": 25, "b": 17})
    assert "".join(b.text for b in blocks if isinstance(b, TextBlock)) == "42"
    assert records[1].tool_rounds[0].results[0].content == '{"result": 42}'
    assert scripted.requests[1]["messages"][-1]["role"] == "tool"


def test_blocks_and_errors_are_open_agents_shapes() -> None:
    error = ToolUseError(error="Unknown tool: x", raw_data="{}")
    assert (error.error, error.raw_data) == ("Unknown tool: x", "{}")
    assert ToolUseBlock(id="1", name="n", input={}).type == "tool_use"
    assert AssistantMessage(content=[TextBlock(text="x")]).role == "assistant"


def test_interrupt_from_another_task_stops_the_reader_at_its_next_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saw_first, gate = anyio.Event(), anyio.Event()

    class Held:
        """Streams "a", then holds until the gate opens, then "b" and "c"."""

        def __aiter__(self) -> Any:
            async def each() -> Any:
                yield text_chunks("a")[0]
                await gate.wait()
                for chunk in text_chunks("b", "c"):
                    yield chunk

            return each()

    stub = StubOpenAI()
    stub.chat.completions.create = lambda **body: _returning(Held())
    use(monkeypatch, stub)
    client = Client(options())
    seen: list[Any] = []

    async def reader() -> None:
        await client.query("Test")
        async for block in client.receive_messages():
            seen.append(block)
            saw_first.set()

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            await saw_first.wait()
            await anyio.sleep(0)  # let the reader wait for its next event
            await client.interrupt()
            gate.set()

    anyio.run(main)
    assert seen == [TextBlock(text="a")]
    assert client.response_stream is None


async def _returning(value: Any) -> Any:
    """`value`, awaited (a stub `create`)."""
    return value


def test_importing_toolreel_open_agent_does_not_import_openai() -> None:
    program = "import sys, toolreel.open_agent\nprint('openai' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
