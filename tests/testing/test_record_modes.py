"""Record modes (issue 12, item 3) through the `toolreel_recording` fixture's options and model.

Each test runs a user's test suite through pytester; "the real provider" is
the scripted OpenAI-compatible server on 127.0.0.1, reached through the
environment as a user's recording run would reach OpenAI. (A test's own
connections, with no fixture: test_record_own_code.py.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pages import python_block

from toolreel.adapters import MemoryJournal
from toolreel.shell import AgentOptions, export_session, tool
from toolreel.shell import run as run_prompt
from toolreel.testing import Reply, ScriptedServer, text, tool_calls
from toolreel.testing._tape import HEADER, read_tape

KEY = "sk-recordmodes-test-0123456789abcdef"
CHAT = """
import anyio, pytest
import toolreel.testing
from toolreel.shell import Client, tool

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

@pytest.mark.toolreel_recording("sum")
def test_sum(toolreel_recording):
    reel = toolreel_recording
    async def main():
        options = reel.options(tools=[add], auto_execute_tools=True, **OPTIONS)
        async with Client(options, model=MODEL) as client:
            await client.query(PROMPT)
            return await client.wait()
    finish = anyio.run(main)
    assert finish.text.startswith("The sum is") or OPTIONS
"""


def calculator(body: dict[str, Any]) -> Reply:
    """Call `add` on a fresh prompt; answer once the tool's result is in."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text(f"The sum is {last['content']}")
    return tool_calls(("call_1", "add", {"a": 2, "b": 3}))


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    """The provider a recording run reaches: configured by the environment, as a user's."""
    with ScriptedServer(calculator) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("TOOLREEL_BASE_URL", server.url)
        monkeypatch.setenv("TOOLREEL_MODEL", "scripted-1")
        monkeypatch.delenv("TOOLREEL_PROVIDER", raising=False)
        monkeypatch.delenv("CI", raising=False)
        yield server


def chat_test(
    pytester: pytest.Pytester,
    prompt: str = "What is 2 + 3?",
    options: str = "{}",
    model: str = "reel.model",
) -> None:
    """The user's test module: a chat with a tool, asking `prompt` (`model`: the port passed)."""
    head = f"PROMPT = {prompt!r}\nOPTIONS = {options}\n"
    pytester.makepyfile(test_rm_calc=head + CHAT.replace("MODEL", model))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run the user's suite in process."""
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)


