"""Recorded sessions as pytest cases: "these 40 sessions must still pass" in a test suite.

    @pytest.mark.parametrize("case", eval_cases("tests/sessions.db"))
    def test_the_new_prompt_still_solves_it(case):
        result = case.run(options, checks=[checks.same_outcome(), checks.same_answer()])
        assert result.passed, result.failures()

`eval_cases` reads the journal once, at collection, and gives one param per
session (its id the test's id). A case reruns its session in a journal of its
own in memory (the session copied there first), so the suite never writes into
the recorded journal and each run of it asks the model again.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs

from toolreel.adapters import Journal, JournalUnavailable, MemoryJournal
from toolreel.core import LoopConfig
from toolreel.core.record import Value
from toolreel.shell import (
    AgentOptions,
    evaluate,
    export_session,
    import_session,
    open_journal,
)
from toolreel.shell.checks import CaseResult, Check


@attrs.frozen(kw_only=True, repr=False, eq=False)
class EvalCase(Value):
    """One recorded session of a journal, to rerun and check in a test.

    Attributes:
        journal: The journal file (or `postgresql://` URL) that holds the session.
        session_id: The session.
    """

    journal: str
    session_id: str

    async def evaluate(
        self,
        options: AgentOptions | Callable[[LoopConfig], AgentOptions],
        *,
        checks: Sequence[Check] | None = None,
        tools: Literal["recorded", "live", "strict"] = "recorded",
    ) -> CaseResult:
        """Rerun the session under `options` in memory and check the rerun (as `evaluate`)."""
        scratch = MemoryJournal()
        source = open_journal(self.journal)
        try:
            with tempfile.TemporaryDirectory() as folder:
                copy = export_session(source, self.session_id, Path(folder) / "session.jsonl")
                import_session(copy, scratch)
        finally:
            source.close()
        report = await evaluate(
            scratch, [self.session_id], options, checks=checks, tools=tools, into_prefix="case/"
        )
        return report.cases[0]

    def run(
        self,
        options: AgentOptions | Callable[[LoopConfig], AgentOptions],
        *,
        checks: Sequence[Check] | None = None,
        tools: Literal["recorded", "live", "strict"] = "recorded",
    ) -> CaseResult:
        """`evaluate`, from a test that is not async."""
        return anyio.run(lambda: self.evaluate(options, checks=checks, tools=tools))


def eval_cases(journal: str | Path, sessions: Iterable[str] | None = None) -> list[Any]:
    """One pytest param per session (an `EvalCase`, its id the session's).

    Args:
        journal: The journal file (or `postgresql://` URL) holding the recorded sessions.
        sessions: The sessions; None: every chat session that is not a fork or a rerun.
    """
    import pytest  # noqa: PLC0415 - only a test suite calls this

    if "://" not in str(journal) and not Path(journal).is_file():
        raise JournalUnavailable(f"no journal at {journal}")
    store = open_journal(journal)
    try:
        ids = list(sessions) if sessions is not None else _recorded(store)
    finally:
        store.close()
    where = str(journal)
    return [
        pytest.param(EvalCase(journal=where, session_id=session_id), id=session_id)
        for session_id in ids
    ]


def _recorded(journal: Journal) -> list[str]:
    """The chat sessions that are neither forks nor reruns (as `evaluate` picks them)."""
    return [
        session_id
        for session_id in journal.sessions()
        if journal.origin(session_id) is None and not journal.config(session_id).structured
    ]
