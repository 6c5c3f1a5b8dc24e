"""A journal keeps a session's config: a chat's, or an agent run's (its `output` structured).

A chat's config is stored exactly as before (its fields, no tag, no `output`);
a structured one reads back as the config it was; an `AgentConfig` bfd8293
wrote reads back as the same run's config today, and is written back in its
old shape. `load_session` refuses an agent run's session by name.
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
from toolreel.adapters._legacy import LegacyAgentConfig
from toolreel.adapters.records import config_data, config_of
from toolreel.adapters.replay import current
from toolreel.core import LoopConfig, PlainOutput, ReflectiveOutput, ToolSpec
from toolreel.core.policies import RetryPolicy

ANSWER = ToolSpec(name="answer", description="The answer.")
LOOKUP = ToolSpec(name="lookup", description="Look a word up.")
AGENTS = {
    "plain": LoopConfig(output=PlainOutput(tool=ANSWER, max_attempts=2), model="m"),
    "reflective": LoopConfig(output=ReflectiveOutput(tool=ANSWER), model="m", tools=[LOOKUP]),
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
    assert "output" not in line["config"]  # a chat's text answer: as journals always had it
    assert JSONLJournal(tmp_path / "j.jsonl").config("s") == config


def test_an_agent_runs_session_is_not_folded_as_a_tool_loop(journal) -> None:
    journal.begin("a", AGENTS["plain"])
    with pytest.raises(SessionError, match="session 'a' is an agent run"):
        load_session(journal, "a")


#: An `AgentConfig` as bfd8293 journaled it.
OLD = {
    "output": {
        "tool": {"name": "answer", "description": "", "parameters": "{}"},
        "type": "PlainOutput",
    },
    "helpers": [{"name": "lookup", "description": "", "parameters": "{}"}],
    "model": "m",
    "system_prompt": "Answer.",
    "max_attempts": 2,
    "max_iterations_per_attempt": 7,
    "tool_choice": "required",
    "max_tokens": None,
    "temperature": None,
    "retry": unstructure(RetryPolicy(max_retries=1)),
    "budget": None,
    "approval_required": ["lookup"],
}


def test_an_old_agent_config_reads_as_the_same_run_today_and_writes_back_as_it_was() -> None:
    config = config_of(OLD)
    assert isinstance(config, LegacyAgentConfig)
    assert current(config) == LoopConfig(
        output=PlainOutput(tool=ToolSpec(name="answer", parameters="{}"), max_attempts=2),
        tools=(ToolSpec(name="lookup", parameters="{}"),),
        model="m",
        system_prompt="Answer.",
        max_iterations=7,
        tool_choice="required",
        retry=RetryPolicy(max_retries=1),
        approval_required={"lookup"},
    )
    assert config_data(config) == OLD
    assert type(current(config)) is LoopConfig and current(config) != config
