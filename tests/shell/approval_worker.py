"""A worker for the approval tests: one process pauses a turn, another decides it.

Usage: python approval_worker.py BASE_URL JOURNAL EFFECTS start
       python approval_worker.py BASE_URL JOURNAL EFFECTS approve CALL_ID
       python approval_worker.py BASE_URL JOURNAL EFFECTS deny CALL_ID REASON
Prints one JSON line: what is pending after `start`, how the turn ended after a decision.
The `delete` tool appends its argument to EFFECTS, so the test sees whether it ran.
"""

from __future__ import annotations

import json
import sys

import anyio

from toolreel.shell import AgentOptions, Client, tool


def options(base_url: str, journal: str, effects: str) -> AgentOptions:
    """The session's options (the same in both processes)."""

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file (recorded in EFFECTS instead)."""
        with open(effects, "a", encoding="utf-8") as file:
            file.write(path + "\n")
        return f"deleted {path}"

    return AgentOptions(
        model="approval-test",
        base_url=base_url,
        api_key="sk-test",
        tools=[delete],
        auto_execute_tools=True,
        journal=journal,
        session_id="approval",
    )


async def main(base_url: str, journal: str, effects: str, command: str, *args: str) -> None:
    """Start the session until it pauses, or resume it and decide one call."""
    opts = options(base_url, journal, effects)
    if command == "start":
        async with Client(opts) as client:
            await client.query("Delete a.txt")
            await client.wait()
            print(json.dumps({"pending": [r.call.id for r in client.pending_approvals]}))
        return
    async with Client.resume("approval", opts) as client:
        waiting = [r.call.id for r in client.pending_approvals]
        if command == "approve":
            await client.approve(args[0])
        else:
            await client.deny(args[0], args[1])
        finish = await client.wait()
        assert finish is not None
        print(json.dumps({"waiting": waiting, "reason": finish.reason.value, "text": finish.text}))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
