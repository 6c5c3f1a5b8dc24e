"""A journal keeps either kind of session config: a tool loop's or an agent run's.

A loop config is stored exactly as before (its fields, no tag); an agent
config reads back as the agent config it was. What folds a session through
`step` refuses an agent run's session by name.
"""

from __future__ import annotations

import json

import pytest

from toolreel.adapters import (
    JSONLJournal,
    MemoryJournal,
    SessionError,
    SQLiteJournal,
    load_session,
    unstructure,
)
from toolreel.core import AgentConfig, LoopConfig, PlainOutput, ReflectiveOutput, ToolSpec

ANSWER = ToolSpec(name="answer", description="The answer.")
LOOKUP = ToolSpec(name="lookup", description="Look a word up.")
AGENTS = {
    "plain": AgentConfig(output=PlainOutput(tool=ANSWER), model="m", max_attempts=2),
    "reflective": AgentConfig(output=ReflectiveOutput(tool=ANSWER), model="m", helpers=[LOOKUP]),
}


@pytest.fixture(params=["memory", "sqlite", "jsonl", "postgres"])
def journal(request, tmp_path):
    made = {
        "memory": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(tmp_path / "j.db"),
        "jsonl": lambda: JSONLJournal(tmp_path / "j.jsonl"),
        "postgres": lambda: request.getfixturevalue("postgres_journal"),
    }[request.param]()
    yield made
    made.close()


@pytest.mark.parametrize("kind", list(AGENTS))
def test_an_agent_config_reads_back_as_the_agent_config_it_was(journal, kind: str) -> None:
    journal.begin("a", AGENTS[kind])
    assert journal.configs("a") == [(0, AGENTS[kind])]
    assert journal.config("a") == AGENTS[kind]


def test_a_loop_config_is_stored_as_its_fields_alone(tmp_path) -> None:
    config = LoopConfig(model="m", system_prompt="Be brief.", tools=(ANSWER,))
    journal = JSONLJournal(tmp_path / "j.jsonl")
    journal.begin("s", config)
    journal.close()
    (line,) = [json.loads(text) for text in (tmp_path / "j.jsonl").read_text().splitlines()]
    assert line["config"] == unstructure(config)
    assert JSONLJournal(tmp_path / "j.jsonl").config("s") == config


def test_an_agent_runs_session_is_not_folded_as_a_tool_loop(journal) -> None:
    journal.begin("a", AGENTS["plain"])
    with pytest.raises(SessionError, match="session 'a' is an agent run"):
        load_session(journal, "a")
