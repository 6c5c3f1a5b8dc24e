"""`toolreel run --keep-turns N` / `--context-tokens N`: the session's requests carry only the
latest turns, the policy is journaled, and `toolreel show` marks where it compacted."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli
from toolreel.core import LoopConfig
from toolreel.core.compaction import KeepTokens, KeepTurns
from toolreel.shell.scripted import ScriptedServer, calculator


def run(server: ScriptedServer, journal: Path, prompt: str, *flags: str) -> Result:
    args = ["run", prompt, "--base-url", server.url, "--model", "scripted", "--journal"]
    args += [str(journal), "--session", "calc", "--tools", "cli_tools:TOOLS", *flags]
    return CliRunner().invoke(cli, [*args])


def user_prompts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_keep_turns_sends_the_last_turns_and_show_marks_the_compaction(tmp_path: Path) -> None:
    journal = tmp_path / "s.db"
    with ScriptedServer(calculator) as server:
        for prompt in ("What's 2 plus 3?", "What's 4 plus 5?", "What's 6 plus 7?"):
            result = run(server, journal, prompt, "--keep-turns", "2")
            assert result.exit_code == 0, result.output
        last = server.requests[-1]
    assert user_prompts(last) == ["What's 4 plus 5?", "What's 6 plus 7?"]
    store = SQLiteJournal(journal)
    try:
        config = store.config("calc")
    finally:
        store.close()
    assert isinstance(config, LoopConfig)
    assert config.compaction == KeepTurns(turns=2)
    shown = CliRunner().invoke(cli, ["show", str(journal), "calc"])
    assert shown.exit_code == 0, shown.output
    assert "compaction: the last 2 turns\n" in shown.stdout
    assert "✂ context compacted: messages 1 to 2 of the history left out" in shown.stdout


def test_context_tokens_is_journaled_as_a_token_budget(tmp_path: Path) -> None:
    journal = tmp_path / "s.db"
    with ScriptedServer(calculator) as server:
        result = run(server, journal, "What's 2 plus 3?", "--context-tokens", "3000")
        assert result.exit_code == 0, result.output
    store = SQLiteJournal(journal)
    try:
        assert store.config("calc").compaction == KeepTokens(tokens=3000)  # type: ignore[union-attr]
    finally:
        store.close()


def test_both_flags_at_once_are_refused(tmp_path: Path) -> None:
    with ScriptedServer(calculator) as server:
        flags = ("--keep-turns", "2", "--context-tokens", "9")
        result = run(server, tmp_path / "s.db", "hi", *flags)
        assert server.requests == []
    assert result.exit_code == 2
    assert "--keep-turns or --context-tokens, not both" in result.stderr
