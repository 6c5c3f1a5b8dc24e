"""Decisions on one held call that race, and a journal that fails as one is recorded (issue 20,
item 2): exactly one decision wins, the others are refused at once, the journal says what
really ran, and nobody is left waiting. (Over HTTP: tests/web/test_web_one_writer.py.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import anyio
import pytest
from one_writer import Opened, clean, one_round, opener

from toolreel.adapters import JournalUnavailable, MemoryJournal, Step
from toolreel.core import Approved, Phase, ToolFinished
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, tool
from toolreel.shell.errors import UnknownApproval


@pytest.fixture
def journal_of(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Opened]]:
    """Open a journal of a kind (tests/one_writer.py), PostgreSQL on the test's own schema."""
    opened: list[Opened] = []

    def open_kind(kind: str) -> Opened:
        dsn = request.getfixturevalue("postgres_dsn") if kind.startswith("postgres") else None
        opened.append(opener(kind, tmp_path, dsn))
        return opened[-1]

    yield open_kind
    for item in opened:
        item.close()


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("kind", ["sqlite", "memory", "postgres"])
def test_n_approvals_of_one_held_call_at_once_run_it_once_and_the_others_are_refused_at_once(
    journal_of: Callable[[str], Opened], kind: str, n: int
) -> None:
    opened = journal_of(kind)
    refused: list[UnknownApproval] = []
    all_refused = anyio.Event()
    ran: list[str] = []

    @tool(requires_approval=True)
    async def delete() -> str:
        """Delete (noted), once every other decision has been refused."""
        ran.append("delete")
        await all_refused.wait()
        return "deleted"

    options = AgentOptions(
        model="m", tools=[delete], auto_execute_tools=True, journal=opened.given, session_id="s"
    )

    async def main() -> None:
        async with Client(options, model=one_round("delete")) as client:
            await client.query("delete it")
            assert await client.wait() is None and client.phase is Phase.AWAITING_APPROVAL
            [held] = client.pending_approvals

            async def approve() -> None:
                try:
                    await client.approve(held.call.id)
                except UnknownApproval as exc:
                    refused.append(exc)
                    if len(refused) == n - 1:
                        all_refused.set()

            with anyio.fail_after(30):
                async with anyio.create_task_group() as tasks:
                    for _ in range(n):
                        tasks.start_soon(approve)
                finish = await client.wait()
            assert finish is not None and finish.reason is FinishReason.COMPLETED
            assert finish.text == "done: deleted"

    anyio.run(main)
    assert len(refused) == n - 1 and ran == ["delete"]
    assert all(  # in the core's words: its decision on its way, the call awaits none
        str(exc).startswith("can't handle event Approved(call_id=")
        and ("no call awaits approval" in str(exc) or "already decided" in str(exc))
        for exc in refused
    )
    journal = opened.reader()
    decisions = [e.event for e in journal.entries("s") if isinstance(e.event, Approved)]
    outputs = [e.event.output for e in journal.entries("s") if isinstance(e.event, ToolFinished)]
    assert len(decisions) == 1 and outputs == ["deleted"]  # what really ran
    clean(journal, "s", turns=1)


class FullDisk(MemoryJournal):
    """A journal whose disk fills up once `full` is set: every write then fails."""

    def __init__(self) -> None:
        super().__init__()
        self.full = False

    def append(self, session_id: str, steps: Sequence[Step]) -> None:
        if self.full:
            raise JournalUnavailable("cannot write journal disk.db: No space left on device")
        super().append(session_id, steps)


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_decision_the_journal_cannot_record_raises_to_its_caller(decision: str) -> None:
    ran: list[str] = []

    @tool(requires_approval=True)
    def delete() -> str:
        """Delete (noted)."""
        ran.append("delete")
        return "deleted"

    journal = FullDisk()
    options = AgentOptions(
        model="m", tools=[delete], auto_execute_tools=True, journal=journal, session_id="s"
    )

    async def main() -> None:
        async with Client(options, model=one_round("delete")) as client:
            await client.query("delete it")
            await client.wait()
            [held] = client.pending_approvals
            journal.full = True
            with anyio.fail_after(30), pytest.raises(JournalUnavailable, match="No space left"):
                if decision == "approve":
                    await client.approve(held.call.id)
                else:
                    await client.deny(held.call.id, "no")
            with pytest.raises(JournalUnavailable):  # the turn stopped with that error
                await client.wait()

    anyio.run(main)
    assert ran == []  # a decision is on disk before its call runs: it never ran
