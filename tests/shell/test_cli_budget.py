"""`toolreel run` with a budget: the flags, the refused call, the one error line, bad flags."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from toolreel.cli import cli
from toolreel.shell.scripted import ScriptedServer, calculator

CHAINED = "What's 7 times 8, then add 5?"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(calculator) as running:
        yield running


def run(server: ScriptedServer, *flags: str) -> Result:
    args = ["run", CHAINED, "--base-url", server.url, "--model", "scripted"]
    return CliRunner().invoke(cli, [*args, "--tools", "cli_tools:TOOLS", *flags])


def test_a_call_past_max_tool_calls_is_shown_refused_and_the_run_exits_1(server) -> None:
    result = run(server, "--max-tool-calls", "1")
    assert result.exit_code == 1, result.output
    assert "  ← multiply: 56.0" in result.stdout
    assert "  ✗ add: not run: over budget: tool_calls limit 1 per turn, used 2" in result.stdout
    assert result.stderr.splitlines() == ["error: over budget: tool_calls limit 1 per turn, used 2"]


def test_max_model_calls_zero_asks_the_model_nothing(server) -> None:
    before = len(server.requests)
    result = run(server, "--max-model-calls", "0")
    assert result.exit_code == 1
    assert len(server.requests) == before
    assert "over budget: model_calls limit 0 per turn, used 0" in result.stderr


def test_max_cost_is_counted_at_the_given_price(server) -> None:
    result = run(server, "--max-cost", "0.001", "--price", "scripted=100,100")
    assert result.exit_code == 1
    assert "over budget: cost_usd limit 0.001 per turn, used 0.0015" in result.stderr


def test_max_total_tokens_over_the_session(server) -> None:
    result = run(server, "--max-total-tokens", "20", "--budget-scope", "session")
    assert result.exit_code == 1
    assert "over budget: total_tokens limit 20 per session, used 30" in result.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--max-cost", "1"], "--max-cost"),
        (["--max-cost", "1", "--price", "other=1,2"], "a Price for the model"),
        (["--price", "scripted=1"], "MODEL=IN,OUT"),
        (["--price", "scripted=a,b"], "MODEL=IN,OUT"),
        (["--max-tool-calls", "-1"], "--max-tool-calls"),
    ],
)
def test_bad_budget_flags_are_usage_errors(server, flags, said) -> None:
    result = run(server, *flags)
    assert result.exit_code == 2, result.output
    assert said in result.output


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--max-tool-calls", "1"], "budget flags are not supported with --temporal"),
        (["--image", "pic.png"], "not supported with --temporal"),
    ],
)
def test_run_on_temporal_refuses_what_its_worker_cannot_take_before_connecting(
    flags: list[str], says: str
) -> None:
    # (port 9 on 127.0.0.1: nothing listens; the refusal comes before any connection)
    result = CliRunner().invoke(cli, ["run", "hi", "--temporal", "127.0.0.1:9", *flags])
    assert result.exit_code == 2, result.output
    assert says in result.stderr
