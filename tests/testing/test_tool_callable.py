"""`@tool` keeps the function: callable as it was, and still a Tool wherever tools go."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest

from toolreel.shell import AgentOptions, Tool, run, tool
from toolreel.testing import TestModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(timeout=5)
async def fetch(key: str) -> str:
    """Fetch a value."""
    await anyio.sleep(0)
    return key.upper()


@tool("scale", "Scale a number", {"x": float})
def scale(args: dict[str, Any]) -> float:
    return args["x"] * 2


def test_a_sync_tool_called_directly_returns_what_its_function_returns() -> None:
    assert add(2, 3) == 5
    assert add(a=2, b=3) == 5
    assert scale({"x": 1.5}) == 3.0


def test_an_async_tool_called_directly_gives_its_awaitable() -> None:
    pending = fetch("k")
    assert inspect.isawaitable(pending)

    async def wait() -> str:
        return await pending

    assert anyio.run(wait) == "K"


def test_a_direct_call_is_the_plain_call_unchecked_and_its_errors_are_its_own() -> None:
    with pytest.raises(TypeError):
        add(1)  # type: ignore[call-arg]
    assert add("a", "b") == "ab"  # type: ignore[arg-type]  # no conversion: the function as it is


def test_it_is_still_a_tool_for_the_loop() -> None:
    assert isinstance(add, Tool) and add.spec.name == "add"
    assert add.timeout is None and fetch.timeout == 5
    model = TestModel(args={"add": {"a": 4, "b": 5}, "fetch": {"key": "x"}}, text="ok")
    result = anyio.run(lambda: run("Go", AgentOptions(tools=[add, fetch]), model=model))
    outputs = sorted(r.content for r in result.rounds[0].results)
    assert outputs == ["9", "X"]
