"""Tools the browser test serves: the demo's calculator, with a division that waits forever.

The scripted model calls `divide` for "... divided by ..."; this one never returns
by itself, so a turn that reaches it is still running when the test presses Stop.
"""

from __future__ import annotations

import anyio

from toolreel.shell import Tool, tool
from toolreel.shell.demo import add, multiply, subtract


@tool("divide", "Divide two numbers (here: never, until stopped)", {"a": float, "b": float})
async def divide(args: dict[str, float]) -> dict[str, float]:
    """Wait until cancelled: the test stops the turn while this runs."""
    await anyio.sleep_forever()
    return {"result": args["a"] / args["b"]}


TOOLS: list[Tool] = [add, subtract, multiply, divide]
