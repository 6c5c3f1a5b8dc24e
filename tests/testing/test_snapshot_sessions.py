"""`assert transcript_snapshot == client` (a Client, a RunResult, an agent result) stores the
session's transcript, not the object's repr, so what `--snapshot-update` writes passes on the
next run (issue 21); anything that is not a session is refused, saying what is accepted.
Each test runs a user's suite through pytester, as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

USER = '''
import anyio
import attrs

from toolreel.adapters import MemoryJournal
from toolreel.shell import (
    AgentDefinition, AgentOptions, Client, OutputTool, execute_agent, run, tool
)
from toolreel.testing import FunctionModel, TestModel, ToolCalls, call

ANSWER = {answer!r}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model():
    def answer(messages, info):
        if not messages[-1].tool_rounds:
            return ToolCalls([call("add", a=2, b=3)])
        return f"2 + 3 = {{ANSWER}}"
    return FunctionModel(answer)


@attrs.frozen
class Total:
    total: int


AGENT = AgentDefinition(build_prompt=lambda text: text, output=OutputTool.of(Total))


def test_client(transcript_snapshot):
    async def main():
        options = AgentOptions(tools=[add], auto_execute_tools=True)
        async with Client(options, model=model()) as client:
            await client.query("What is 2 + 3?")
            await client.wait()
        return client

    assert anyio.run(main) == transcript_snapshot


def test_run_result(transcript_snapshot, tmp_path):
    options = AgentOptions(tools=[add], journal=str(tmp_path / "app.db"))
    result = anyio.run(lambda: run("What is 2 + 3?", options, model=model()))
    assert result == transcript_snapshot


def test_agent_result(transcript_snapshot):
    total = TestModel(output={{"total": ANSWER}})
    result = anyio.run(
        lambda: execute_agent(AGENT, "2 + 3", AgentOptions(), model=total, journal=MemoryJournal())
    )
    assert result == transcript_snapshot.hide("usage")
'''


def user_suite(pytester: pytest.Pytester, answer: int = 5) -> None:
    """Write (or rewrite) the user's test module."""
    pytester.makepyfile(test_user=USER.format(answer=answer))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run the user's suite."""
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def stored(pytester: pytest.Pytester) -> str:
    """The user's stored snapshots."""
    return Path(pytester.path, "__snapshots__", "test_user.ambr").read_text(encoding="utf-8")


def test_written_snapshots_pass_on_the_next_run_and_fail_when_the_conversation_changes(
    pytester: pytest.Pytester,
) -> None:
    user_suite(pytester)
    run(pytester, "--snapshot-update").assert_outcomes(passed=3)
    text = stored(pytester)
    assert text.count("**User:** What is 2 + 3?") == 2
    assert text.count("**Assistant:** 2 + 3 = 5") == 2
    assert "# Agent run" in text and '"total": 5' in text
    assert "model: function" in text and "model: test" in text
    assert "Client(" not in text and "RunResult(" not in text and " at 0x" not in text

    run(pytester).assert_outcomes(passed=3)
    run(pytester).assert_outcomes(passed=3)

    user_suite(pytester, answer=6)
    result = run(pytester)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*+**Assistant:** 2 + 3 = 6*"])


REFUSED = """
import anyio
from toolreel.shell import AgentDefinition, AgentOptions, OutputTool, execute_agent
from toolreel.testing import TestModel


def test_a_dict(transcript_snapshot):
    assert {"answer": 5} == transcript_snapshot


def test_an_agent_run_kept_nowhere(transcript_snapshot):
    agent = AgentDefinition(build_prompt=lambda text: text, output=OutputTool.from_schema(
        {"type": "object", "properties": {"total": {"type": "integer"}}}))
    result = anyio.run(lambda: execute_agent(agent, "2 + 3", AgentOptions(), model=TestModel()))
    assert result == transcript_snapshot
"""


def test_what_is_not_a_session_is_refused_saying_what_is_accepted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_user=REFUSED)
    result = run(pytester, "--snapshot-update")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*UsageError: transcript_snapshot stores a session's transcript: compare it with "
            "a Session or an AgentSession*a Client, a RunResult (run) or an agent result "
            "(AgentSuccess, AgentFailure), not a dict*",
            "*UsageError: this agent run kept no journal, so it has no session to read: "
            "pass journal= to execute_agent*",
        ]
    )
    assert not Path(pytester.path, "__snapshots__", "test_user.ambr").exists()
