"""The `toolreel` command, end to end: through click's CliRunner and as a real subprocess.

The model is the scripted calculator behind a real OpenAI-compatible HTTP
server on 127.0.0.1; the tools come from tests/shell/cli_tools.py through
`--tools cli_tools:TOOLS`, the way a user points at their own module.
"""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from toolreel.adapters import SQLiteJournal
from toolreel.adapters.records import config_data
from toolreel.cli import cli, main
from toolreel.cli._render import TurnView
from toolreel.core.notices import ReasoningStreamed, RetryScheduled, TextStreamed
from toolreel.shell.engine import Runner
from toolreel.shell.errors import JournalUnavailable
from toolreel.shell.scripted import Reply, ScriptedServer, calculator, http_error

HERE = Path(__file__).parent
TOOLREEL = Path(sys.executable).with_name("toolreel")
CHAINED = "What's 7 times 8, then add 5?"
COMMANDS = ["run", "chat", "sessions", "show", "replay", "export", "import", "demo"]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(calculator) as running:
        yield running


def model_args(server: ScriptedServer) -> list[str]:
    return ["--base-url", server.url, "--model", "scripted", "--tools", "cli_tools:TOOLS"]


def invoke(*args: str | Path, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], input=input)


def one_error_line(result: Result) -> str:
    """The single `error: ...` line a failed command printed on stderr."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="module")
def journal(server: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite journal holding session "calc": one chained calculation, two tool rounds."""
    path = tmp_path_factory.mktemp("journal") / "sessions.db"
    result = invoke("run", CHAINED, *model_args(server), "--journal", path, "--session", "calc")
    assert result.exit_code == 0, result.output
    return path


# --- help ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)])
def test_every_command_has_help(command: list[str]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Usage: toolreel {' '.join(command)}".rstrip())


def test_the_group_lists_every_command() -> None:
    listing = invoke("--help").stdout
    assert all(f"  {name} " in listing for name in COMMANDS)


# --- run -----------------------------------------------------------------------------------


def test_run_streams_the_text_and_each_tool_call_with_its_result(
    server: ScriptedServer, tmp_path: Path
) -> None:
    result = invoke("run", CHAINED, *model_args(server), "--journal", tmp_path / "j.db")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "Let me work that out. ",
        '→ multiply {"a": 7, "b": 8}',
        "  ← multiply: 56.0",
        '→ add {"a": 56, "b": 5}',
        '  ← add: {"result": 61.0}',
        "The answer is 61.",
    ]
    footer, where = result.stderr.splitlines()
    assert footer == "completed · 3 iterations · 30 in / 15 out tokens"
    assert where.startswith("session ") and where.endswith(str(tmp_path / "j.db"))


def test_a_failing_tool_is_shown_as_an_error_and_the_turn_goes_on(server: ScriptedServer) -> None:
    result = invoke("run", "What is 10 divided by 0?", *model_args(server))
    assert result.exit_code == 0, result.output
    assert "  ✗ divide: ValueError: Cannot divide by zero" in result.stdout


def test_run_without_streaming_and_with_the_prompt_on_stdin(server: ScriptedServer) -> None:
    result = invoke("run", "-", *model_args(server), "--no-stream", input="What is 25 plus 17?\n")
    assert result.exit_code == 0, result.output
    assert '→ add {"a": 25, "b": 17}' in result.stdout
    assert result.stdout.endswith("The answer is 42.\n")


def test_run_stopped_by_max_iterations_exits_1(server: ScriptedServer) -> None:
    result = invoke("run", CHAINED, *model_args(server), "--max-iterations", "1")
    assert result.exit_code == 1
    assert "raise --max-iterations" in one_error_line(result)


def test_a_failed_run_shows_the_provider_message_and_never_the_key() -> None:
    key = "sk-test-SECRET-4242"
    script = [http_error(401, "Incorrect API key provided"), http_error(401, f"key {key} revoked")]
    with ScriptedServer(script) as server:
        for message in ["Incorrect API key provided", "key *** revoked"]:
            args = ["run", "hi", "--base-url", server.url, "--model", "m", "--api-key", key]
            result = invoke(*args)
            assert result.exit_code == 1
            assert one_error_line(result) == f"error: model_error: HTTP 401: {message} " + (
                "(type=scripted_error)"
            )
            assert key not in result.output


