"""One writer per session, whatever happens around it (issue 20, item 1).

N Clients opening one session at once, in one process (sharing one journal object, or
each opening the file or URL) or in N processes, give one owner and N-1 `SessionBusy`;
a refused open gives back nothing it does not hold; Clients taking turns on one session
each run theirs; and the journal replays clean after each. On SQLite, JSON lines,
memory and PostgreSQL (tests/conftest.py's throwaway server; skipped without one).
The web's N requests at once: tests/web/test_web_one_writer.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from one_writer import KINDS, Opened, clean, one_round, opener

from toolreel.adapters import (
    JournalUnavailable,
    JSONLJournal,
    Lease,
    SessionBusy,
    SQLiteJournal,
    Step,
)
from toolreel.core import LoopConfig, PromptSubmitted, initial_state, step
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, tool

CONFIG = LoopConfig(model="m")
WORKER = str(Path(__file__).with_name("one_writer_worker.py"))
JOURNALS = ["sqlite", "jsonl", "memory", "postgres"]


@pytest.fixture
def journal_of(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Open a journal of a kind (`KINDS`), the PostgreSQL ones on the test's own schema."""
    opened: list[Opened] = []

    def open_kind(kind: str) -> Opened:
        dsn = request.getfixturevalue("postgres_dsn") if kind.startswith("postgres") else None
        opened.append(opener(kind, tmp_path, dsn))
        return opened[-1]

    yield open_kind
    for item in opened:
        item.close()


def prompt_step(seq: int) -> Step:
    """A step to append: a prompt and its effects."""
    _, effects = step(initial_state(CONFIG), PromptSubmitted(text="hi"))
    return Step(seq=seq, event=PromptSubmitted(text="hi"), effects=effects)


def options(given: object, tools: list, **extra: object) -> AgentOptions:  # type: ignore[type-arg]
    """Session "s" in `given`, tools run."""
    return AgentOptions(
        model="m", tools=tools, auto_execute_tools=True, journal=given, session_id="s", **extra
    )


# --- N Clients in one process -----------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 10])
@pytest.mark.parametrize("kind", KINDS)
def test_n_clients_opening_one_session_at_once_give_one_owner_and_n_minus_1_busy(
    journal_of, kind: str, n: int
) -> None:
    opened = journal_of(kind)
    owners: list[int] = []
    refused: list[SessionBusy] = []
    everyone_answered = anyio.Event()

    @tool
    async def hold() -> str:
        """Hold the session until every other Client has been answered."""
        await everyone_answered.wait()
        return "held"

    def answered() -> None:
        if len(owners) + len(refused) == n:
            everyone_answered.set()

    async def one(index: int) -> None:
        try:
            async with Client(options(opened.given, [hold]), model=one_round("hold")) as client:
                owners.append(index)
                answered()
                await client.query(f"turn {index}")
                finish = await client.wait()
                assert finish is not None and finish.reason is FinishReason.COMPLETED
        except SessionBusy as exc:  # exactly this type: never an exception group
            refused.append(exc)
            answered()

    async def main() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                for index in range(n):
                    tasks.start_soon(one, index)

    anyio.run(main)
    assert len(owners) == 1 and len(refused) == n - 1
    assert all(busy.session_id == "s" and "in use by" in str(busy) for busy in refused)
    clean(opened.reader(), "s", turns=1)


