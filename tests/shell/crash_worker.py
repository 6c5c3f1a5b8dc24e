"""A worker for the crash test: runs a multi-round session with a side-effecting tool.

Usage: python crash_worker.py BASE_URL JOURNAL EFFECTS_FILE [resume]
The tool appends its argument to EFFECTS_FILE (fsync'd) before returning, so the
test can count how often each call really ran.
"""

from __future__ import annotations

import os
import sys

import anyio

from toolreel.adapters import SQLiteJournal
from toolreel.core.policies import RetryPolicy
from toolreel.shell import AgentOptions, Client, tool


def options(base_url: str, journal: str, effects: str) -> AgentOptions:
    """The session's options (the same for the first run and the resume)."""

    @tool
    async def record(n: int) -> str:
        """Record that call n ran (a side effect that must not happen twice)."""
        with open(effects, "a", encoding="utf-8") as file:
            file.write(f"{n}\n")
            file.flush()
            os.fsync(file.fileno())
        await anyio.sleep(0.02)
        return f"recorded {n}"

    return AgentOptions(
        model="crash-test",
        base_url=base_url,
        api_key="sk-test",
        tools=[record],
        auto_execute_tools=True,
        max_tool_iterations=20,
        journal=journal,
        session_id="crash",
        retry=RetryPolicy(max_retries=5, base_delay=0.01),
    )


async def main(base_url: str, journal: str, effects: str, resume: bool) -> None:
    """Run the session (or resume it) to its end."""
    opts = options(base_url, journal, effects)
    journaled = SQLiteJournal(journal)
    known = "crash" in journaled.sessions()
    journaled.close()
    if resume and known:
        async with Client.resume("crash", opts) as client:
            await client.wait()
        return  # killed before the prompt reached the journal: start over
    async with Client(opts) as client:
        await client.query("Record rounds.")
        await client.wait()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], len(sys.argv) > 4)