def test_run_continues_a_journaled_session(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    for prompt in ["What is 25 plus 17?", "What is 2 times 3?"]:
        args = ["run", prompt, *model_args(server), "--journal", path, "--session", "s"]
        assert invoke(*args).exit_code == 0
    transcript = invoke("show", path, "s").stdout
    assert "## Turn 2" in transcript and "Total: 2 turns" in transcript
    assert invoke("replay", path).exit_code == 0


def test_continuing_a_session_with_another_config_notes_it_and_still_replays(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "j.db"
    for extra in [[], ["--system", "Be brief."]]:
        args = [
            "run",
            "What is 2 plus 2?",
            *model_args(server),
            "--journal",
            path,
            "--session",
            "s",
        ]
        result = invoke(*args, *extra)
        assert result.exit_code == 0, result.output
    assert result.stderr.startswith("note: continuing session s with a different system_prompt")
    replayed = invoke("replay", path)  # each turn replays under the config it ran with
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stdout.startswith("OK s · 2 turns")


# --- chat ----------------------------------------------------------------------------------


def test_chat_answers_each_line_until_exit(server: ScriptedServer, tmp_path: Path) -> None:
    lines = "What is 25 plus 17?\n\nCalculate 144 divided by 12\n/exit\nWhat is 1 plus 1?\n"
    path = tmp_path / "chat.db"
    result = invoke("chat", *model_args(server), "--journal", path, "--session", "c", input=lines)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "> What is 25 plus 17?" in out and "The answer is 42." in out
    assert "> Calculate 144 divided by 12" in out and "The answer is 12." in out
    assert "1 plus 1" not in out
    assert "Total: 2 turns" in invoke("show", path, "c").stdout


def test_chat_ends_at_eof(server: ScriptedServer) -> None:
    result = invoke("chat", *model_args(server), input="What is 3 plus 4?")
    assert result.exit_code == 0, result.output
    assert "The answer is 7." in result.stdout


# --- sessions, show, replay, export, import ---------------------------------------------


def test_sessions_lists_id_turns_events_reason_and_tokens(journal: Path) -> None:
    result = invoke("sessions", journal)
    assert result.exit_code == 0, result.output
    header, _, row = result.stdout.splitlines()
    assert header.split()[:5] == ["session", "turns", "events", "last", "finish"]
    assert header.endswith("tokens (in / out)")
    assert row.split()[0:2] == ["calc", "1"]
    assert row.split()[3:] == ["completed", "30", "/", "15"]
    assert invoke("sessions", "--quiet", journal).stdout == "calc\n"


def test_show_collapses_tool_rounds_unless_expanded(journal: Path) -> None:
    collapsed = invoke("show", journal, "calc")
    assert collapsed.exit_code == 0, collapsed.output
    assert "▸ 2 tool rounds: multiply, add" in collapsed.stdout
    assert "### Round" not in collapsed.stdout
    assert "**Assistant:** The answer is 61." in collapsed.stdout
    expanded = invoke("show", journal, "ca", "--expand", "--ids").stdout  # a unique id prefix
    assert "# Session calc" in expanded
    assert "### Round 2" in expanded and "→ add [call_2_1]" in expanded


def test_replay_says_ok_per_session(journal: Path) -> None:
    result = invoke("replay", journal)
    assert result.exit_code == 0, result.output
    assert result.stdout == "OK calc · 1 turn · 28 events\n"


def test_export_then_import_into_a_fresh_journal_replays(journal: Path, tmp_path: Path) -> None:
    exported, fresh = tmp_path / "calc.jsonl", tmp_path / "fresh.db"
    assert invoke("export", journal, "calc", exported).exit_code == 0
    result = invoke("import", exported, fresh)
    assert result.exit_code == 0, result.output
    assert result.stderr == f"imported session calc into {fresh}\n"
    assert invoke("replay", fresh, "calc").stdout == "OK calc · 1 turn · 28 events\n"
    assert invoke("show", fresh, "calc").stdout == invoke("show", journal, "calc").stdout
    again = invoke("import", exported, fresh)
    assert again.exit_code == 1
    assert "already exists" in one_error_line(again)
    assert "exists" in one_error_line(invoke("export", journal, "calc", exported))


def test_replay_fails_when_the_journal_config_differs(journal: Path, tmp_path: Path) -> None:
    path, exported = tmp_path / "changed.db", tmp_path / "calc.jsonl"
    assert invoke("export", journal, "calc", exported).exit_code == 0
    assert invoke("import", exported, path).exit_code == 0
    store = SQLiteJournal(path)
    changed = attrs.evolve(store.config("calc"), max_iterations=1)
    store.close()
    with sqlite3.connect(path) as db:  # edited behind its back (`begin` refuses a rewrite)
        text = json.dumps(config_data(changed), sort_keys=True)
        db.execute("UPDATE configs SET config = ? WHERE session_id = 'calc'", (text,))
    result = invoke("replay", path)
    assert result.exit_code == 1
    assert "session 'calc' diverges at step" in result.stdout
    assert '"type": "Capped"' in result.stdout


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cli_tools", "expected MODULE:ATTR, got 'cli_tools'"),
        ("no_such_module_here:TOOLS", "cannot import 'no_such_module_here'"),
        ("cli_tools:MISSING", "'cli_tools' has no attribute 'MISSING'"),
        ("cli_tools:NUMBER", "cli_tools:NUMBER holds int, not a tool or a function"),
    ],
)
def test_a_bad_tools_spec_is_a_usage_error(spec: str, message: str) -> None:
    result = invoke("run", "hi", "--model", "m", "--tools", spec)
    assert result.exit_code == 2
    assert message in one_error_line(result)


