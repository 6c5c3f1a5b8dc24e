"""Helpers for the journal fault tests: record a real session, then lock or damage its file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio

from toolreel.adapters import Journal, JSONLJournal, SQLiteJournal
from toolreel.shell import Client, tool
from toolreel.testing import ScriptedModel, text, tool_calls


def make_tool(output: str):  # type: ignore[no-untyped-def]
    """A tool `fetch` answering with `output`."""

    @tool
    def fetch(n: int) -> str:
        """Fetch item n."""
        return output

    return fetch


def record(
    journal: Journal, session_id: str = "s", *, output: str = "item", turns: int = 1
) -> None:
    """Run `turns` turns (one tool round each) of a session into `journal` (left open)."""
    replies = []
    for turn in range(turns):
        replies += [tool_calls((f"c{turn}", "fetch", {"n": turn})), text(f"done {turn}")]
    model = ScriptedModel(replies, http=False)
    options = model.options(
        tools=[make_tool(output)], auto_execute_tools=True, journal=journal, session_id=session_id
    )

    async def main() -> None:
        async with Client(options, model=model.model) as client:
            for turn in range(turns):
                await client.query(f"fetch {turn}")
                await client.wait()

    anyio.run(main)


def open_journal(path: Path, **kwargs: float) -> Journal:
    """The journal kind the file name says."""
    if path.suffix == ".jsonl":
        return JSONLJournal(path, **kwargs)
    return SQLiteJournal(path, **kwargs)


def recorded(path: Path, session_id: str = "s", **kwargs: object) -> None:
    """A file holding one recorded session (closed)."""
    journal = open_journal(path)
    try:
        record(journal, session_id, **kwargs)  # type: ignore[arg-type]
    finally:
        journal.close()


def sql(path: Path, statement: str, *args: object) -> None:
    """Run one statement on the file behind the journal's back (an editor, a disk fault)."""
    db = sqlite3.connect(path)
    db.execute(statement, args)
    db.commit()
    db.close()


def rows(path: Path) -> list[tuple[int, int, str]]:
    """The step rows of a SQLite journal: first and last seq, body."""
    db = sqlite3.connect(path)
    found = db.execute("SELECT first_seq, last_seq, body FROM steps ORDER BY first_seq").fetchall()
    db.close()
    return found
