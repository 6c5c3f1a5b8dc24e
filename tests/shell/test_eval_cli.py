"""`toolreel eval`, through click's CliRunner, over 20 recorded sessions on SQLite.

The sessions were recorded over HTTP on 127.0.0.1 with the scripted "arith-a"; the
eval asks "arith-c", which answers the odd-numbered ones otherwise
(tests/shell/eval_models.py), and a user's check from that module.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from eval_models import numbered, record_sessions
from rich.console import Console
from whatif_tools import RUNS

from toolreel.adapters import SQLiteJournal, load_session
from toolreel.cli import cli
from toolreel.cli._eval import _Progress, expectation
from toolreel.testing import ScriptedServer

SESSIONS = 20


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(numbered) as running:
        yield running


@pytest.fixture
def path(server: ScriptedServer, tmp_path: Path) -> Path:
    where = tmp_path / "sessions.db"
    store = SQLiteJournal(where)
    try:
        record_sessions(server, store, SESSIONS)
    finally:
        store.close()
    RUNS.clear()
    return where


def invoke(server: ScriptedServer, path: Path, *args: str) -> Result:
    connection = ["--base-url", server.url, "--api-key", "none", "--model", "arith-c"]
    return CliRunner().invoke(cli, ["eval", str(path), *connection, *args])


def flat(text: str) -> str:
    return " ".join(text.split())


def test_an_eval_prints_a_table_writes_the_report_and_exits_under_min_pass(
    server: ScriptedServer, path: Path, tmp_path: Path
) -> None:
    report = tmp_path / "eval.md"
    checks = ["--expect", "same-outcome", "--checks", "eval_models:answered_a_number"]
    result = invoke(server, path, *checks, "--report", str(report), "--min-pass", "0.9")

    assert result.exit_code == 1, result.output
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[0].split() == [
        "session", "same", "outcome", "answered_a_number", "tokens", "cost", "tool", "calls",
        "seconds", "result",
    ]  # fmt: skip
    s01 = next(line for line in lines if line.startswith("s01 "))
    assert s01.split()[:3] == ["s01", "pass", "FAIL"] and s01.endswith("FAIL")
    assert "2 → 2 (+0)" in s01 and "unpriced" in s01
    assert next(line for line in lines if line.startswith("s02 ")).endswith("pass")
    assert "s01: answered_a_number" in result.output
    assert lines[-1] == (
        "10/20 sessions passed (50%); candidates eval-arith-c/* (model arith-c, tools recorded)"
    )
    assert f"report: {report}" in result.stderr
    assert "evaluating" not in result.stderr  # no progress off a terminal
    written = report.read_text()
    assert written.startswith("# Evaluation eval-arith-c/\n")
    assert "| s01 | pass | FAIL |" in written and "| s02 | pass | pass |" in written
    assert RUNS == []
    store = SQLiteJournal(path)
    try:
        assert load_session(store, "eval-arith-c/s20").origin is not None
    finally:
        store.close()


def test_an_eval_run_again_asks_the_model_nothing(server: ScriptedServer, path: Path) -> None:
    assert invoke(server, path, "s02", "s04", "--concurrency", "2").exit_code == 0
    asked = len(server.requests)
    again = invoke(server, path, "s02", "s04", "--expect", "contains:35")
    assert len(server.requests) == asked
    assert again.exit_code == 1  # s04's answer is 49
    assert [line.split()[-2:] for line in again.stdout.splitlines()[1:3]] == [
        ["resumed", "pass"],
        ["resumed", "FAIL"],
    ]


def test_min_pass_decides_the_exit_code(server: ScriptedServer, path: Path) -> None:
    same_answer = ["--expect", "same-answer", "--into-prefix", "x/"]
    assert invoke(server, path, *same_answer, "--min-pass", "0.5").exit_code == 0
    assert invoke(server, path, *same_answer, "--min-pass", "0.55").exit_code == 1


def test_an_html_report_and_a_crashing_check_and_an_unknown_session(
    server: ScriptedServer, path: Path, tmp_path: Path
) -> None:
    report = tmp_path / "eval.html"
    result = invoke(
        server, path, "s02", "nope", "--checks", "eval_models:crashes", "--report", str(report)
    )
    assert result.exit_code == 1
    assert "s02: crashes: the check raised RuntimeError: the judge is down" in flat(result.output)
    assert "nope: no session 'nope' in the journal" in flat(result.output)
    page = report.read_text()
    assert page.startswith("<!doctype html>")
    assert "<td>nope</td>" in page and '<td class="ERROR">ERROR</td>' in page
    assert "no session &#x27;nope&#x27; in the journal" in page


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--expect", "similar"], "'similar' is not a check"),
        (["--expect", "regex:("], "a regular expression"),
        (["--expect", "tokens:lots"], "'tokens:lots'"),
        (["--checks", "eval_models:nothing"], "has no attribute 'nothing'"),
        (["--report", "eval.pdf"], "a .md or .html file"),
    ],
)
def test_bad_flags_are_usage_errors(
    server: ScriptedServer, path: Path, flags: list[str], message: str
) -> None:
    result = invoke(server, path, *flags)
    assert result.exit_code == 2
    assert message in flat(result.output)


def test_progress_shows_on_a_terminal_only() -> None:
    shown, quiet = io.StringIO(), io.StringIO()
    for console in (Console(file=shown, force_terminal=True), Console(file=quiet)):
        progress = _Progress(console, 2)
        progress.done(None)  # type: ignore[arg-type]
        progress.done(None)  # type: ignore[arg-type]
        progress.stop()
    assert "evaluating: 2/2 done" in shown.getvalue()
    assert quiet.getvalue() == ""


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("same-outcome", "same outcome"),
        ("same-tools", "same tools"),
        ("same-tool-calls", "same tool calls"),
        ("same-answer", "same answer"),
        ("contains:a|b", "contains 'a|b'"),
        ("equals:42", "equals '42'"),
        ("regex:^\\d+$", "matches '^\\\\d+$'"),
        ("tokens:+500", "tokens ≤ +500"),
        ("tokens:+20%", "tokens ≤ 1.2x"),
        ("tool-calls:+0", "tool calls ≤ +0"),
        ("cost:+0.01", "cost ≤ +$0.010000"),
        ("cost:-10%", "cost ≤ 0.9x"),
    ],
)
def test_each_expect_spec_is_its_built_in_check(spec: str, name: str) -> None:
    assert expectation(spec).name == name  # type: ignore[attr-defined]


def test_a_missing_journal_or_key_is_said_once_before_anything_runs(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = CliRunner().invoke(cli, ["eval", str(tmp_path / "none.db"), "--model", "m"])
    assert missing.exit_code == 1
    assert "no journal at" in missing.output and not (tmp_path / "none.db").exists()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = CliRunner().invoke(cli, ["eval", str(path), "--model", "gpt-4o"])
    assert keyless.exit_code == 2
    assert "no API key for openai" in keyless.output
    store = SQLiteJournal(path)
    try:
        assert len(store.sessions()) == SESSIONS  # no candidate was begun
    finally:
        store.close()
