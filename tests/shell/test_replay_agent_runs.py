"""An agent run journaled with `execute_agent(..., journal=...)` works wherever a chat
session does: rerun offline by `Recording`, rendered by `render_transcript`, stored by the
`transcript_snapshot` extension, replayed and verified, listed by `toolreel sessions`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from click.testing import CliRunner

from toolreel.adapters import (
    AgentOutput,
    AgentSession,
    JSONLJournal,
    render_agent_transcript,
    render_transcript,
)
from toolreel.cli import cli
from toolreel.core import ConfigError
from toolreel.shell import (
    AgentDefinition,
    AgentSuccess,
    Client,
    OutputTool,
    Recording,
    load_agent_session,
    replay,
    tool,
    verify,
)
from toolreel.shell.errors import RequestMismatch
from toolreel.testing import MakeScriptedModel, text, tool_calls

RATES: list[str] = []


@attrs.frozen
class Invoice:
    number: str
    total: float


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of `currency` (noting each call that really ran)."""
    RATES.append(currency)
    return {"USD": 0.92}[currency]


def positive(invoice: Invoice) -> list[str]:
    return [] if invoice.total > 0 else ["total must be positive"]


def agent(**overrides: Any) -> AgentDefinition[str, Invoice]:
    overrides.setdefault("system_prompt", "You extract invoices.")
    return AgentDefinition(
        build_prompt=lambda source: f"Extract the invoice from: {source}",
        output=OutputTool.of(Invoice, name="record_invoice"),
        helpers=[currency_rate],
        validators=[positive],
        **overrides,
    )


SCRIPT = [
    tool_calls(("c1", "currency_rate", {"currency": "USD"})),
    tool_calls(("c2", "record_invoice", {"number": "INV-1", "total": -1})),
    tool_calls(("c3", "record_invoice", {"number": "INV-1", "total": 40})),
]


@pytest.fixture
def recorded(tmp_path: Path, scripted_model: MakeScriptedModel) -> Path:
    """A JSON-lines journal holding one agent run "s": a helper call, a failed attempt, output."""
    from toolreel.shell import execute_agent  # noqa: PLC0415

    model = scripted_model(SCRIPT, http=False)
    path = tmp_path / "agent.jsonl"
    result = anyio.run(
        lambda: execute_agent(
            agent(), "INV-1 40", model.options(), model=model.model, journal=path, session_id="s"
        )
    )
    assert isinstance(result, AgentSuccess)
    RATES.clear()
    return path


def loaded(path: Path) -> AgentSession:
    journal = JSONLJournal(path)
    try:
        return load_agent_session(journal, "s")
    finally:
        journal.close()


def test_a_recorded_agent_run_reruns_offline_to_the_same_output(
    recorded: Path, scripted_model: MakeScriptedModel
) -> None:
    recording = Recording.from_file(recorded)
    options = scripted_model([], http=False).options()
    result = anyio.run(lambda: recording.rerun(options, agent=agent()))
    assert isinstance(result, AgentSuccess)
    assert result.output == Invoice(number="INV-1", total=40)
    assert result.metadata.attempts == 2
    assert RATES == []  # the helper's recorded output answered: it did not run
    assert recording.history == loaded(recorded).history


def test_an_agent_rerun_with_a_changed_prompt_stops_at_the_first_request(
    recorded: Path, scripted_model: MakeScriptedModel
) -> None:
    recording = Recording.from_file(recorded)
    options = scripted_model([], http=False).options()
    changed = agent(system_prompt="You extract receipts.")
    with pytest.raises(RequestMismatch, match="model call 1 differs"):
        anyio.run(lambda: recording.rerun(options, agent=changed))


def test_an_agent_run_is_rerun_only_with_its_definition(
    recorded: Path, scripted_model: MakeScriptedModel
) -> None:
    recording = Recording.from_file(recorded)
    options = scripted_model([], http=False).options()
    with pytest.raises(ConfigError, match="agent"):
        anyio.run(recording.rerun, options)


def test_a_chat_session_is_not_rerun_as_an_agent(
    tmp_path: Path, scripted_model: MakeScriptedModel
) -> None:
    model = scripted_model([text("hi")], http=False)
    options = model.options(journal=str(tmp_path / "chat.jsonl"), session_id="c")

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("hello")
            await client.wait()

    anyio.run(record)
    recording = Recording.from_file(tmp_path / "chat.jsonl")
    with pytest.raises(ConfigError, match="chat session"):
        anyio.run(lambda: recording.rerun(model.options(), agent=agent()))


def test_render_transcript_renders_an_agent_run_as_render_agent_transcript(
    recorded: Path,
) -> None:
    session = loaded(recorded)
    assert render_transcript(session) == render_agent_transcript(session)
    assert render_transcript(session, ids=True).startswith("# Agent run s\n")


def test_an_agent_run_of_one_call_is_counted_in_the_singular(
    tmp_path: Path, scripted_model: MakeScriptedModel
) -> None:
    from toolreel.shell import execute_agent  # noqa: PLC0415

    model = scripted_model(
        [tool_calls(("c1", "record_invoice", {"number": "INV-2", "total": 5}))], http=False
    )
    path = tmp_path / "one.jsonl"
    run = execute_agent(
        agent(), "INV-2 5", model.options(), model=model.model, journal=path, session_id="s"
    )
    assert isinstance(anyio.run(lambda: run), AgentSuccess)
    shown = render_agent_transcript(loaded(path))
    assert "Total: 1 attempt · 1 iteration · " in shown and "iterations" not in shown


def test_an_agent_run_is_snapshot_as_its_transcript(
    recorded: Path, transcript_snapshot: Any
) -> None:
    assert loaded(recorded) == transcript_snapshot


def test_an_agent_run_replays_and_verifies_to_the_session_load_agent_session_gives(
    recorded: Path,
) -> None:
    journal = JSONLJournal(recorded)
    try:
        replayed = replay(journal, "s")
        assert replayed == verify(journal, "s") == load_agent_session(journal, "s")
        assert isinstance(replayed, AgentSession)
        assert replayed.finish is not None
        assert replayed.outcome == AgentOutput(output=json.dumps({"number": "INV-1", "total": 40}))
    finally:
        journal.close()


def test_the_sessions_command_lists_an_agent_run(recorded: Path) -> None:
    steps = loaded(recorded).events
    result = CliRunner().invoke(cli, ["sessions", str(recorded)])
    assert result.exit_code == 0, result.output
    (row,) = [line.split() for line in result.output.splitlines() if line.strip().startswith("s ")]
    assert row[:5] == ["s", "agent", "run", str(steps), "output"]
