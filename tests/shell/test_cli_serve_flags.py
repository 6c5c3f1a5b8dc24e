"""`toolreel serve` takes the loop's policies as `run` does: budget, compaction and fallback
flags hold for every chat served; with --temporal the workers' config cannot take them."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from toolreel.cli import _serve as serving
from toolreel.cli import cli
from toolreel.core.compaction import KeepTurns
from toolreel.shell import AgentOptions

CONNECTION = ["--base-url", "http://127.0.0.1:9/v1", "--api-key", "sk-test", "--model", "main"]


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[AgentOptions]:
    """The options `serve` would serve with (nothing listens)."""
    seen: list[AgentOptions] = []

    def serve(options: AgentOptions, *_: Any, **__: Any) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(serving, "serve", serve)
    return seen


def test_serve_falls_back_and_compacts_as_run_does(served: list[AgentOptions]) -> None:
    flags = ["--fallback-model", "backup", "--fallback-on", "503", "--keep-turns", "3"]
    result = CliRunner().invoke(cli, ["serve", *CONNECTION, *flags])
    assert result.exit_code == 0, result.output
    [options] = served
    [backup] = options.fallbacks
    assert (backup.model, backup.base_url) == ("backup", "http://127.0.0.1:9/v1")
    assert list(options.fallback_on) == [503]
    assert options.compaction == KeepTurns(turns=3)


@pytest.mark.parametrize("command", [["run", "hi"], ["serve"]])
def test_fallback_flags_are_refused_on_temporal(command: list[str]) -> None:
    flags = ["--temporal", "127.0.0.1:7233", "--fallback-model", "backup"]
    result = CliRunner().invoke(cli, [*command, *CONNECTION, *flags])
    assert result.exit_code == 2
    assert "not supported with --temporal" in result.output
