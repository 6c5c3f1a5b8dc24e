"""The sessions and models of the evaluation tests (tests/shell/test_eval*.py).

The recorded sessions are "arith-a" sessions (tests/shell/whatif_tools.py), one
prompt each, "What is X+Y then times Z?". The new model "arith-c" answers as
"arith-a" when X is even and as "arith-b" when X is odd — it calls multiply with
its arguments swapped, a call no recording has, so under recorded tools it
answers "could not compute: ..." instead of the number.

`GatedServer` is a `ScriptedServer` that counts the requests it is answering at
once; once `gate` is set, the next request waits (up to 10 s) until `gate` are in
flight, so a concurrency limit is reached for certain and never passed unnoticed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from whatif_tools import arith, options, record

from toolreel.testing import Reply, ScriptedServer


def numbered(body: dict[str, Any]) -> Reply:
    """arith-a, arith-b, or arith-c: arith-a for an even first number, arith-b for an odd."""
    if body["model"] == "arith-c":
        user = next(m for m in reversed(body["messages"]) if m["role"] == "user")
        odd = int(str(user["content"]).split()[2].split("+")[0]) % 2 == 1
        body = {**body, "model": "arith-b" if odd else "arith-a"}
    return arith(body)


def prompt(number: int) -> str:
    """The prompt of recorded session `number`."""
    return f"What is {number}+3 then times 7?"


def record_sessions(server: ScriptedServer, journal: Any, count: int) -> list[str]:
    """`count` arith-a sessions s01, s02, ... (session sN asks about N+3)."""
    ids = []
    for number in range(1, count + 1):
        session_id = f"s{number:02d}"
        record(options(server, journal, session_id=session_id), prompt(number))
        ids.append(session_id)
    return ids


class GatedServer(ScriptedServer):
    """A scripted server that counts requests in flight; with a `gate`, waits for that many."""

    def __init__(self, script: Any) -> None:
        """Serve `script`, no gate yet."""
        super().__init__(script)
        self.gate: int | None = None
        self.in_flight = 0
        self.most = 0
        self._opened: asyncio.Event | None = None

    async def _respond(self, request: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        """Count this request in flight while it is answered."""
        if self._opened is None:
            self._opened = asyncio.Event()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            if self.gate is not None:
                if self.in_flight >= self.gate:
                    self._opened.set()
                await asyncio.wait_for(self._opened.wait(), timeout=10)
            return await super()._respond(request, writer)
        finally:
            self.in_flight -= 1


def answered_a_number(original: Any, candidate: Any) -> float:
    """A user's check (`--checks eval_models:answered_a_number`): the answer ends in a number."""
    words = candidate.turns[-1].text.rstrip(".").split()
    return 1.0 if words and words[-1].isdigit() else 0.0


def crashes(original: Any, candidate: Any) -> bool:
    """A user's check that raises."""
    raise RuntimeError("the judge is down")
