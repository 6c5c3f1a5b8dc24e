"""Tools for tests/web/test_web_serve.py: the calculator's, with an `add` that hangs on 999.

`add(999, ...)` touches `started` in $TOOLREEL_WEB_MARKS, then waits until it is
cancelled, touching `cancelled` on the way out: what a disconnect must do to it.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from toolreel.shell import Tool, tool
from toolreel.shell.demo import divide, multiply, subtract


@tool("add", "Add two numbers", {"a": float, "b": float})
async def add(args: dict[str, float]) -> dict[str, float]:
    """a + b; for a == 999, hang until cancelled."""
    if args["a"] == 999:
        marks = Path(os.environ["TOOLREEL_WEB_MARKS"])
        (marks / "started").touch()
        try:
            await anyio.sleep_forever()
        finally:
            (marks / "cancelled").touch()
    return {"result": args["a"] + args["b"]}


TOOLS: list[Tool] = [add, subtract, multiply, divide]
