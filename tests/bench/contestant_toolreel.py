"""toolreel as a contestant of the peer benchmark in ../shared/bench (tests/bench/peer_bench.sh).

Runs one conversation through `toolreel.shell.Client` in auto mode, over the
real OpenAI-compatible adapter, with the benchmark's `add` tool.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.environ["TOOLREEL_BENCH_DIR"])  # the peer bench, for its _common plumbing

from contestants import _common  # type: ignore[import-not-found]
from contestants._common import main, prompt  # type: ignore[import-not-found]

from toolreel.shell import AgentOptions, Client, tool


async def setup(args):
    """Build the client (not timed)."""

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        return await _common.add(a, b, args.tool_sleep_ms)

    options = AgentOptions(
        model="bench",
        base_url=args.base_url,
        api_key="x",
        tools=[add],
        auto_execute_tools=True,
        max_tool_iterations=args.rounds + 1,
        stream=bool(args.stream),
    )
    return Client(options)


async def conversation(client, args):
    """One full tool loop (timed); the final text."""
    async with client:
        await client.query(prompt(args))
        finish = await client.wait()
    return finish.text


if __name__ == "__main__":
    main(setup, conversation)
