"""The testing models and overrides as a user's own test suite uses them (through pytester).

The plugin loads by itself (the `toolreel` pytest11 entry point): the user's
tests name the `toolreel_override` fixture and import from `toolreel.testing`.
"""

from __future__ import annotations

import pytest
from pages import python_block_under

APP = '''
import json

import anyio
from pathlib import Path

import pytest

from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import FunctionModel, TestModel, override, overriding


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def answer(question: str) -> str:
    """The application: no model=, no base_url, no key."""
    return (await run(question, AgentOptions(tools=[add]))).text
'''

USER_TESTS = (
    APP
    + """

def test_the_fixture_puts_a_test_model_under_the_app(toolreel_override):
    assert set(json.loads(anyio.run(answer, "Add"))) == {"add"}
    [request] = toolreel_override.model.requests[:1]
    assert [spec.name for spec in request.tools] == ["add"]


@pytest.mark.parametrize(
    "toolreel_override", [TestModel(args={"add": {"a": 2, "b": 3}})], indirect=True
)
def test_a_model_given_by_parametrization(toolreel_override):
    assert json.loads(anyio.run(answer, "Add")) == {"add": 5}


def test_use_swaps_in_a_function_model(toolreel_override):
    toolreel_override.use(FunctionModel(lambda messages, info: "swapped"))
    assert anyio.run(answer, "Hi") == "swapped"


@pytest.mark.anyio
async def test_an_async_test_sees_the_override_too(toolreel_override):
    assert set(json.loads(await answer("Add"))) == {"add"}


def test_override_in_a_with_block():
    with override(model=TestModel(text="hi")):
        assert anyio.run(answer, "Hi") == "hi"


def test_a_tool_is_still_the_plain_function():
    assert add(2, 3) == 5


def test_no_override_outlives_its_test():
    assert overriding() is None
"""
)


def test_a_users_suite_runs_the_app_on_test_models_with_no_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makepyfile(test_app=USER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)


FAILING_TESTS = (
    APP
    + """

from toolreel.shell import tool as declare


@declare("lookup", "Look up", {"type": "object", "properties": {"code": {"type": "string",
         "pattern": "^[0-9]{3}-[a-z]{2}$"}}, "required": ["code"]})
def lookup(args):
    return "found"


def test_an_unsatisfiable_schema(toolreel_override):
    anyio.run(run, "Look", AgentOptions(tools=[lookup]))


def test_a_function_model_returning_a_number(toolreel_override):
    toolreel_override.use(FunctionModel(lambda messages, info: 42))
    anyio.run(answer, "Hi")
"""
)


def test_their_failures_say_which_tool_and_keyword_or_what_to_return(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_failing=FAILING_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*UsageError: TestModel cannot generate arguments for tool 'lookup'*"
            "(keyword 'pattern'); pin them: TestModel(args={'lookup': {...}})",
            "*UsageError: FunctionModel's function gave a int (42): return (or yield) a str*",
        ],
        consecutive=False,
    )


@pytest.mark.parametrize("heading", ["Models that need no script", "Override in one line"])
def test_the_docs_examples_pass_as_a_users_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, heading: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    example = python_block_under("docs/guides/testing.md", f"### {heading}")
    pytester.makepyfile(test_docs_example=example)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