def test_tools_can_be_one_tool_or_one_function(server: ScriptedServer) -> None:
    offered = {
        "cli_tools:add": ["  ✗ multiply: Unknown tool: multiply", '  ← add: {"result": 2.0}'],
        "cli_tools:multiply": ["  ← multiply: 42.0", "  ✗ add: Unknown tool: add"],
    }
    for spec, lines in offered.items():
        args = ["run", "What is 6 times 7 and 1 plus 1?", "--base-url", server.url, "--model", "m"]
        result = invoke(*args, "--tools", spec)
        assert result.exit_code == 0, result.output
        assert all(line in result.stdout.splitlines() for line in lines), result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "hi", "--max-iterations", "0"], "'--max-iterations': 0 is not in the range"),
        (["run", "hi", "--provider", "nope"], "'--provider': 'nope' is not one of"),
        (["run", "hi", "--base-url", "http://127.0.0.1:9/v1"], "--model is required"),
        (["run", " ", "--model", "m"], "the prompt is empty"),
        (["run", "hi", "--model", "m", "--base-url", "localhost:11434"], "http:// or https://"),
        (["run", "hi", "--model", "m", "--base-url", ""], "http:// or https://"),
        (["import", "x.db", "y.db"], "expected a .jsonl file that `export` wrote"),
        (["run"], "Missing argument 'PROMPT'"),
        (["frobnicate"], "No such command 'frobnicate'"),
        (["show", "x.db"], "Missing argument 'SESSION'"),
        (["export", "x.db", "s", "out.txt"], "the export file must end .jsonl"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in one_error_line(result)


@pytest.mark.parametrize("name", ["missing.db", "missing.jsonl"])
@pytest.mark.parametrize(
    "command", [["sessions"], ["show", "s"], ["replay"], ["export", "s", "o.jsonl"]]
)
def test_a_missing_journal_is_an_error_and_is_not_created(
    tmp_path: Path, command: list[str], name: str
) -> None:
    path = tmp_path / name
    result = invoke(command[0], path, *command[1:])
    assert result.exit_code == 1
    assert one_error_line(result) == f"error: no journal at {path}"
    assert not path.exists()
    result = invoke("import", path, tmp_path / "target.db")  # only .jsonl files are imported
    code = 1 if name.endswith(".jsonl") else 2
    assert (result.exit_code, path.exists(), (tmp_path / "target.db").exists()) == (
        code,
        False,
        False,
    )


@pytest.mark.parametrize("command", [["show"], ["replay"], ["export", "x.jsonl"]])
def test_an_unknown_session_is_an_error(journal: Path, command: list[str]) -> None:
    result = invoke(command[0], journal, "nope", *command[1:])
    assert result.exit_code == 1
    assert one_error_line(result) == f"error: no session 'nope' in {journal} (it has: calc)"


def test_a_file_that_is_not_a_journal_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n")
    result = invoke("sessions", path)
    assert result.exit_code == 1
    assert "is not a journal" in one_error_line(result)
    assert path.read_text() == "not a database\n"
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text("{oops\n")
    assert f"journal {garbled} is damaged" in one_error_line(invoke("sessions", garbled))


def test_an_empty_journal_has_no_sessions(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.touch()
    result = invoke("sessions", path)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", f"no sessions in {path}\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base-url", "http://"], "'--base-url': base_url='http://' is not allowed: an http://"),
        (["--session", "a\tb"], "'--session': session_id='a\\tb' is not allowed: a non-empty"),
    ],
)
def test_an_option_the_client_refuses_is_a_usage_error_naming_the_option(
    server: ScriptedServer, args: list[str], message: str
) -> None:
    result = invoke("run", "What is 25 plus 17?", "--model", "m", "--base-url", server.url, *args)
    assert result.exit_code == 2
    assert message in one_error_line(result)


