"""toolreel.shell.Client runs seed 002's manual-mode example: `add_tool_result` + `query("")`."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolreel.shell import Client, TextBlock, ToolUseBlock, TurnInProgress, tool
from toolreel.testing import MakeScriptedModel, text, tool_calls


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add(args: dict[str, Any]) -> dict[str, Any]:
    return {"result": args["a"] + args["b"]}


def test_the_seeds_nested_manual_loop_runs_on_the_shells_client(
    scripted_model: MakeScriptedModel,
) -> None:
    scripted = scripted_model(
        [tool_calls(("call_1", "add", {"a": 25, "b": 17})), text("The answer is 42.")], http=False
    )
    printed: list[str] = []

    async def main() -> list[Any]:
        async with Client(scripted.options(tools=[add]), model=scripted.model) as client:
            await client.query("What's 25 + 17?")
            seen = []
            async for block in client.receive_messages():
                seen.append(block)
                if isinstance(block, ToolUseBlock):
                    result = await add.execute(block.input)
                    await client.add_tool_result(block.id, result, name=block.name)
                    await client.query("")  # Continue
                    async for response in client.receive_messages():
                        if hasattr(response, "text"):
                            printed.append(response.text)
            return seen

    seen = anyio.run(main)
    assert seen == [ToolUseBlock(id="call_1", name="add", input={"a": 25, "b": 17})]
    assert printed == ["The answer is 42."]


def test_query_empty_after_the_results_were_read_on_continues_too(
    scripted_model: MakeScriptedModel,
) -> None:
    scripted = scripted_model(
        [tool_calls(("call_1", "add", {"a": 1, "b": 2})), text("3"), text("Bye")], http=False
    )

    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        async with Client(scripted.options(tools=[add]), model=scripted.model) as client:
            await client.query("1 + 2?")
            calls = [block async for block in client.receive_messages()]
            await client.add_tool_result("call_1", {"result": 3})
            await client.query("")
            answer = [block async for block in client.receive_messages()]
            await client.query("Thanks")
            return calls, answer, [block async for block in client.receive_messages()]

    calls, answer, bye = anyio.run(main)
    assert [type(block) for block in calls] == [ToolUseBlock]
    assert answer == [TextBlock(text="3")]
    assert bye == [TextBlock(text="Bye")]
    assert len(scripted.calls) == 3


def test_query_empty_while_calls_still_await_results_is_refused(
    scripted_model: MakeScriptedModel,
) -> None:
    scripted = scripted_model(
        [tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4}))], http=False
    )

    async def main() -> None:
        async with Client(scripted.options(tools=[add]), model=scripted.model) as client:
            await client.query("Two sums")
            [block async for block in client.receive_messages()]
            await client.add_tool_result("c1", {"result": 3})
            with pytest.raises(TurnInProgress):
                await client.query("")
            await client.interrupt()

    anyio.run(main)


def test_receive_messages_with_no_turn_running_returns_at_once(
    scripted_model: MakeScriptedModel,
) -> None:
    scripted = scripted_model([text("Hi")], http=False)

    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        async with Client(scripted.options(), model=scripted.model) as client:
            with anyio.fail_after(10):  # a hang is the failure this guards against
                before = [block async for block in client.receive_messages()]
            await client.query("Hello")
            answer = [block async for block in client.receive_messages()]
            with anyio.fail_after(10):
                return before, answer, [block async for block in client.receive_messages()]

    before, answer, after = anyio.run(main)
    assert (before, answer, after) == ([], [TextBlock(text="Hi")], [])
