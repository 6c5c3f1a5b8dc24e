"""Journals written by older code replay with today's: budgets, approvals, images, agents.

`journals/bfd8293.*` were written by main at bfd8293 running
`journals/make_journals.py` (how is told there). That code replayed none of
them: a recorded `UsageReported` holds its pairs (`tool_calls`, a usage's
`extra` counters) as JSON lists, and the replayed one held tuples.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from toolreel.adapters import AgentSession, JSONLJournal, Session, SQLiteJournal
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Recording, replay, tool

HERE = Path(__file__).parent / "journals"
SESSIONS = ["budget", "approvals", "images", "agent"]


@pytest.fixture(params=["bfd8293.db", "bfd8293.jsonl"])
def old_journal(request: pytest.FixtureRequest, tmp_path: Path) -> JSONLJournal | SQLiteJournal:
    """A copy of an old journal (opening it must not change the checked-in file)."""
    path = tmp_path / request.param
    shutil.copy(HERE / request.param, path)
    journal = SQLiteJournal(path) if path.suffix == ".db" else JSONLJournal(path)
    request.addfinalizer(journal.close)
    return journal


def test_the_old_journals_hold_every_session(old_journal: JSONLJournal | SQLiteJournal) -> None:
    assert sorted(old_journal.sessions()) == sorted(SESSIONS)


@pytest.mark.parametrize("session_id", SESSIONS)
def test_an_old_budgeted_session_replays_clean(
    old_journal: JSONLJournal | SQLiteJournal, session_id: str
) -> None:
    replayed = replay(old_journal, session_id)
    expected = AgentSession if session_id == "agent" else Session
    assert isinstance(replayed, expected), replayed


def test_the_old_budget_session_is_the_one_the_issue_reports(
    old_journal: JSONLJournal | SQLiteJournal,
) -> None:
    recorded = [
        effect["notice"]["turn"]["tool_calls"]
        for entry in old_journal.entries("budget")
        for effect in entry.effects
        if effect.get("notice", {}).get("type") == "UsageReported"
    ]
    assert recorded == [[], [["add", 1]], [["add", 3]]]


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (not really)."""
    raise AssertionError(f"a rerun answers from the recording; it deleted {path}")


@pytest.mark.parametrize("name", ["bfd8293.db", "bfd8293.jsonl"])
def test_the_old_approvals_session_reruns_with_its_recorded_decisions(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    shutil.copy(HERE / name, path)
    recording = Recording.from_file(path, "approvals")
    options = AgentOptions(model="m", tools=[delete])  # manual mode, and nobody to decide

    async def rerun() -> list[FinishReason]:
        with anyio.fail_after(30):  # a rerun that waits for a decision fails here
            return await recording.rerun(options)

    assert anyio.run(rerun) == [FinishReason.COMPLETED]
    results = recording.history[-1].tool_rounds[0].results
    assert [(result.content, result.is_error) for result in results] == [
        ("deleted a.txt", False),
        ("keep b", True),
    ]