def recording(pytester: pytest.Pytester, name: str = "sum") -> Path:
    """Where the user's recording lands by default."""
    return pytester.path / "recordings" / f"{name}.jsonl"


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key and no provider any more: only a replay can pass."""
    for name in ("OPENAI_API_KEY", "TOOLREEL_BASE_URL", "TOOLREEL_MODEL"):
        monkeypatch.delenv(name)


def test_once_records_a_missing_recording_then_replays_it_offline(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    assert len(provider.requests) == 2  # the tool call, then the answer
    path = recording(pytester)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines  # a toolreel session export: JSON lines, one record a line
    assert "What is 2 + 3?" in path.read_text()

    offline(monkeypatch)
    run(pytester).assert_outcomes(passed=1)
    assert len(provider.requests) == 2


def test_once_fails_a_changed_request_and_says_how_to_re_record(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    before = recording(pytester).read_bytes()

    chat_test(pytester, "What is 2 + 3, please?")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*RequestMismatch: model call 1 differs from the recording*",
            "*re-record it if the change is intended: pytest test_rm_calc.py::test_sum "
            "--toolreel-record=new",
        ]
    )
    assert len(provider.requests) == 2
    assert recording(pytester).read_bytes() == before


def test_new_re_records_when_the_prompt_changed_and_keeps_a_matching_recording(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    first = recording(pytester).read_bytes()

    run(pytester, "--toolreel-record=new").assert_outcomes(passed=1)
    assert len(provider.requests) == 2  # every request matched: replayed
    assert recording(pytester).read_bytes() == first

    chat_test(pytester, "Add 2 and 3.")
    run(pytester, "--toolreel-record=new_episodes").assert_outcomes(passed=1)  # VCR.py's name
    assert len(provider.requests) == 4  # asked again from the changed request on
    assert "Add 2 and 3." in recording(pytester).read_text()
    assert "What is 2 + 3?" not in recording(pytester).read_text()

    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)  # the new one replays
    assert len(provider.requests) == 4


def test_a_replay_with_fewer_calls_keeps_the_recording_except_in_new(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    before = recording(pytester).read_bytes()

    chat_test(pytester, options="{'max_tool_iterations': 1}")  # stops after the tool round
    run(pytester).assert_outcomes(passed=1)
    assert recording(pytester).read_bytes() == before

    run(pytester, "--toolreel-record=new").assert_outcomes(passed=1)
    assert len(provider.requests) == 2  # the one call made was replayed
    assert len(read_tape(recording(pytester))) == 1


def test_a_replay_whose_test_passes_its_own_model_port_fails_saying_so(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    chat_test(
        pytester, model="toolreel.testing.FunctionModel(lambda messages, info: 'The sum is 5')"
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*asked no model through the reel, so nothing was replayed*model= is used as it is*"]
    )


def test_all_always_asks_the_provider_and_rewrites(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)

    def again(body: dict[str, Any]) -> Reply:
        reply = calculator(body)
        return text(reply.text + ", again") if reply.text else reply

    provider.script = again
    run(pytester, "--toolreel-record=all").assert_outcomes(passed=1)
    assert len(provider.requests) == 4  # asked although the recording held both requests
    assert "The sum is 5, again" in recording(pytester).read_text()


def test_none_fails_a_missing_recording_with_the_command_to_make_it(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    result = run(pytester, "--toolreel-record=none")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*recordings/sum.jsonl is missing*make it with: "
            "pytest test_rm_calc.py::test_sum --toolreel-record=once"
        ]
    )
    assert provider.requests == []
    assert not recording(pytester).exists()


def test_none_fails_a_stale_recording_without_asking_the_provider(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    before = recording(pytester).read_bytes()

    chat_test(pytester, "What is 2 + 3, please?")
    result = run(pytester, "--toolreel-record=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RequestMismatch: model call 1 differs from the recording*"])
    assert len(provider.requests) == 2  # only the first run's: none never asks
    assert recording(pytester).read_bytes() == before


def test_new_episodes_is_new_it_keeps_what_matches_and_asks_only_for_the_rest(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    run(pytester, "--toolreel-record=new_episodes").assert_outcomes(passed=1)
    assert len(provider.requests) == 2  # "all" would have asked again

    chat_test(pytester, "What is 2 + 3, please?")
    run(pytester, "--toolreel-record=new_episodes").assert_outcomes(passed=1)
    assert len(provider.requests) == 4
    assert "2 + 3, please?" in recording(pytester).read_text()


def test_on_ci_the_default_mode_is_none(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_test(pytester)
    monkeypatch.setenv("CI", "true")
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*is missing (record mode none, the default when CI is set)*"])
    assert provider.requests == []

    run(pytester, "--toolreel-record=once").assert_outcomes(passed=1)  # asked for: records
    run(pytester).assert_outcomes(passed=1)  # then replays on CI
    assert len(provider.requests) == 2


def test_the_key_never_lands_in_the_recording(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    def echo_key(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return text(f"The sum is 5 (asked with key {KEY})")
        return tool_calls(("call_1", "add", {"a": 2, "b": 3}))

    provider.script = echo_key
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    saved = recording(pytester).read_text()
    assert KEY not in saved
    assert KEY[:12] not in saved
    assert "asked with key ***" in saved


def test_a_failing_test_writes_no_recording(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    source = f"PROMPT = 'x'\nOPTIONS = {{}}\n{CHAT.replace('MODEL', 'reel.model')}"
    pytester.makepyfile(test_rm_calc=f"{source}\n    assert False, 'the app is wrong'\n")
    run(pytester).assert_outcomes(failed=1)
    assert len(provider.requests) == 2
    assert not recording(pytester).exists()


AGENT = """
import anyio, attrs, pytest
from toolreel.shell import AgentDefinition, AgentSuccess, OutputTool, execute_agent

@attrs.frozen
class Answer:
    total: float

AGENT = AgentDefinition(
    build_prompt=lambda text: text, output=OutputTool.of(Answer, name="answer")
)

@pytest.mark.toolreel_recording("agent")
def test_agent(toolreel_recording):
    reel = toolreel_recording
    result = anyio.run(
        lambda: execute_agent(AGENT, "add 2 and 3", reel.options(), model=reel.model)
    )
    assert isinstance(result, AgentSuccess)
    assert result.output == Answer(total=5)
"""


def test_an_agent_run_records_and_replays(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider.script = lambda body: tool_calls(("out", "answer", {"total": 5}))
    pytester.makepyfile(test_rm_agent=AGENT)
    run(pytester).assert_outcomes(passed=1)
    assert len(provider.requests) == 1
    [call] = read_tape(recording(pytester, "agent"))
    assert [spec["name"] for spec in call.request["tools"]] == ["answer"]

    offline(monkeypatch)
    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    "damage", [lambda path: path.write_text("not json\n"), lambda path: path.write_text("")]
)
def test_a_corrupt_recording_is_a_clear_error(
    pytester: pytest.Pytester, provider: ScriptedServer, damage: Callable[[Path], Any]
) -> None:
    chat_test(pytester)
    path = recording(pytester)
    path.parent.mkdir()
    damage(path)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*toolreel recording *recordings/sum.jsonl cannot be read: *",
            "*re-record it: pytest test_rm_calc.py::test_sum --toolreel-record=all",
        ]
    )
    assert provider.requests == []


APP_OPTIONS = """
import anyio, os, pytest
from toolreel.shell import AgentOptions, run

