"""`evaluate` / `toolreel eval` over agent runs: rerun through their definition, checked.

End to end over HTTP on 127.0.0.1 on a SQLite journal: the agent runs were recorded
with the scripted "sum-a" (tests/shell/whatif_tools.py: it adds the prompt's numbers
with the helper `add`, then records the sum); the new model "sum-b" records it off by
one — the same outcome (an output), another answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from whatif_tools import AGENT, RUNS, summed

from toolreel.adapters import AgentSession, SQLiteJournal
from toolreel.cli import cli
from toolreel.shell import AgentOptions, AgentSuccess, evaluate, execute_agent, replay
from toolreel.shell import checks as ck
from toolreel.shell.scripted import ScriptedServer

RUNS_RECORDED = 4

#: What the user check below was given, by session.
SEEN: dict[str, tuple[type, type]] = {}


def kinds(original: AgentSession, candidate: AgentSession) -> bool:
    """A user check: notes the kinds it gets; passes when the output's total went up."""
    SEEN[original.session_id] = (type(original), type(candidate))
    outputs = [
        json.loads(getattr(session.outcome, "output", "{}")) for session in (original, candidate)
    ]
    return bool(outputs[1]["total"] > outputs[0]["total"])


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(summed) as running:
        yield running


@pytest.fixture
def path(server: ScriptedServer, tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "runs.db"
    journal = SQLiteJournal(where)
    try:
        for number in range(1, RUNS_RECORDED + 1):
            made = anyio.run(
                lambda n=number: execute_agent(
                    AGENT,
                    f"Sum {n} and {n * 10}.",
                    AgentOptions(base_url=server.url, model="sum-a", api_key="none"),
                    journal=journal,
                    session_id=f"run{n}",
                )
            )
            assert isinstance(made, AgentSuccess)
    finally:
        journal.close()
    RUNS.clear()
    SEEN.clear()
    yield where


def test_agent_runs_are_rerun_through_their_definition_and_checked(
    server: ScriptedServer, path: Path
) -> None:
    journal = SQLiteJournal(path)
    try:
        options = AgentOptions(base_url=server.url, model="sum-b", api_key="none")
        checks = [ck.same_outcome(), ck.same_answer(), kinds]
        report = anyio.run(
            lambda: evaluate(journal, None, options, checks=checks, tools="strict", agent=AGENT)
        )
        assert [case.session_id for case in report.cases] == ["run1", "run2", "run3", "run4"]
        for case in report.cases:
            assert case.error is None
            verdicts = dict(case.verdicts)
            assert verdicts["same outcome"].passed  # an output, as the original's
            assert not verdicts["same answer"].passed  # its JSON is another
            assert verdicts["kinds"].passed
            assert isinstance(case.candidate, AgentSession)
        assert {f"run{n}": (AgentSession, AgentSession) for n in range(1, 5)} == SEEN
        assert RUNS == []  # every add was served from the recording (strict: none unmatched)
        assert isinstance(replay(journal, "eval-sum-b/run1"), AgentSession)

        again = anyio.run(lambda: evaluate(journal, ["run1"], options, checks=checks, agent=AGENT))
        assert again.cases[0].resumed and not dict(again.cases[0].verdicts)["same answer"].passed

        same = AgentOptions(base_url=server.url, model="sum-a", api_key="none")
        alike = anyio.run(
            lambda: evaluate(journal, ["run2"], same, checks=[ck.same_answer()], agent=AGENT)
        )
        assert alike.passed == 1  # the same output JSON: the same answer
    finally:
        journal.close()


def test_toolreel_eval_over_agent_runs_with_agent(server: ScriptedServer, path: Path) -> None:
    connection = ["--base-url", server.url, "--api-key", "none"]
    report = path.parent / "report.md"
    base = ["eval", str(path), "--model", "sum-b", *connection]
    without = CliRunner().invoke(cli, [*base, "run1"])
    assert without.exit_code == 1 and "give its definition" in without.output

    made = CliRunner().invoke(
        cli,
        [
            *base, "--agent", "whatif_tools:AGENT", "--expect", "same-outcome",
            "--expect", "same-answer", "--report", str(report), "--into-prefix", "b/",
        ],
    )  # fmt: skip
    assert made.exit_code == 1, made.output  # same-answer fails each
    assert "0/4 sessions passed" in made.output
    assert "run1: same answer: answer '{\"total\":12}', not '{\"total\":11}'" in made.output
    for number in range(1, RUNS_RECORDED + 1):
        assert f"run{number}" in report.read_text()
    passing = CliRunner().invoke(
        cli,
        [*base, "--agent", "whatif_tools:AGENT", "--expect", "same-outcome", "--into-prefix", "b/"],
    )
    assert passing.exit_code == 0, passing.output  # resumed: each candidate checked again
