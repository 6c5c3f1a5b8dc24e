"""Fallback models through the public Client: two scripted servers on 127.0.0.1, one answering
503; the journal records which model answered, and replays (docs/guides/fallback.md)."""

from __future__ import annotations

import anyio
import pytest
from click.testing import CliRunner

from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli
from toolreel.core import ConfigError, Finish
from toolreel.core.notices import ModelChanged, TextStreamed
from toolreel.core.outcomes import FailureCode, FinishReason
from toolreel.core.policies import FallbackPolicy, RetryPolicy
from toolreel.shell import AgentOptions, Client, Connection, Divergence, Recording, replay
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, text

NO_WAIT = RetryPolicy(max_retries=1, base_delay=0.0, max_delay=0.0)


def down(status: int = 503, message: str = "Service Unavailable") -> ScriptedServer:
    """A server that answers every request with `status`."""
    return ScriptedServer(lambda request: http_error(status, message))


def options(primary: ScriptedServer, *fallbacks: ScriptedServer, **extra: object) -> AgentOptions:
    """Options asking `primary` ("main"), then each of `fallbacks` ("backup-1", ...)."""
    return AgentOptions(
        model="main",
        base_url=primary.url,
        api_key="sk-main",
        retry=NO_WAIT,
        fallbacks=[
            Connection(model=f"backup-{n}", base_url=server.url, api_key=f"sk-{n}")
            for n, server in enumerate(fallbacks, start=1)
        ],
        **extra,  # type: ignore[arg-type]
    )


async def turn(opts: AgentOptions, prompt: str = "hi") -> list[object]:
    """What one turn tells, to its `Finish`."""
    async with Client(opts) as client:
        await client.query(prompt)
        return [item async for item in client.events()]


def test_a_503_server_falls_back_to_the_second_and_the_journal_replays(tmp_path) -> None:
    path = tmp_path / "j.db"
    with down() as primary, ScriptedServer([text("from the backup")]) as backup:
        items = anyio.run(turn, options(primary, backup, journal=str(path)))
        assert len(primary.requests) == 2  # the call and its one retry
        assert [request["model"] for request in backup.requests] == ["backup-1"]
    assert [item for item in items if isinstance(item, ModelChanged)] == [
        ModelChanged(
            model="backup-1",
            index=1,
            previous="main",
            message="HTTP 503: Service Unavailable (type=scripted_error)",
            status=503,
        )
    ]
    finish = items[-1]
    assert isinstance(finish, Finish) and finish.text == "from the backup"
    journal = SQLiteJournal(path)
    [session_id] = journal.sessions()
    calls = [
        effect
        for entry in journal.entries(session_id)
        for effect in entry.effects
        if effect["type"] == "CallModel"
    ]
    # which model answered each call is in the journal, and replay makes the same calls
    assert [(call.get("model", 0), call["request"]["model"]) for call in calls] == [
        (0, "main"),
        (0, "main"),
        (1, "backup-1"),
    ]
    assert not isinstance(replay(journal, session_id), Divergence)
    recording = Recording(journal, session_id)
    journal.close()

    async def rerun() -> list[FinishReason]:
        with down() as offline, down() as offline_backup:  # the recording answers, not these
            return await recording.rerun(options(offline, offline_backup))

    assert anyio.run(rerun) == [FinishReason.COMPLETED]


def test_a_chosen_status_moves_on_without_retrying() -> None:
    with down() as primary, ScriptedServer([text("ok")]) as backup:
        items = anyio.run(turn, options(primary, backup, fallback_on=[503]))
        assert len(primary.requests) == 1
    assert isinstance(items[-1], Finish) and items[-1].text == "ok"


def test_a_400_fails_the_turn_unless_chosen() -> None:
    with down(400, "bad") as primary, ScriptedServer([text("ok"), text("ok")]) as backup:
        items = anyio.run(turn, options(primary, backup))
        assert backup.requests == []
        finish = items[-1]
        assert isinstance(finish, Finish) and finish.error is not None
        assert finish.error.code is FailureCode.MODEL_ERROR
        chosen = anyio.run(turn, options(primary, backup, fallback_on=[400]))
    assert isinstance(chosen[-1], Finish) and chosen[-1].text == "ok"