def app_options():
    return AgentOptions(model="scripted-1", base_url=os.environ.get("TOOLREEL_BASE_URL"))

@pytest.mark.toolreel_recording("hello")
def test_hello(toolreel_recording):
    options = toolreel_recording.apply(app_options())
    result = anyio.run(lambda: run("Say hello.", options, model=toolreel_recording.model))
    assert result.text == "Hello!"
"""


def test_the_recordings_folder_is_an_ini_option_and_apply_takes_the_apps_options(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider.script = lambda body: text("Hello!")
    pytester.makeini("[pytest]\ntoolreel_recordings_dir = tests/tapes\n")
    pytester.makepyfile(test_rm_hello=APP_OPTIONS)
    run(pytester).assert_outcomes(passed=1)
    assert (pytester.path / "tests" / "tapes" / "hello.jsonl").is_file()
    assert not recording(pytester, "hello").exists()

    monkeypatch.delenv("OPENAI_API_KEY")
    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)
    assert len(provider.requests) == 1


def test_a_marked_test_that_asks_no_model_fails_at_record_time(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    pytester.makepyfile(
        test_rm_marked="""
        import pytest

        @pytest.mark.toolreel_recording("nothing")
        def test_marked():  # asks for no fixture: the marker brings the reel
            pass
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)  # it asked no model: nothing to record
    result.stdout.fnmatch_lines(["*the test asked no model through the reel*"])
    assert not recording(pytester, "nothing").exists()


def test_the_docs_example_records_then_replays(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = python_block("docs/guides/testing.md", "toolreel_recording(")
    pytester.makepyfile(test_rm_example=example)
    monkeypatch.setenv("MY_LLM_URL", provider.url)  # the app's own setting
    run(pytester).assert_outcomes(passed=1)
    assert {request["model"] for request in provider.requests} == {"gpt-4.1-mini"}
    assert recording(pytester, "adds").is_file()
    offline(monkeypatch)
    monkeypatch.delenv("MY_LLM_URL")  # nothing to reach, no key: a hosted model, replayed
    run(pytester, "--toolreel-offline").assert_outcomes(passed=1)
    assert len(provider.requests) == 2


def test_the_reels_options_without_its_model_still_record_and_replay(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_test(pytester, model="None")  # the Client opens the options' connection itself
    run(pytester).assert_outcomes(passed=1)
    assert len(provider.requests) == 2
    offline(monkeypatch)
    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)
    assert len(provider.requests) == 2


def test_a_recording_run_recovers_tool_calls_written_as_text_as_the_options_ask(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hermes(body: dict[str, Any]) -> Reply:
        """A small local model without a tool parser: the call is in the content."""
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(f"The sum is {last['content']}")
        return text('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>')

    with ScriptedServer(hermes) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("TOOLREEL_BASE_URL", server.url)
        monkeypatch.setenv("TOOLREEL_MODEL", "scripted-1")
        monkeypatch.delenv("CI", raising=False)
        chat_test(pytester, options="{'tool_call_recovery': 'hermes'}")
        run(pytester).assert_outcomes(passed=1)
        assert len(server.requests) == 2  # the recovered call ran; its result went back
        assert server.requests[1]["messages"][-1] == {
            "role": "tool",
            "tool_call_id": server.requests[1]["messages"][-2]["tool_calls"][0]["id"],
            "content": "5",
        }
    offline(monkeypatch)
    run(pytester).assert_outcomes(passed=1)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_recording_written_as_a_session_export_still_replays(
    pytester: pytest.Pytester, provider: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = MemoryJournal()
    options = AgentOptions(
        model="scripted-1", base_url=provider.url, tools=[add], journal=journal, session_id="s"
    )
    anyio.run(run_prompt, "What is 2 + 3?", options)
    recording(pytester).parent.mkdir()
    export_session(journal, "s", recording(pytester))  # how recordings were first written
    before = recording(pytester).read_bytes()
    chat_test(pytester)
    offline(monkeypatch)
    run(pytester, "--toolreel-record=none").assert_outcomes(passed=1)
    assert len(provider.requests) == 2  # the export's two calls answered the test
    assert recording(pytester).read_bytes() == before


def test_the_recording_holds_each_call_readably(
    pytester: pytest.Pytester, provider: ScriptedServer
) -> None:
    chat_test(pytester)
    run(pytester).assert_outcomes(passed=1)
    head, *calls = [json.loads(line) for line in recording(pytester).read_text().splitlines()]
    assert head == HEADER
    assert [call["connection"] for call in calls] == 2 * [
        {"provider": "openai", "base_url": provider.url, "model": "scripted-1"}
    ]
    assert calls[0]["messages"][0]["content"] == "What is 2 + 3?"
    assert [event["type"] for event in calls[0]["events"]][-1] == "ModelResponded"
    assert calls[1]["messages"][-1]["tool_rounds"][0]["results"][0]["content"] == "5"
