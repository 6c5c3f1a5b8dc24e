"""Tools for the `toolreel` command's tests, in every form `--tools MODULE:ATTR` accepts."""

from __future__ import annotations

from toolreel.shell import tool


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add(args: dict[str, float]) -> dict[str, float]:
    """a + b (open_agent style)."""
    return {"result": args["a"] + args["b"]}


@tool
def subtract(a: float, b: float) -> float:
    """Subtract two numbers."""
    return a - b


def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def divide(a: float, b: float) -> float:
    """Divide two numbers."""
    if b == 0:
        raise ValueError("Cannot divide by zero")
    return a / b


#: The four calculator tools: Tool objects and plain functions mixed.
TOOLS = [add, subtract, multiply, divide]

#: Not tools at all.
NUMBER = 42
