"""Scaling out: worker processes share one journal; a session has one writer at a time.

    python examples/scaling.py                          # offline: SQLite, the scripted model
    python examples/scaling.py --journal postgresql://user:pw@127.0.0.1:5432/agents

Three worker processes run sessions into one journal (a SQLite file here; a
`postgresql://` URL lets workers on many machines share it: `pip install
'toolreel[postgres]'`). Then two Clients open the same session: the second is refused
with SessionBusy, naming the owner, so two writers never interleave a session's steps.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import anyio

from toolreel.shell import AgentOptions, Client, open_journal, run, tool
from toolreel.shell.errors import SessionBusy
from toolreel.testing import ScriptedServer, calculator

WORKERS = 3


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def options(base_url: str, journal: str, session_id: str | None = None) -> AgentOptions:
    """Every worker's options: the same model and the same journal."""
    return AgentOptions(
        base_url=base_url,
        model="calculator",
        api_key="none",
        tools=[add],
        journal=journal,
        session_id=session_id,
    )


def work(base_url: str, journal: str, number: int) -> None:
    """A worker process: two sessions of its own, in the shared journal."""
    for turn in range(2):
        session_id = f"worker{number}-{turn}"
        prompt = f"What is {number} plus {turn}?"
        result = anyio.run(run, prompt, options(base_url, journal, session_id))
        print(f"{session_id}: {result.text}", flush=True)


async def one_writer(base_url: str, journal: str) -> None:
    """Two Clients on one session: the first owns it, the second is refused at once."""
    async with Client(options(base_url, journal, "worker0-0")):
        try:
            async with Client(options(base_url, journal, "worker0-0")):
                pass
        except SessionBusy as busy:
            print("second writer refused:", busy)


def main() -> None:
    """Start the workers, wait for them, list the journal, show one writer per session."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journal", default="shared.db", help="a file or postgresql:// URL")
    parser.add_argument("--worker", type=int, help="be worker N (with --base-url)")
    parser.add_argument("--base-url")
    args = parser.parse_args()
    if args.worker is not None:
        work(args.base_url, args.journal, args.worker)
        return

    with ScriptedServer(calculator) as server:
        command = [sys.executable, __file__, "--base-url", server.url, "--journal", args.journal]
        workers = [subprocess.Popen([*command, "--worker", str(n)]) for n in range(WORKERS)]
        assert all(worker.wait() == 0 for worker in workers)
        journal = open_journal(args.journal)
        print("sessions in the journal:", ", ".join(sorted(journal.sessions())))
        journal.close()
        anyio.run(one_writer, server.url, args.journal)


if __name__ == "__main__":
    main()
