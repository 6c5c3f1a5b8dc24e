"""`toolreel.testing.eval_cases` as a user's suite uses it (through pytester).

Four sessions of an "old" scripted model are recorded into a SQLite file; the
user's suite parametrizes a test over them and reruns each against a "new" model
(another ScriptedServer on 127.0.0.1) that answers one of them otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from toolreel.adapters import SQLiteJournal
from toolreel.shell import AgentOptions, Client
from toolreel.testing import Reply, ScriptedServer, text


def echo(body: dict[str, Any]) -> Reply:
    """Both models: "echo: PROMPT"; the new one says "nope" to a prompt with a 'b'."""
    prompt = body["messages"][-1]["content"]
    if body["model"] == "new" and "b" in prompt:
        return text("nope")
    return text(f"echo: {prompt}")


USER_TESTS = """
import pytest

from toolreel.shell import AgentOptions, checks
from toolreel.testing import ScriptedServer, eval_cases
from echo_model import echo


@pytest.fixture(scope="module")
def new_model():
    with ScriptedServer(echo) as server:
        yield AgentOptions(base_url=server.url, model="new", api_key="none")


@pytest.mark.parametrize("case", eval_cases(JOURNAL))
def test_the_new_model_still_answers_as_the_old_one(case, new_model):
    result = case.run(new_model, checks=[checks.same_outcome(), checks.same_answer()])
    assert result.passed, result.failures()


@pytest.mark.parametrize("case", eval_cases(JOURNAL, ["s-a"]))
@pytest.mark.anyio
async def test_an_async_test_awaits_the_case(case, new_model):
    result = await case.evaluate(new_model, checks=[checks.contains("echo")])
    assert result.passed and result.candidate.config.model == "new"
"""


def test_a_users_suite_holds_recorded_sessions_as_cases(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    journal = tmp_path / "recorded.db"
    store = SQLiteJournal(journal)
    with ScriptedServer(echo) as server:

        async def record() -> None:
            for name in ["a", "b", "c", "d"]:
                opts = AgentOptions(
                    base_url=server.url, model="old", api_key="none", journal=store,
                    session_id=f"s-{name}",
                )  # fmt: skip
                async with Client(opts) as client:
                    await client.query(f"say {name}")
                    await client.wait()

        anyio.run(record)
    store.close()
    pytester.makepyfile(echo_model=Path(__file__).read_text())
    pytester.makepyfile(test_user=f"JOURNAL = {str(journal)!r}\n" + USER_TESTS)

    result = pytester.runpytest("-p", "anyio", "-q")

    result.assert_outcomes(passed=4, failed=1)
    output = result.stdout.str()
    assert "FAILED test_user.py::test_the_new_model_still_answers_as_the_old_one[s-b]" in output
    assert "AssertionError: [\"same answer: answer 'nope', not 'echo: say b'\"]" in output
    store = SQLiteJournal(journal)
    try:
        assert store.sessions() == ["s-a", "s-b", "s-c", "s-d"]  # the recording is untouched
    finally:
        store.close()
