"""The three journals keep the same things: configs over time, steps in order."""

from __future__ import annotations

import pytest

from toolreel.adapters import (
    JSONLJournal,
    MemoryJournal,
    SessionNotFound,
    SQLiteJournal,
    Step,
)
from toolreel.core import LoopConfig, PromptSubmitted, initial_state, step


@pytest.fixture(params=["memory", "sqlite", "jsonl"])
def journal(request, tmp_path):
    made = {
        "memory": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(tmp_path / "j.db"),
        "jsonl": lambda: JSONLJournal(tmp_path / "j.jsonl"),
    }[request.param]()
    yield made
    made.close()


def test_configs_are_kept_with_the_step_they_apply_after(journal) -> None:
    first, second = LoopConfig(model="a"), LoopConfig(model="b")
    journal.begin("s", first)
    _, effects = step(initial_state(first), PromptSubmitted(text="hi"))
    journal.append("s", [Step(seq=1, event=PromptSubmitted(text="hi"), effects=effects)])
    journal.release("s")
    journal.begin("s", first, from_seq=1)  # unchanged: nothing new recorded
    journal.release("s")
    journal.begin("s", second, from_seq=1)
    assert journal.configs("s") == [(0, first), (1, second)]
    assert journal.config("s") == second
    assert [entry.seq for entry in journal.entries("s")] == [1]
    assert journal.sessions() == ["s"]
    with pytest.raises(SessionNotFound):
        journal.config("nope")
