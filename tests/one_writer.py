"""Shared by the one-writer tests (tests/faults, tests/web): journals of every kind opened for a
session, a scripted model, and a check that a session replays clean.

`opener(kind, ...)` gives what a Client is handed (`AgentOptions.journal`: one journal
object shared by every Client, or a path/URL each Client opens itself) and a function
opening a journal to read the session back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from toolreel.adapters import Journal, JSONLJournal, MemoryJournal, Session, SQLiteJournal
from toolreel.core.outcomes import FinishReason
from toolreel.shell import replay
from toolreel.testing import FunctionModel, ToolCalls, call

#: Every way Clients may share a journal: one object (shared) or one file/URL (each its own).
KINDS = ["sqlite", "sqlite-file", "jsonl", "memory", "postgres", "postgres-url"]


@attrs.frozen
class Opened:
    """What Clients are given as their journal, and how to read the session afterwards."""

    given: str | Journal
    reader: Callable[[], Journal]
    shared: Journal | None

    def close(self) -> None:
        """Close the shared journal, if there is one."""
        if self.shared is not None:
            self.shared.close()


def opener(kind: str, tmp_path: Path, postgres_dsn: str | None) -> Opened:
    """Open a journal of `kind` (see `KINDS`)."""
    if kind == "memory":
        memory = MemoryJournal()
        return Opened(given=memory, reader=lambda: memory, shared=None)
    if kind.startswith("postgres"):
        from toolreel.adapters import PostgresJournal  # noqa: PLC0415 - psycopg, once a server runs

        assert postgres_dsn is not None
        dsn = postgres_dsn
        if kind == "postgres-url":
            return Opened(given=dsn, reader=lambda: PostgresJournal(dsn), shared=None)
        shared: Journal = PostgresJournal(dsn)
        return Opened(given=shared, reader=lambda: shared, shared=shared)
    path = tmp_path / ("j.jsonl" if kind == "jsonl" else "j.db")
    if kind == "sqlite-file":
        return Opened(given=str(path), reader=lambda: SQLiteJournal(path), shared=None)
    shared = JSONLJournal(path) if kind == "jsonl" else SQLiteJournal(path)
    return Opened(given=shared, reader=lambda: shared, shared=shared)


def one_round(tool_name: str) -> FunctionModel:
    """A model that calls `tool_name` once per prompt, then answers with its result."""

    def answer(messages: Any, info: Any) -> Any:
        last = messages[-1]
        if last.role == "user":
            return ToolCalls([call(tool_name)])
        return f"done: {last.tool_rounds[-1].results[-1].content}"

    return FunctionModel(answer)


def clean(journal: Journal, session_id: str, turns: int) -> Session:
    """The session replayed: it must not diverge, warn, or miss a turn, and each completed."""
    replayed = replay(journal, session_id)
    assert isinstance(replayed, Session), replayed
    assert replayed.warnings == ()
    assert [turn.reason for turn in replayed.turns] == [FinishReason.COMPLETED] * turns
    return replayed
