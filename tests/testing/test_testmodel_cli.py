"""`toolreel run/chat --model test`: TestModel answers, with no key and no server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli

TOOLS = '''
from toolreel.shell import tool

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding a tools module; no provider key set."""
    (tmp_path / "testmodel_cli_tools.py").write_text(TOOLS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TOOLREEL_BASE_URL", raising=False)
    return tmp_path


def test_run_with_the_test_model_calls_each_tool_once_and_journals_it(here: Path) -> None:
    journal = here / "s.db"
    args = ["run", "Add", "--model", "test", "--tools", "testmodel_cli_tools:add"]
    result = CliRunner().invoke(cli, [*args, "--journal", str(journal), "--session", "t"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(answer) == {"add"}
    store = SQLiteJournal(journal)
    try:
        assert store.sessions() == ["t"]
    finally:
        store.close()


def test_chat_with_the_test_model_answers_each_prompt(here: Path) -> None:
    result = CliRunner().invoke(cli, ["chat", "--model", "test"], input="hello\nagain\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("{}") == 2  # no tools: nothing to report, each turn


def test_without_test_a_missing_key_is_still_refused(here: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "Hi"])
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.output
