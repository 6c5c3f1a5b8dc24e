"""A worker for the agent approval test: this process runs an agent until it pauses, then exits.

Usage: python agent_approval_worker.py BASE_URL JOURNAL EFFECTS
Prints one JSON line: the session and the call ids `ApprovalPending` named.
"""

from __future__ import annotations

import json
import sys

import anyio
from agent_approval_defs import definition, options

from toolreel.shell import execute_agent
from toolreel.shell.errors import ApprovalPending


async def main(base_url: str, journal: str, effects: str) -> None:
    """Run the agent until it pauses for approval."""
    try:
        await execute_agent(definition(effects), "INV-1", options(base_url, journal))
    except ApprovalPending as pending:
        print(
            json.dumps(
                {"session": pending.session_id, "held": [r.call.id for r in pending.requests]}
            )
        )


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