@pytest.mark.parametrize("kind", KINDS)
def test_clients_taking_turns_on_one_session_each_run_theirs_and_it_replays(
    journal_of, kind: str
) -> None:
    opened = journal_of(kind)
    n = 10

    @tool
    async def note() -> str:
        """Let the other Clients try the session while this one holds it."""
        await anyio.sleep(0)
        return "noted"

    async def one(index: int) -> None:
        while True:
            try:
                async with Client(options(opened.given, [note]), model=one_round("note")) as c:
                    await c.query(f"turn {index}")
                    finish = await c.wait()
                    assert finish is not None and finish.reason is FinishReason.COMPLETED
                    return
            except SessionBusy:
                await anyio.sleep(0.01)  # its owner runs: try again

    async def main() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tasks:
                for index in range(n):
                    tasks.start_soon(one, index)

    anyio.run(main)
    replayed = clean(opened.reader(), "s", turns=n)
    assert sorted(turn.prompt for turn in replayed.turns) == sorted(f"turn {i}" for i in range(n))


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_client_of_a_session_in_use_is_refused_and_the_first_goes_on(
    journal_of, kind: str
) -> None:
    opened = journal_of(kind)

    @tool
    def note() -> str:
        """A tool."""
        return "noted"

    async def main() -> None:
        async with Client(options(opened.given, [note]), model=one_round("note")) as first:
            for _ in range(2):  # refused twice: the second refusal finds it held still
                with pytest.raises(SessionBusy, match="'s' is in use by") as refused:
                    async with Client(options(opened.given, [note]), model=one_round("note")):
                        pass  # pragma: no cover
                assert type(refused.value) is SessionBusy
            await first.query("after the refusals")
            finish = await first.wait()
            assert finish is not None and finish.reason is FinishReason.COMPLETED
        async with Client(options(opened.given, [note]), model=one_round("note")) as third:
            await third.query("once it is given back")  # the first gave it back
            await third.wait()

    anyio.run(main)
    clean(opened.reader(), "s", turns=2)


# --- the journals themselves --------------------------------------------------------------


@pytest.mark.parametrize("kind", JOURNALS)
def test_only_the_lease_begin_gave_gives_the_session_back(journal_of, kind: str) -> None:
    journal = journal_of(kind).reader()
    lease = journal.begin("s", CONFIG)
    with pytest.raises(SessionBusy, match="did not release it"):
        journal.begin("s", CONFIG)  # another holder of the same journal object
    journal.release(Lease(session_id="s"))  # not the holder's lease: gives nothing back
    with pytest.raises(SessionBusy, match="did not release it"):
        journal.begin("s", CONFIG)
    journal.append("s", [prompt_step(1)])
    journal.release(lease)
    journal.release(lease)  # given back already: nothing more happens
    again = journal.begin("s", CONFIG, from_seq=1)
    journal.release(again)


@pytest.mark.parametrize("kind", ["sqlite", "jsonl", "memory", "postgres"])
def test_a_writer_that_read_a_session_before_another_wrote_to_it_is_refused(
    journal_of, kind: str
) -> None:
    journal = journal_of(kind).reader()
    lease = journal.begin("s", CONFIG)
    journal.append("s", [prompt_step(1)])
    journal.release(lease)
    # a Client read the session here (one step), then another writer added a step
    other = journal.begin("s", CONFIG, from_seq=1)
    journal.append("s", [prompt_step(2)])
    journal.release(other)
    with pytest.raises(SessionBusy, match="wrote step 2 after this one read the session"):
        journal.begin("s", CONFIG, from_seq=1)
    with pytest.raises(SessionBusy, match="wrote steps 1-2 after"):
        journal.begin("s", CONFIG)  # a new session under a taken id
    journal.release(journal.begin("s", CONFIG, from_seq=2))  # refusals held nothing
    assert [entry.seq for entry in journal.entries("s")] == [1, 2]


@pytest.mark.parametrize("name", ["j.db", "j.jsonl"])
def test_a_writer_whose_lease_was_taken_over_leaves_the_new_owners_lease_when_it_closes(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    slow = SQLiteJournal(path) if name == "j.db" else JSONLJournal(path)
    slow.begin("s", CONFIG)
    slow.append("s", [prompt_step(1)])
    _expire(path)
    other = SQLiteJournal(path) if name == "j.db" else JSONLJournal(path)
    other.begin("s", CONFIG, from_seq=1)  # expired: taken over
    slow.close()
    third = SQLiteJournal(path) if name == "j.db" else JSONLJournal(path)
    with pytest.raises(SessionBusy, match=f"journal {other.owner.token}"):
        third.begin("s", CONFIG, from_seq=1)
    other.close()
    third.close()


def _expire(path: Path) -> None:
    """Make every lease on record run out now (a writer stalled past its lease)."""
    if path.suffix == ".db":
        with sqlite3.connect(path) as db:
            db.execute("UPDATE leases SET expires = 0")
        return
    sidecar = path.with_name(path.name + ".leases")
    leases = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({k: {**v, "expires": 0} for k, v in leases.items()}))


