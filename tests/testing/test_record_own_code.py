"""Record modes with the test's own code (issue 21): a marked test whose application builds its
own `AgentOptions(base_url=..., api_key=..., model=...)` and `Client` records every call it
makes, with its own connection, and replays it offline — no fixture, no `TOOLREEL_*` variable.

Each test writes a user's test module as a user writes it and runs it through pytester;
the provider is the scripted calculator on 127.0.0.1 (TESTS.md item 5 is pinned here:
`none` with a stale recording fails without asking the provider; `new_episodes` is not
`all`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolreel.testing import Reply, ScriptedServer, calculator, tool_calls
from toolreel.testing._tape import read_tape

KEY = "sk-owncode-test-0123456789abcdef"
APP = '''
import anyio
import pytest
from toolreel.shell import AgentOptions, Client, tool

BASE_URL = {url!r}
KEY = {key!r}
PROMPT = {prompt!r}


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def ask(question: str, model: str = "calc-1") -> str:
    """The application: its own server, model and key."""
    options = AgentOptions(
        base_url=BASE_URL, api_key=KEY, model=model, tools=[add], auto_execute_tools=True
    )
    async with Client(options) as client:
        await client.query(question)
        finish = await client.wait()
    return finish.text


@pytest.mark.toolreel_recording("calc")
def test_calc():
    assert anyio.run(ask, PROMPT).startswith("The answer is 5.")
'''


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the environment: the test's code alone says where the model is."""
    for name in (
        "OPENAI_API_KEY",
        "TOOLREEL_PROVIDER",
        "TOOLREEL_MODEL",
        "TOOLREEL_BASE_URL",
        "CI",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def provider() -> Iterator[ScriptedServer]:
    """The calculator model, served on 127.0.0.1."""
    with ScriptedServer(calculator) as server:
        yield server


def app(pytester: pytest.Pytester, url: str, prompt: str = "What is 2 plus 3?") -> None:
    """The user's test module, asking `prompt` of the server at `url`."""
    pytester.makepyfile(test_own_calc=APP.format(url=url, key=KEY, prompt=prompt))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run the user's suite in process."""
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def recording(pytester: pytest.Pytester, name: str = "calc") -> Path:
    """Where the user's recording lands by default."""
    return pytester.path / "recordings" / f"{name}.jsonl"


def test_the_tests_own_connection_records_then_replays_with_the_server_gone(
    pytester: pytest.Pytester,
) -> None:
    with ScriptedServer(calculator) as server:
        app(pytester, server.url)
        run(pytester, "--toolreel-record=once").assert_outcomes(passed=1)
        assert len(server.requests) == 2  # the tool call, then the answer
    calls = read_tape(recording(pytester))
    assert [call.connection for call in calls] == 2 * [
        {"provider": "openai", "base_url": server.url, "model": "calc-1"}
    ]
    assert KEY not in recording(pytester).read_text()

    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)  # nothing listens
    run(pytester).assert_outcomes(passed=1)  # once, with the recording there: replays
    run(pytester, "--toolreel-record=none", "--toolreel-offline").assert_outcomes(passed=1)


def test_a_changed_prompt_fails_clearly_and_keeps_the_recording(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    app(pytester, provider.url)
    run(pytester).assert_outcomes(passed=1)
    before = recording(pytester).read_bytes()

    app(pytester, provider.url, prompt="What is 2 plus 3, please?")
    result = run(pytester, "--toolreel-record=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*RequestMismatch: model call 1 differs from the recording:*",
            "*-What is 2 plus 3?",
            "*+What is 2 plus 3, please?",
            "*re-record it if the change is intended: pytest test_own_calc.py::test_calc "
            "--toolreel-record=new",
        ]
    )
    assert recording(pytester).read_bytes() == before


@pytest.mark.parametrize("mode", ["none", "once"])
def test_a_stale_recording_fails_without_asking_the_provider(
    pytester: pytest.Pytester, provider: ScriptedServer, mode: str
) -> None:
    app(pytester, provider.url)
    run(pytester).assert_outcomes(passed=1)
    app(pytester, provider.url, prompt="What is 1 plus 4?")  # would pass, if it were asked
    run(pytester, f"--toolreel-record={mode}").assert_outcomes(failed=1)
    assert len(provider.requests) == 2  # only the recording run's


