"""The `toolreel` command as a newcomer meets it (issue 21): every message names the flag to
give, the chat says how to leave and what it takes, a paused turn prints the whole command
that decides it, and `python -m toolreel` works.

Through click's CliRunner, and as real subprocesses (a pseudo-terminal for the chat's
greeting). Models are scripted OpenAI-compatible servers on 127.0.0.1, or `--model test`.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from approval_tools import DELETED
from click.testing import CliRunner, Result

import toolreel.cli as cli_module
from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli
from toolreel.core.policies import RetryPolicy
from toolreel.shell import scripted
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, text

HERE = Path(__file__).parent
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


def invoke(*args: str | Path, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], input=input)


def environment() -> dict[str, str]:
    """This environment without provider keys or toolreel defaults, tools importable."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in KEYS and not key.startswith("TOOLREEL_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    for name in ("TOOLREEL_PROVIDER", "TOOLREEL_MODEL", "TOOLREEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def calculator() -> Iterator[ScriptedServer]:
    with ScriptedServer(scripted.calculator) as running:
        yield running


def calculator_args(server: ScriptedServer) -> list[str]:
    return ["--base-url", server.url, "--model", "scripted", "--tools", "cli_tools:TOOLS"]


# --- no key ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["run", "hi"], ["chat"]])
def test_no_key_names_the_flag_the_variable_and_the_test_model(
    no_keys: None, command: list[str]
) -> None:
    result = invoke(*command, input="")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "error: no API key for openai: give --api-key KEY or set OPENAI_API_KEY ("
    )
    assert "--base-url URL for a server that needs none" in line
    assert "--model test tries toolreel with no key and no server" in line
    assert "api_key=" not in line and "base_url" not in line  # no Python words


def test_no_key_for_another_provider_names_its_variables(no_keys: None) -> None:
    result = invoke("run", "hi", "--provider", "gemini")
    assert result.exit_code == 2
    assert "set GEMINI_API_KEY or GOOGLE_API_KEY" in result.stderr


def test_the_worker_which_takes_no_test_model_does_not_offer_it(no_keys: None) -> None:
    result = invoke("worker", "--temporal", "127.0.0.1:1")
    assert result.exit_code == 2
    assert "give --api-key KEY or set OPENAI_API_KEY" in result.stderr
    assert "--model test" not in result.stderr


def test_the_offered_test_model_works_with_no_key(no_keys: None) -> None:
    result = invoke("run", "What is 2 plus 3?", "--model", "test", "--tools", "cli_tools:TOOLS")
    assert result.exit_code == 0, result.output
    assert "→ add" in result.stdout


def test_a_turn_stopped_after_one_iteration_says_it_in_the_singular(
    calculator: ScriptedServer,
) -> None:
    args = ["run", "What's 7 times 8, then add 5?", *calculator_args(calculator)]
    result = invoke(*args, "--max-iterations", "1")
    assert result.exit_code == 1
    assert "error: stopped after 1 iteration with the model still calling tools" in result.stderr


# --- connection errors -----------------------------------------------------------------------


def test_an_unreachable_server_is_named_in_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    made = cli_module._options  # the same options, without the seconds of backoff

    def quick(*args: Any) -> Any:
        return attrs.evolve(made(*args), retry=RetryPolicy(max_retries=1, base_delay=0.0))

    monkeypatch.setattr(cli_module, "_options", quick)
    result = invoke(
        "run", "hi", "--base-url", "http://user:t0ps3cret@127.0.0.1:9/v1", "--model", "m"
    )
    assert result.exit_code == 1
    error = result.stderr.splitlines()[-1]
    assert error.startswith("error: retries_exhausted: ConnectError: ")
    assert error.endswith("(http://127.0.0.1:9/v1/chat/completions)")
    assert "t0ps3cret" not in result.output


# --- chat ------------------------------------------------------------------------------------


def test_help_and_unknown_commands_are_answered_not_sent_to_the_model(
    calculator: ScriptedServer,
) -> None:
    before = len(calculator.requests)
    result = invoke("chat", *calculator_args(calculator), input="/help\n/frobnicate now\n")
    assert result.exit_code == 0, result.output
    assert len(calculator.requests) == before  # nothing was a prompt
    lines = result.stderr.splitlines()
    assert lines[0].split()[:2] == ["/image", "PATH"]
    assert [line.split()[0] for line in lines[:3]] == ["/image", "/help", "/exit"]
    assert "Ctrl-D" in lines[2]
    unknown = lines.index("unknown command /frobnicate (a line starting // is sent as a prompt)")
    assert [line.split()[0] for line in lines[unknown + 1 :]][:3] == ["/image", "/help", "/exit"]
    assert result.stdout == ""