def test_a_session_given_back_with_steps_unwritten_stays_ours_until_they_are(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path, busy_seconds=0.05)
    lease = journal.begin("s", CONFIG)
    journal.append("s", [prompt_step(1)])
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another connection holds the file
    with pytest.raises(JournalUnavailable):
        journal.append("s", [prompt_step(2)])  # kept pending
    with pytest.raises(JournalUnavailable):
        journal.release(lease)  # given back, but step 2 is not written yet
    locker.execute("COMMIT")
    other = SQLiteJournal(path)
    with pytest.raises(SessionBusy, match=f"journal {journal.owner.token}"):
        other.begin("s", CONFIG, from_seq=2)  # still ours: step 2 waits to be written
    again = journal.begin("s", CONFIG, from_seq=2)  # ours to take again: step 2 goes first
    assert [entry.seq for entry in other.entries("s")] == [1, 2]
    journal.release(again)
    other.release(other.begin("s", CONFIG, from_seq=2))  # written and given back: free
    journal.close()
    other.close()


# --- N processes ------------------------------------------------------------------------


def _tell(worker: subprocess.Popen[bytes], command: str) -> None:
    """Send the worker a command."""
    assert worker.stdin is not None
    worker.stdin.write(f"{command}\n".encode())
    worker.stdin.flush()


def _said(worker: subprocess.Popen[bytes]) -> str:
    """The worker's next line."""
    assert worker.stdout is not None
    return worker.stdout.readline().decode().strip()


@pytest.fixture
def workers(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Ten worker processes (one_writer_worker.py) on one journal: a SQLite or JSON-lines file,
    or PostgreSQL."""
    kind = request.param
    location = (
        str(request.getfixturevalue("postgres_dsn"))
        if kind == "postgres"
        else str(tmp_path / ("j.jsonl" if kind == "jsonl" else "j.db"))
    )
    started = [
        subprocess.Popen(
            [sys.executable, WORKER, location], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in range(10)
    ]
    try:
        assert [_said(worker) for worker in started] == ["ready"] * 10
        yield (
            started,
            opener(
                {"sqlite": "sqlite-file", "postgres": "postgres-url"}.get(kind, kind),
                tmp_path,
                location,
            ),
        )
        for worker in started:
            assert worker.stdin is not None
            worker.stdin.close()
        assert [worker.wait(timeout=60) for worker in started] == [0] * 10
    finally:
        for worker in started:
            worker.kill()
            worker.wait()


@pytest.mark.parametrize("workers", ["sqlite", "jsonl", "postgres"], indirect=True)
def test_n_processes_opening_one_session_at_once_give_one_owner_and_taking_turns_run_each(
    workers: tuple[list[subprocess.Popen[bytes]], Opened],
) -> None:
    processes, opened = workers
    for n in (2, 3, 10):  # N at once: one owner, N-1 busy; the owner's turn replays
        session_id, racing = f"s{n}", processes[:n]
        for worker in racing:
            _tell(worker, f"open {session_id}")
        said = [_said(worker) for worker in racing]
        assert sorted(said) == ["busy"] * (n - 1) + ["owner"], n
        owner = racing[said.index("owner")]
        _tell(owner, "finish")
        assert _said(owner) == "done"
        clean(opened.reader(), session_id, turns=1)
    for index, worker in enumerate(processes):  # each retries until the session is free
        _tell(worker, f"turn s turn {index}")
    assert [_said(worker) for worker in processes] == ["done"] * len(processes)
    replayed = clean(opened.reader(), "s", turns=len(processes))
    assert sorted(t.prompt for t in replayed.turns) == sorted(f"turn {i}" for i in range(10))