def test_when_every_model_fails_the_failure_names_each_and_why() -> None:
    with down() as primary, down(502, "Bad Gateway") as backup:
        items = anyio.run(turn, options(primary, backup))
    finish = items[-1]
    assert isinstance(finish, Finish) and finish.error is not None
    assert finish.error.code is FailureCode.RETRIES_EXHAUSTED
    assert finish.error.message == (
        "every model failed: "
        "main: HTTP 503: Service Unavailable (type=scripted_error) (after 1 retries); "
        "backup-1: HTTP 502: Bad Gateway (type=scripted_error) (after 1 retries)"
    )


def test_text_the_failed_call_streamed_is_told_void_by_the_model_change() -> None:
    with down() as primary, ScriptedServer([text("ok")]) as backup:
        items = anyio.run(turn, options(primary, backup))
    changed = next(n for n, item in enumerate(items) if isinstance(item, ModelChanged))
    assert all(not isinstance(item, TextStreamed) for item in items[:changed])


def test_fallback_on_takes_error_statuses_and_context_length_only() -> None:
    with pytest.raises(ConfigError, match="fallback_on"):
        AgentOptions(model="m", base_url="http://127.0.0.1:9", fallback_on=[200])
    with pytest.raises(ConfigError, match="fallbacks"):
        AgentOptions(model="m", base_url="http://127.0.0.1:9", fallbacks=["gpt-4o"])
    AgentOptions(model="m", base_url="http://127.0.0.1:9", fallback_on=[429, "context_length"])


def by_model(request: dict[str, object]) -> Reply:
    """One server for two models: "main" is down, "backup" answers."""
    if request["model"] == "main":
        return http_error(503, "Service Unavailable")
    return text("the backup answers")


def test_the_cli_falls_back_records_it_and_show_says_which_model_answered(tmp_path) -> None:
    path = tmp_path / "j.db"
    with ScriptedServer(by_model) as server:
        common = ["--base-url", server.url, "--api-key", "sk-test", "--journal", str(path)]
        result = CliRunner().invoke(
            cli,
            [
                "run",
                "hi",
                "--model",
                "main",
                *common,
                "--fallback-model",
                "backup",
                "--fallback-on",
                "503",
                "--session",
                "s1",
            ],
        )
    assert result.exit_code == 0, result.output
    assert "the backup answers" in result.stdout
    assert "asking backup" in result.output  # the live view says the model changed
    journal = SQLiteJournal(path)
    config = journal.config("s1")
    journal.close()
    assert config.fallback == FallbackPolicy(models=("backup",), on_status={503})
    shown = CliRunner().invoke(cli, ["show", str(path), "s1"])
    assert shown.exit_code == 0, shown.output
    assert "failed (HTTP 503: Service Unavailable" in shown.stdout
    assert "asking backup" in shown.stdout


def test_the_cli_refuses_a_fallback_status_that_is_no_status() -> None:
    result = CliRunner().invoke(
        cli, ["run", "hi", "--model", "m", "--base-url", "http://127.0.0.1:9", "--fallback-on", "x"]
    )
    assert result.exit_code == 2
    assert "--fallback-on" in result.output


def test_a_request_too_long_moves_on_under_context_length() -> None:
    too_long = "This model's maximum context length is 8192 tokens"
    with down(400, too_long) as primary, ScriptedServer([text("ok"), text("ok")]) as backup:
        kept = anyio.run(turn, options(primary, backup))
        moved = anyio.run(turn, options(primary, backup, fallback_on=["context_length"]))
        assert len(backup.requests) == 1
    assert isinstance(kept[-1], Finish) and kept[-1].error is not None
    assert isinstance(moved[-1], Finish) and moved[-1].text == "ok"