def test_a_line_starting_with_two_slashes_is_sent_as_a_prompt_less_one() -> None:
    with ScriptedServer([text("noted")]) as server:
        args = ["chat", "--base-url", server.url, "--model", "m"]
        result = invoke(*args, input="//no_think What is 1 plus 1?\n")
    assert result.exit_code == 0, result.output
    assert server.requests[0]["messages"][-1]["content"] == "/no_think What is 1 plus 1?"
    assert "> /no_think What is 1 plus 1?" in result.stdout


def test_a_path_is_a_prompt_not_a_command() -> None:
    with ScriptedServer([text("a folder")]) as server:
        args = ["chat", "--base-url", server.url, "--model", "m"]
        result = invoke(*args, input="/usr/bin: what is it?\n")
    assert result.exit_code == 0, result.output
    assert server.requests[0]["messages"][-1]["content"] == "/usr/bin: what is it?"


def read_until(fd: int, wanted: str, seconds: float = 30) -> str:
    """What the terminal shows until `wanted` appears (fails after `seconds`)."""
    seen = b""
    deadline = time.monotonic() + seconds
    while wanted.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {wanted!r} in {seen.decode(errors='replace')!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
    return seen.decode(errors="replace")


def test_chat_on_a_terminal_says_how_to_leave_and_get_help() -> None:
    command = [sys.executable, "-m", "toolreel", "chat", "--model", "test"]
    main, child = pty.openpty()
    process = subprocess.Popen(
        command, stdin=child, stdout=child, stderr=child, env=environment(), cwd=HERE
    )
    os.close(child)
    try:
        shown = read_until(main, "> ")
        assert "/help lists the commands · /exit or Ctrl-D leaves" in shown
        os.write(main, b"/help\n")
        assert "list these commands" in read_until(main, "leave (or /quit")
        os.write(main, b"/exit\n")
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)


# --- temperature and max tokens --------------------------------------------------------------


def test_temperature_and_max_tokens_reach_the_model_and_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    with ScriptedServer([text("same every time")]) as server:
        args = ["run", "hi", "--base-url", server.url, "--model", "m", "--journal", path]
        result = invoke(*args, "--session", "s", "--temperature", "0", "--max-tokens", "50")
    assert result.exit_code == 0, result.output
    [body] = server.requests
    assert body["temperature"] == 0 and body["max_tokens"] == 50
    journal = SQLiteJournal(path)
    try:
        config = journal.config("s")
    finally:
        journal.close()
    assert (config.temperature, config.max_tokens) == (0.0, 50)
    assert "settings: temperature 0, max_tokens 50" in invoke("show", path, "s").stdout


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--temperature", "2.5", "a finite number in [0, 2]"),
        ("--temperature", "warm", "'warm' is not a valid float"),
        ("--max-tokens", "0", "an int >= 1"),
    ],
)
def test_a_bad_setting_is_a_usage_error_naming_the_flag(
    flag: str, value: str, message: str
) -> None:
    result = invoke("run", "hi", "--model", "test", flag, value)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert f"'{flag}'" in line and message in line


@pytest.mark.parametrize("command", [["run", "hi"], ["chat"]])
def test_settings_with_temporal_are_refused_not_dropped(command: list[str]) -> None:
    args = [*command, "--temporal", "127.0.0.1:1", "--temperature", "0"]
    result = invoke(*args, input="hi\n")
    assert result.exit_code == 2
    assert "Invalid value for '--temperature': not supported with --temporal" in result.stderr


# --- approve: the whole command, the recorded settings ---------------------------------------


