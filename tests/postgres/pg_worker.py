"""A worker process for the PostgreSQL journal tests: runs sessions, or races for one.

python pg_worker.py run DSN BASE_URL FIRST STEP TOTAL
    Runs sessions s{FIRST}, s{FIRST+STEP}, ... below TOTAL, four at a time, each one
    turn with one tool round against the scripted server, into one shared journal.
python pg_worker.py hold DSN LEASE_SECONDS
    Begins session "s" and prints "owner" (then waits on stdin), or prints "busy".
    Waits for a line on stdin before beginning, so two can race.
"""

from __future__ import annotations

import sys

import anyio

from toolreel.adapters import PostgresJournal, SessionBusy
from toolreel.core import LoopConfig
from toolreel.shell import AgentOptions, Client, tool


@tool
def record(n: int) -> str:
    """Record item n."""
    return f"recorded {n}"


async def run(dsn: str, base_url: str, first: int, step: int, total: int) -> None:
    """Run this worker's share of the sessions, four at a time, into one journal object."""
    journal = PostgresJournal(dsn)
    limit = anyio.Semaphore(4)

    async def one(index: int) -> None:
        options = AgentOptions(
            model="scripted",
            base_url=base_url,
            api_key="sk-test-worker",
            tools=[record],
            auto_execute_tools=True,
            journal=journal,
            session_id=f"s{index:03d}",
        )
        async with limit, Client(options) as client:
            await client.query(f"record {index}")
            await client.wait()

    try:
        async with anyio.create_task_group() as group:
            for index in range(first, total, step):
                group.start_soon(one, index)
    finally:
        journal.close()


def hold(dsn: str, lease_seconds: float) -> None:
    """Race for session "s": print whether this process got it; the owner then holds it."""
    journal = PostgresJournal(dsn, lease_seconds=lease_seconds)
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        journal.begin("s", LoopConfig(model="m"))
    except SessionBusy:
        print("busy", flush=True)
        return
    print("owner", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    if sys.argv[1] == "run":
        dsn, url, first, step, total = sys.argv[2:7]
        anyio.run(run, dsn, url, int(first), int(step), int(total))
    else:
        hold(sys.argv[2], float(sys.argv[3]))
