"""`toolreel fork`, `toolreel rerun` and `toolreel diff`, through click's CliRunner.

The original is recorded over HTTP on 127.0.0.1 with the scripted model "arith-a"
(tests/shell/whatif_tools.py) into a SQLite file; the commands go on with the same
server. `show` and `sessions` say where a fork or rerun came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from whatif_tools import PROMPT, RUNS, arith, options, record

from toolreel.adapters import Session, SQLiteJournal
from toolreel.shell import replay
from toolreel.shell._scripted import ScriptedServer
from toolreel.shell.cli import cli


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(arith) as running:
        yield running


@pytest.fixture
def path(server: ScriptedServer, tmp_path: Path) -> str:
    where = str(tmp_path / "j.db")
    record(options(server, where, session_id="orig"), PROMPT)
    RUNS.clear()
    return where


def invoke(server: ScriptedServer, *args: str) -> Result:
    connection = ["--base-url", server.url, "--api-key", "none"]
    return CliRunner().invoke(cli, [*args, *connection])


def replays(path: str, session_id: str) -> bool:
    journal = SQLiteJournal(path)
    try:
        return isinstance(replay(journal, session_id), Session)
    finally:
        journal.close()


def test_fork_replaces_a_result_and_goes_on_live(server: ScriptedServer, path: str) -> None:
    result = invoke(
        server,
        "fork", path, "orig", "--at-round", "1", "--result", "a_add=10",
        "--into", "f", "--tools", "whatif_tools:TOOLS",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "The answer is 40." in result.output
    assert RUNS == ["multiply(10, 4)"]
    assert replays(path, "f")
    shown = CliRunner().invoke(cli, ["show", path, "f"])
    assert "fork of orig at step 7 (turn 1, round 1): result of a_add replaced" in shown.output
    listed = CliRunner().invoke(cli, ["sessions", path])
    assert "fork of orig" in listed.output


def test_fork_without_its_tools_names_the_missing_ones(server: ScriptedServer, path: str) -> None:
    result = invoke(server, "fork", path, "orig", "--at-round", "1", "--into", "f")
    assert result.exit_code == 2
    assert "add, multiply, publish" in result.output


@pytest.mark.parametrize(
    ("mode", "code", "answer"),
    [
        ("recorded", 0, "could not compute: no recording has a call of multiply"),
        ("live", 0, "B says 20."),
        ("strict", 1, "no recording has a call of multiply"),
    ],
)
def test_rerun_in_each_tool_mode(
    server: ScriptedServer, path: str, mode: str, code: int, answer: str
) -> None:
    tools = ["--tools", "whatif_tools:TOOLS"] if mode == "live" else []
    result = invoke(
        server, "rerun", path, "orig", "--model", "arith-b", "--tools", mode, *tools, "--into", "b"
    )
    assert result.exit_code == code, result.output
    assert answer in " ".join(result.output.split())
    assert (["multiply(4, 5)"] if mode == "live" else []) == RUNS
    assert replays(path, "b")
    if mode != "strict":
        assert "1 call(s) served from the recording, 1 unmatched" in result.output
        shown = CliRunner().invoke(cli, ["show", path, "b"])
        assert f"rerun of orig: model arith-b, tools {mode}" in shown.output


def test_diff_shows_where_a_rerun_parts_and_how_as_text_or_json(
    server: ScriptedServer, path: str
) -> None:
    assert invoke(server, "rerun", path, "orig", "--model", "arith-b", "--into", "b").exit_code == 0
    text = CliRunner().invoke(cli, ["diff", path, "orig", "b"])
    assert text.exit_code == 0
    assert text.output.startswith("sessions orig and b part at step 1, turn 1\n(- orig, + b)\n")
    assert "    -The answer is 20.\n" in text.output
    data = json.loads(CliRunner().invoke(cli, ["diff", path, "orig", "b", "--json"]).output)
    assert data["parted_at"] == 1 and data["turns"][0]["calls"][0]["name"] == "multiply"