def deleting(request: dict[str, Any]) -> Reply:
    """Calls `delete` once (as c1), then answers with what the tool result said."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(calls=(("c1", "delete", json.dumps({"path": "a.txt"})),))
    return Reply(text="Result: " + results[0])


def decide_line(stderr: str, verb: str) -> list[str]:
    """The arguments of the `toolreel approve|deny ...` command a paused run printed."""
    [line] = [line for line in stderr.splitlines() if f": toolreel {verb} " in line]
    words = shlex.split(line.partition(": ")[2])
    assert words[:2] == ["toolreel", verb], line
    return words[1:]


def test_the_printed_command_decides_with_the_sessions_settings(tmp_path: Path) -> None:
    DELETED.clear()
    path = tmp_path / "my sessions.db"  # a space: the command quotes it
    with ScriptedServer(deleting) as server:
        settings = ["--system", "Be careful.", "--max-iterations", "7", "--temperature", "0.5"]
        args = ["run", "Delete a.txt", "--base-url", server.url, "--model", "scripted"]
        paused = invoke(*args, "--tools", "approval_tools:TOOLS", "--journal", path, *settings)
        assert paused.exit_code == 3, paused.output
        approve = decide_line(paused.stderr, "approve")
        assert approve[:2] == ["approve", "c1"]  # the one held call, by its id
        assert "--tools" in approve and "--base-url" in approve and "--api-key" not in approve
        deny = decide_line(paused.stderr, "deny")
        assert deny[:4] == ["deny", "c1", "--reason", "TEXT"] and deny[4:] == approve[2:]
        approved = invoke(*approve)
    assert approved.exit_code == 0, approved.output
    assert "continuing session" not in approved.stderr  # the same settings as recorded
    assert DELETED == ["a.txt"] and "Result: deleted a.txt" in approved.stdout
    last = server.requests[-1]
    assert last["messages"][0] == {"role": "system", "content": "Be careful."}
    assert last["temperature"] == 0.5 and last["model"] == "scripted"


def test_a_flag_given_to_approve_overrides_the_recorded_setting(tmp_path: Path) -> None:
    DELETED.clear()
    path = tmp_path / "j.db"
    with ScriptedServer(deleting) as server:
        args = ["--base-url", server.url, "--tools", "approval_tools:TOOLS", "--journal", path]
        run = invoke("run", "Delete a.txt", "--model", "scripted", *args, "--temperature", "0.5")
        assert run.exit_code == 3, run.output
        session = ["--session", decide_line(run.stderr, "approve")[5]]
        approved = invoke("approve", "c1", *args, *session, "--temperature", "1")
    assert approved.exit_code == 0, approved.output
    assert "with a different temperature" in approved.stderr
    assert server.requests[-1]["temperature"] == 1


def test_a_key_given_on_the_command_line_is_asked_for_again_never_printed(
    tmp_path: Path,
) -> None:
    with ScriptedServer(deleting) as server:
        args = ["run", "Delete a.txt", "--base-url", server.url, "--model", "scripted"]
        key = "sk-never-printed-1234"
        tools = ["--tools", "approval_tools:TOOLS", "--journal", tmp_path / "j.db"]
        paused = invoke(*args, *tools, "--api-key", key)
    assert paused.exit_code == 3, paused.output
    assert key not in paused.output
    assert decide_line(paused.stderr, "approve")[-2:] == ["--api-key", "KEY"]


# --- exit codes ------------------------------------------------------------------------------


def exit_of_run(case: str, tmp_path: Path) -> int:
    """Run `toolreel run` into one outcome; its exit code."""
    if case == "usage":
        return invoke("run", "hi", "--model", "test", "--max-iterations", "0").exit_code
    replies = {
        "completed": [text("done")],
        "failed": [http_error(401, "bad key")],
        "paused": deleting,
    }[case]
    with ScriptedServer(replies) as server:
        args = ["run", "Delete a.txt", "--base-url", server.url, "--model", "m"]
        tools = ["--tools", "approval_tools:TOOLS", "--journal", tmp_path / "j.db"]
        return invoke(*args, *tools).exit_code


@pytest.mark.parametrize(
    ("case", "code", "said"),
    [
        ("completed", 0, "the turn completed"),
        ("failed", 1, "it did not"),
        ("usage", 2, "a usage error"),
        ("paused", 3, "it paused for approval"),
    ],
)
def test_run_help_lists_each_exit_code_run_really_returns(
    case: str, code: int, said: str, tmp_path: Path
) -> None:
    assert exit_of_run(case, tmp_path) == code
    listed = [line.strip() for line in invoke("run", "--help").stdout.splitlines()]
    assert any(line.startswith(f"{code} ") and said in line for line in listed), listed


@pytest.mark.parametrize("command", ["run", "chat", "approve", "deny"])
def test_the_turn_commands_and_the_group_list_every_exit_code(command: str) -> None:
    shown = invoke(command, "--help").stdout
    if command == "deny":
        assert "Exit codes as `approve`'s" in " ".join(shown.split())
        return
    codes = [line.split()[0] for line in shown.splitlines() if line.startswith("    ")]
    assert [code for code in codes if code.isdigit()] == ["0", "1", "2", "3", "130"]
    group = " ".join(invoke("--help").stdout.split())
    for code in ("0 success", "1 a turn", "2 a usage error", "3 a turn left paused", "130 Ctrl-C"):
        assert code in group


# --- python -m toolreel ----------------------------------------------------------------------


def test_python_dash_m_toolreel_runs_the_command(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "toolreel", "run", "What is 2 plus 3?", "--model", "test"]
    done = subprocess.run(
        [*args, "--tools", "cli_tools:TOOLS"],
        cwd=HERE,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "→ add" in done.stdout and "completed · " in done.stderr
    usage = subprocess.run(
        [sys.executable, "-m", "toolreel", "run"],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert usage.returncode == 2 and usage.stderr.startswith("error: Missing argument 'PROMPT'")


# --- a server that refuses null content ------------------------------------------------------


def test_run_against_a_server_that_refuses_null_content_completes() -> None:
    def refusing(request: dict[str, Any]) -> Reply:
        if any(m["role"] == "assistant" and m["content"] is None for m in request["messages"]):
            return http_error(500, 'can only concatenate str (not "NoneType") to str')
        return scripted.calculator(request)

    with ScriptedServer(refusing) as server:
        result = invoke("run", "What is 25 plus 17?", *calculator_args(server))
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("The answer is 42.\n")
    assert "retry" not in result.stderr  # sent again at once, not after a backoff