def bad_journals(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Journal paths `run` cannot use, and what the one error line says."""
    not_json = tmp_path / "notes.jsonl"
    not_json.write_text("these are my notes\n")
    return {
        "not JSON lines": (not_json, f"error: journal {not_json} is damaged"),
        "in a missing folder": (tmp_path / "gone" / "j.jsonl", "error: "),
    }


@pytest.mark.parametrize("case", ["not JSON lines", "in a missing folder"])
def test_run_with_a_journal_it_cannot_use_is_one_line_and_exit_1(
    server: ScriptedServer, tmp_path: Path, case: str
) -> None:
    path, line = bad_journals(tmp_path)[case]
    before = path.read_bytes() if path.is_file() else None
    result = invoke("run", "What is 25 plus 17?", *model_args(server), "--journal", path)
    assert result.exit_code == 1, result.output
    assert one_error_line(result).startswith(line)
    assert str(path) in one_error_line(result)
    assert result.stdout == ""  # nothing ran
    assert (path.read_bytes() if path.is_file() else None) == before


def test_a_toolreel_error_inside_a_running_turn_is_one_line_not_a_group_traceback(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: object, event: object) -> None:
        raise JournalUnavailable("cannot write journal j.db: No space left on device")

    monkeypatch.setattr(Runner, "turn", broken)
    result = invoke("run", "What is 25 plus 17?", *model_args(server))
    assert result.exit_code == 1
    assert one_error_line(result) == "error: cannot write journal j.db: No space left on device"


def test_importing_a_damaged_export_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "target.db"
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text('{"session": "s", "kind": "config"\n')
    result = invoke("import", garbled, target)
    assert result.exit_code == 1
    assert one_error_line(result).startswith(f"error: journal {garbled} is damaged")
    headless = tmp_path / "headless.jsonl"  # a step, but no config line for its session
    headless.write_text('{"session": "s", "kind": "step", "seq": 1}\n')
    result = invoke("import", headless, target)
    assert result.exit_code == 1
    assert one_error_line(result).startswith(f"error: journal {headless}, session 's'")
    assert not target.exists() or "s" not in SQLiteJournal(target).sessions()


def test_the_demo_refuses_a_bad_base_url_as_a_usage_error() -> None:
    result = invoke("demo", "--base-url", "localhost:11434", "--model", "m")
    assert result.exit_code == 2
    assert "base_url='localhost:11434' is not allowed" in one_error_line(result)


def test_an_unexpected_exception_still_shows_its_traceback(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def buggy(self: object, event: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(Runner, "turn", buggy)
    result = invoke("run", "What is 25 plus 17?", *model_args(server))
    assert result.exit_code == 1
    assert isinstance(result.exception, ZeroDivisionError | BaseExceptionGroup)


# --- the live view ------------------------------------------------------------------------


def test_the_spinner_never_breaks_a_line_of_streamed_text() -> None:
    terminal = io.StringIO()
    out, err = (Console(file=terminal, force_terminal=True, width=80, stderr=e) for e in (0, 1))
    view = TurnView(out, err)
    view.waiting("thinking…")
    for notice in [TextStreamed(text="Hel"), ReasoningStreamed(text="hm"), TextStreamed(text="lo")]:
        view.show(notice)
    view.show(RetryScheduled(retry=1, seconds=2.0, message="HTTP 503:\n busy", status=503))
    view.show(TextStreamed(text="Hello again.\n"))
    view.quiet()
    screen = terminal.getvalue()
    assert "Hello\n" in screen and "Hello again.\n" in screen
    assert "retry 1 in 2.0s: HTTP 503: busy (the text above is void)" in screen


# --- demo and the console script --------------------------------------------------------


def test_demo_runs_the_calculator_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"]:
        monkeypatch.delenv(name, raising=False)
    result = invoke("demo", "--journal", tmp_path / "demo.db")
    assert result.exit_code == 0, result.output
    assert "Assistant: The answer is 61." in result.stdout
    assert "OK calculator-demo · 3 turns" in invoke("replay", tmp_path / "demo.db").stdout


def test_demo_takes_a_postgresql_url_and_one_that_cannot_connect_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a URL taken for a file path would be created here
    for name in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"]:
        monkeypatch.delenv(name, raising=False)
    url = "postgresql://toolreel:s3cret@127.0.0.1:1/nowhere"  # nothing listens on port 1
    result = invoke("demo", "--journal", url)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: cannot open journal postgresql://toolreel:***@")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert "s3cret" not in result.output and "User:" not in result.stdout  # nothing ran
    assert list(tmp_path.iterdir()) == []


def test_main_returns_the_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "/nonexistent/j.db"]) == 1
    assert capsys.readouterr().err == "error: no journal at /nonexistent/j.db\n"


def test_the_console_script_runs_with_tools_beside_the_working_directory(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "j.db"
    args = [TOOLREEL, "run", CHAINED, *model_args(server), "--journal", path]
    done = subprocess.run(args, cwd=HERE, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("The answer is 61.\n")
    assert "completed · 3 iterations" in done.stderr


def test_ctrl_c_interrupts_the_turn_cleanly_and_exits_130(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    with ScriptedServer([Reply(text="too late", delay=30)]) as slow:
        args = [TOOLREEL, "run", "hi", "--base-url", slow.url, "--model", "m", "--journal", path]
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not slow.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    table = invoke("sessions", path).stdout
    assert "cancelled" in table
