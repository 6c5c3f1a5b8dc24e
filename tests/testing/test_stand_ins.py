"""The stand-in models are public in `toolreel.testing` (issue 21): a newcomer's first script
talks to the scripted calculator as `make demo` does, with pytest not even installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import anyio

import toolreel.testing
from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import ScriptedServer, calculator, http_error, text, tool_calls

FIRST_SCRIPT = """
import sys
sys.modules["pytest"] = None  # as on a machine without pytest: importing it fails

import anyio
from toolreel.shell import AgentOptions, run, tool
from toolreel.testing import ScriptedServer, calculator


@tool
def add(a: float, b: float) -> float:
    \"\"\"Add two numbers.\"\"\"
    return a + b


with ScriptedServer(calculator) as server:
    options = AgentOptions(base_url=server.url, model="calculator", tools=[add])
    result = anyio.run(run, "What is 25 plus 17?", options)
    print(result.text, len(server.requests))
"""


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def test_a_first_script_talks_to_the_calculator_without_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FIRST_SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["The", "answer", "is", "42.", "2"]


def test_the_calculator_chains_rounds_on_the_previous_result() -> None:
    with ScriptedServer(calculator) as server:
        options = AgentOptions(base_url=server.url, model="calculator", tools=[add, multiply])
        result = anyio.run(run, "What's 7 times 8, then add 5?", options)
    assert result.text == "The answer is 61."
    assert [[call.name for call in r.tool_calls] for r in result.rounds] == [["multiply"], ["add"]]


def test_a_scripted_server_plays_its_replies_in_order_and_keeps_the_requests() -> None:
    script = [
        http_error(429, "slow down", retry_after=0),
        tool_calls(("c1", "add", {"a": 1, "b": 2})),
    ]
    with ScriptedServer([*script, text("3")]) as server:
        options = AgentOptions(base_url=server.url, model="m", tools=[add])
        result = anyio.run(run, "1 + 2?", options)
    assert result.text == "3"
    assert [request["messages"][-1]["role"] for request in server.requests] == [
        "user",
        "user",
        "tool",
    ]


def test_the_package_exports_what_a_user_needs_and_no_more() -> None:
    assert set(toolreel.testing.__all__) == {
        # stand-in models, and what scripting one's own replies takes
        "ScriptedServer",
        "calculator",
        "Reply",
        "text",
        "tool_calls",
        "http_error",
        "cut_off",
        "TestModel",
        "FunctionModel",
        "ToolCalls",
        "call",
        "Call",
        "ModelInfo",
        # overrides, the network guard, and the fixtures' types
        "override",
        "overriding",
        "Override",
        "NetworkBlocked",
        "Reel",
        "ScriptedModel",
        "MakeScriptedModel",
        "OpenRecording",
    }
    for name in ("ScriptedServer", "calculator", "Reply", "text", "tool_calls"):
        assert getattr(toolreel.testing, name).__doc__
