"""`toolreel` and human approval: `chat` asks y/n (and a reason for a no), `run` leaves the
turn paused (exit 3), `sessions` marks it, `approve` / `deny` decide it later."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from approval_tools import DELETED
from click.testing import CliRunner, Result

from toolreel.cli import cli
from toolreel.shell.scripted import Reply, ScriptedServer


def model(request: dict) -> Reply:
    """Calls `delete` once (as c1), then answers with what the tool result said."""
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(calls=(("c1", "delete", json.dumps({"path": "a.txt"})),))
    return Reply(text="Result: " + results[0])


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    DELETED.clear()
    with ScriptedServer(model) as running:
        yield running


def invoke(*args: str | Path, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], input=input)


def model_args(server: ScriptedServer, journal: Path) -> list[str | Path]:
    return [
        *("--base-url", server.url, "--model", "scripted", "--tools", "approval_tools:TOOLS"),
        *("--journal", journal, "--session", "s1"),
    ]


def printed_command(stderr: str, verb: str) -> list[str]:
    """The arguments of the `toolreel approve ...` (or deny) command a paused run printed."""
    [line] = [line for line in stderr.splitlines() if f": toolreel {verb} " in line]
    words = shlex.split(line.partition(": ")[2])
    assert words[:2] == ["toolreel", verb], line
    return words[1:]


def test_chat_asks_and_a_yes_runs_the_call(server: ScriptedServer, tmp_path: Path) -> None:
    result = invoke("chat", *model_args(server, tmp_path / "j.db"), input="Delete a.txt\ny\n")
    assert result.exit_code == 0, result.output
    assert 'approve delete({"path": "a.txt"})? [y/n] y' in result.stdout
    assert "Result: deleted a.txt" in result.stdout and DELETED == ["a.txt"]


def test_chat_asks_a_reason_for_a_no_and_the_model_reads_it(
    server: ScriptedServer, tmp_path: Path
) -> None:
    lines = "Delete a.txt\nmaybe\nn\nit is the only copy\n"
    result = invoke("chat", *model_args(server, tmp_path / "j.db"), input=lines)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("approve delete") == 2  # "maybe" is asked again
    assert "Result: it is the only copy" in result.stdout and DELETED == []


def test_chat_ending_at_the_question_leaves_the_turn_paused(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "j.db"
    result = invoke("chat", *model_args(server, path), input="Delete a.txt\n")
    assert result.exit_code == 3, result.output
    assert "waiting for approval: delete" in result.stderr
    again = invoke("chat", *model_args(server, path), input="y\n")
    assert again.exit_code == 0, again.output
    assert "waits for approval" in again.stderr and "Result: deleted a.txt" in again.stdout


def test_run_pauses_sessions_marks_it_and_approve_goes_on(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "j.db"
    result = invoke("run", "Delete a.txt", *model_args(server, path))
    assert result.exit_code == 3, result.output
    assert "waiting for approval: delete" in result.stderr and "[c1]" in result.stderr
    assert "awaiting approval (1)" in invoke("sessions", path).stdout
    assert "⏸ awaiting approval: delete [c1]" in invoke("show", path, "s1", "--ids").stdout
    assert DELETED == []
    approved = invoke(*printed_command(result.stderr, "approve"))  # as printed, nothing added
    assert approved.exit_code == 0, approved.output
    assert "Result: deleted a.txt" in approved.stdout and DELETED == ["a.txt"]
    assert "completed" in invoke("sessions", path).stdout


def test_deny_from_the_command_line_gives_the_model_the_reason(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "j.db"
    invoke("run", "Delete a.txt", *model_args(server, path))
    denied = invoke("deny", "c1", "--reason", "not today", *model_args(server, path))
    assert denied.exit_code == 0, denied.output
    assert "Result: not today" in denied.stdout and DELETED == []


def test_approving_an_unknown_call_is_a_usage_error(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    invoke("run", "Delete a.txt", *model_args(server, path))
    result = invoke("approve", "nope", *model_args(server, path))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: can't handle event Approved(call_id='nope') when ")
    assert "call 'nope' awaits no approval (unknown, or already decided)" in result.stderr
    assert "awaiting approval: ['c1']" in result.stderr
    assert invoke("approve", "c1", "--model", "m", "--base-url", server.url).exit_code == 2


def test_show_says_a_paused_turn_waits_for_approval_not_that_it_is_unfinished(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "j.db"
    invoke("run", "Delete a.txt", *model_args(server, path))
    shown = invoke("show", path, "s1").stdout
    assert "_unfinished_" not in shown
    held, said = shown.index("⏸ awaiting approval: delete"), shown.index("_awaiting approval")
    assert held < said < shown.index("Total: 1 turn")
    assert "_awaiting approval · 1 call held_" in shown
