"""An agent run forks through its definition: from its start or one of its rounds, then live.

End to end over HTTP on 127.0.0.1: the original is an agent run of the scripted model
"sum-a" (tests/shell/whatif_tools.py: it adds the prompt's numbers with the helper
`add`, then records the sum with the output tool `total`); `fork(..., agent=AGENT)`
writes the fork and returns an `AgentFork` whose `run()` goes on live.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from whatif_tools import AGENT, RUNS, Total, summed

from toolreel.adapters import (
    AgentOutput,
    AgentSession,
    JSONLJournal,
    MemoryJournal,
    SessionOrigin,
    SQLiteJournal,
)
from toolreel.cli import cli
from toolreel.core import ConfigError
from toolreel.shell import (
    AgentDefinition,
    AgentFork,
    AgentOptions,
    AgentSuccess,
    Edit,
    execute_agent,
    fork,
    replay,
)
from toolreel.shell.errors import SessionError
from toolreel.shell.scripted import ScriptedServer

PROMPT = "Sum 2 and 3."


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(summed) as running:
        yield running


@pytest.fixture(params=["memory", "sqlite", "jsonl"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made = {
        "memory": MemoryJournal,
        "sqlite": lambda: SQLiteJournal(tmp_path / "j.db"),
        "jsonl": lambda: JSONLJournal(tmp_path / "j.jsonl"),
    }[request.param]()
    yield made
    made.close()


def opts(server: ScriptedServer, model: str = "sum-a") -> AgentOptions:
    return AgentOptions(base_url=server.url, model=model)


def recorded(server: ScriptedServer, journal: Any) -> None:
    """Agent run "orig" of sum-a on PROMPT (it records 5)."""
    result = anyio.run(
        lambda: execute_agent(AGENT, PROMPT, opts(server), journal=journal, session_id="orig")
    )
    assert isinstance(result, AgentSuccess) and result.output == Total(total=5)
    RUNS.clear()


def test_an_agent_run_forks_after_a_round_with_a_helper_result_replaced(
    server: ScriptedServer, journal: Any
) -> None:
    recorded(server, journal)
    edit = Edit(results={"s_add": "40"})
    forked = fork(
        journal, "orig", at_round=1, edit=edit, into="f", options=opts(server), agent=AGENT
    )
    assert isinstance(forked, AgentFork) and forked.session_id == "f"
    result = anyio.run(forked.run)

    assert isinstance(result, AgentSuccess) and result.output == Total(total=40)  # read live
    assert RUNS == []  # the helper was not run again: its result is the edit's
    assert result.metadata.session_id == "f"
    session = replay(journal, "f")
    assert isinstance(session, AgentSession)  # replays clean, like any agent run
    assert session.origin == SessionOrigin(
        kind="fork", session_id="orig", seq=session.origin.seq, turn=1, round=1,
        note="result of s_add replaced",
    )  # fmt: skip
    shared = session.origin.seq
    before, after = list(journal.entries("orig")), list(journal.entries("f"))
    assert shared > 1 and after[:shared] == before[:shared]  # byte for byte
    assert after[shared].event.output == "40" and before[shared].event.output == "5"
    original = replay(journal, "orig")
    assert isinstance(original, AgentSession)
    assert original.outcome == AgentOutput(output='{"total": 5}')  # untouched


def test_an_agent_run_forks_from_its_start_with_the_prompt_edited(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal)
    edit = Edit(prompt="Sum 20 and 22.")
    forked = fork(
        journal, "orig", at_turn=1, edit=edit, into="f", options=opts(server), agent=AGENT
    )
    result = anyio.run(forked.run)
    assert isinstance(result, AgentSuccess) and result.output == Total(total=42)
    assert RUNS == ["add(20, 22)"]  # the live part runs the helper
    session = replay(journal, "f")
    assert isinstance(session, AgentSession)
    assert [m.content for m in session.history if m.role == "user"] == ["Sum 20 and 22."]


def test_an_agent_fork_goes_on_with_the_model_and_system_prompt_it_is_given(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal)
    forked = fork(
        journal, "orig", at_round=1, edit=Edit(system="tenfold"), into="f",
        options=opts(server, "sum-b"), agent=AGENT,
    )  # fmt: skip
    result = anyio.run(forked.run)
    assert isinstance(result, AgentSuccess) and result.output == Total(total=60)  # (5 + 1) * 10
    configs = journal.configs("f")
    assert [config.system_prompt for _, config in configs][:2] == [None, "tenfold"]
    assert configs[-1][1].model == "sum-b"
    assert isinstance(replay(journal, "f"), AgentSession)


def test_an_agent_run_forks_only_with_its_definition_and_a_chat_only_without(
    server: ScriptedServer,
) -> None:
    journal = MemoryJournal()
    recorded(server, journal)
    with pytest.raises(SessionError, match="agent run: fork it with its definition"):
        fork(journal, "orig", at_turn=1, into="f", options=opts(server))
    with pytest.raises(ConfigError, match="add"):  # its helpers must be given
        fork(
            journal, "orig", at_turn=1, into="f", options=opts(server),
            agent=AgentDefinition(build_prompt=str, output=AGENT.output),
        )  # fmt: skip
    with pytest.raises(ConfigError, match=r"edit\.results"):
        fork(
            journal, "orig", at_round=1, edit=Edit(results={"nope": "1"}), into="f",
            options=opts(server), agent=AGENT,
        )  # fmt: skip
    assert journal.sessions() == ["orig"]  # nothing written by a refused fork


def test_toolreel_fork_forks_an_agent_run_through_its_definition(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = str(tmp_path / "j.db")
    journal = SQLiteJournal(path)
    try:
        recorded(server, journal)
    finally:
        journal.close()
    connection = ["--base-url", server.url, "--api-key", "none"]
    fork_args = ["fork", path, "orig", "--at-round", "1", "--result", "s_add=7", "--into", "f"]
    refused = CliRunner().invoke(cli, [*fork_args, *connection])
    assert refused.exit_code == 1 and "--agent MODULE:ATTR" in refused.output

    made = CliRunner().invoke(cli, [*fork_args, "--agent", "whatif_tools:AGENT", *connection])
    assert made.exit_code == 0, made.output
    assert '{"total": 7}' in made.output  # the output the model recorded, live
    assert RUNS == []
    journal = SQLiteJournal(path)
    try:
        forked = replay(journal, "f")
        assert isinstance(forked, AgentSession) and forked.origin is not None
        assert forked.origin.session_id == "orig"
    finally:
        journal.close()


def test_toolreel_rerun_reruns_an_agent_run_through_its_definition(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = str(tmp_path / "j.db")
    journal = SQLiteJournal(path)
    try:
        recorded(server, journal)
    finally:
        journal.close()
    connection = ["--base-url", server.url, "--api-key", "none", "--model", "sum-b"]
    args = ["rerun", path, "orig", "--tools", "strict", "--into", "b"]
    refused = CliRunner().invoke(cli, [*args, *connection])
    assert refused.exit_code == 1 and "--agent MODULE:ATTR" in refused.output

    made = CliRunner().invoke(cli, [*args, "--agent", "whatif_tools:AGENT", *connection])
    assert made.exit_code == 0, made.output
    assert '{"total": 6}' in made.output  # sum-b's output, off by one
    assert "1 call(s) served from the recording, 0 unmatched" in made.output
    assert RUNS == []
    journal = SQLiteJournal(path)
    try:
        assert isinstance(replay(journal, "b"), AgentSession)
    finally:
        journal.close()