def test_a_call_past_the_recordings_end_fails_without_asking_the_provider(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    app(pytester, provider.url)
    run(pytester).assert_outcomes(passed=1)
    source = (pytester.path / "test_own_calc.py").read_text()
    pytester.makepyfile(
        test_own_calc=source.rstrip() + "\n    assert anyio.run(ask, PROMPT).startswith('The')\n"
    )
    result = run(pytester, "--toolreel-record=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*model call 3 was never recorded (the recording holds 2, all served)*"]
    )
    assert len(provider.requests) == 2


def test_new_episodes_replays_what_matches_and_asks_only_for_the_rest(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    app(pytester, provider.url)
    run(pytester).assert_outcomes(passed=1)
    first = recording(pytester).read_bytes()

    run(pytester, "--toolreel-record=new_episodes").assert_outcomes(passed=1)
    assert len(provider.requests) == 2  # all matched: replayed, unlike `all`
    assert recording(pytester).read_bytes() == first

    app(pytester, provider.url, prompt="What is 1 plus 4?")
    run(pytester, "--toolreel-record=new_episodes").assert_outcomes(passed=1)
    assert len(provider.requests) == 4  # the changed conversation, asked afresh
    text = recording(pytester).read_text()
    assert "What is 1 plus 4?" in text and "What is 2 plus 3?" not in text

    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)
    assert len(provider.requests) == 4


def test_all_asks_the_provider_every_time(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    app(pytester, provider.url)
    run(pytester).assert_outcomes(passed=1)
    run(pytester, "--toolreel-record=all").assert_outcomes(passed=1)
    run(pytester, "--toolreel-record=all").assert_outcomes(passed=1)
    assert len(provider.requests) == 6


def test_the_key_the_test_passes_is_masked_wherever_it_is_echoed(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    def echo(body: dict[str, Any]) -> Reply:
        reply = calculator(body)
        return reply if reply.calls else Reply(text=f"{reply.text} (asked with key {KEY})")

    provider.script = echo
    app(pytester, provider.url)
    run(pytester).assert_outcomes(passed=1)
    saved = recording(pytester).read_text()
    assert KEY not in saved
    assert KEY[:12] not in saved
    assert "asked with key ***" in saved


TWO = """

@pytest.mark.toolreel_recording("two")
def test_two_connections():
    async def both():
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask, "What is 2 plus 3?", "calc-1")
            tasks.start_soon(ask, "What is 4 plus 1?", "calc-2")
    anyio.run(both)
"""


def test_every_connection_of_a_test_records_and_replays_side_by_side(
    pytester: pytest.Pytester,
) -> None:
    with ScriptedServer(calculator) as server:
        pytester.makepyfile(
            test_own_calc=APP.format(url=server.url, key=KEY, prompt="What is 2 plus 3?") + TWO
        )
        run(pytester, "-k", "two").assert_outcomes(passed=1)
        assert len(server.requests) == 4
    models = sorted(call.connection["model"] for call in read_tape(recording(pytester, "two")))
    assert models == ["calc-1", "calc-1", "calc-2", "calc-2"]
    for _ in range(3):  # whichever session asks first
        run(pytester, "-k", "two", "--toolreel-record=none").assert_outcomes(passed=1)


AGENT = """
import anyio, attrs, pytest
from toolreel.shell import AgentDefinition, AgentOptions, AgentSuccess, OutputTool, execute_agent

URL = {url!r}


@attrs.frozen
class Answer:
    total: float


AGENT = AgentDefinition(
    build_prompt=lambda text: text, output=OutputTool.of(Answer, name="answer")
)


@pytest.mark.toolreel_recording("agent")
def test_agent():
    options = AgentOptions(base_url=URL, api_key={key!r}, model="calc-1")
    result = anyio.run(execute_agent, AGENT, "add 2 and 3", options)
    assert isinstance(result, AgentSuccess)
    assert result.output == Answer(total=5)
"""


def test_an_agent_run_with_its_own_connection_records_and_replays(
    pytester: pytest.Pytester,
) -> None:
    with ScriptedServer(lambda body: tool_calls(("out", "answer", {"total": 5}))) as server:
        pytester.makepyfile(test_own_agent=AGENT.format(url=server.url, key=KEY))
        run(pytester).assert_outcomes(passed=1)
        assert len(server.requests) == 1
    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)
    [line] = recording(pytester, "agent").read_text().splitlines()[1:]
    assert json.loads(line)["connection"]["model"] == "calc-1"
