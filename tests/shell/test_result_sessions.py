"""A Client, a `run()` result and a journaled agent result give their session back, rebuilt from
the journal wherever it is kept (issue 21: what `transcript_snapshot` stores)."""

from __future__ import annotations

from pathlib import Path

import anyio
import attrs
import pytest

from toolreel.adapters import MemoryJournal, render_transcript
from toolreel.core import UsageError
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    Client,
    OutputTool,
    execute_agent,
    run,
    tool,
)
from toolreel.testing import TestModel


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@attrs.frozen
class Total:
    total: int


def where(kind: str, tmp_path: Path) -> str | MemoryJournal | None:
    """A journal of each kind the options take."""
    return {
        "none": None,
        "sqlite": str(tmp_path / "app.db"),
        "jsonl": str(tmp_path / "app.jsonl"),
        "object": MemoryJournal(),
    }[kind]


KINDS = ["none", "sqlite", "jsonl", "object"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_clients_session_reads_the_same_inside_and_after_its_block(
    kind: str, tmp_path: Path
) -> None:
    options = AgentOptions(tools=[add], auto_execute_tools=True, journal=where(kind, tmp_path))

    async def main() -> tuple[str, Client]:
        async with Client(options, model=TestModel(args={"add": {"a": 2, "b": 3}})) as client:
            await client.query("What is 2 + 3?")
            await client.wait()
            return render_transcript(client.session()), client

    inside, client = anyio.run(main)
    assert render_transcript(client.session()) == inside
    assert '{"add": 5}' in inside and "model: test" in inside


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_results_session_is_its_turn(kind: str, tmp_path: Path) -> None:
    options = AgentOptions(tools=[add], journal=where(kind, tmp_path), session_id="s")
    result = anyio.run(lambda: run("What is 2 + 3?", options, model=TestModel()))
    session = result.session()
    assert session.session_id == "s"
    assert [turn.prompt for turn in session.turns] == ["What is 2 + 3?"]
    assert session.turns[0].text == result.text


@pytest.mark.parametrize("kind", ["sqlite", "jsonl", "object"])
def test_a_journaled_agent_results_session_is_the_run(kind: str, tmp_path: Path) -> None:
    agent = AgentDefinition(build_prompt=lambda text: text, output=OutputTool.of(Total))
    options = AgentOptions(journal=where(kind, tmp_path))
    result = anyio.run(lambda: execute_agent(agent, "2 + 3", options, model=TestModel()))
    session = result.metadata.session()
    assert session.session_id == result.metadata.session_id
    assert session.finish is not None and session.history == result.metadata.history


def test_an_agent_run_kept_nowhere_says_how_to_keep_it() -> None:
    agent = AgentDefinition(build_prompt=lambda text: text, output=OutputTool.of(Total))
    result = anyio.run(lambda: execute_agent(agent, "2 + 3", AgentOptions(), model=TestModel()))
    with pytest.raises(UsageError, match="pass journal= to execute_agent"):
        result.metadata.session()
