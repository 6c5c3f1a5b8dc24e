"""Agent runs journaled: every step of `execute_agent(..., journal=...)` on disk, in order,
under the agent's config, against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from click.testing import CliRunner

from toolreel.adapters import AgentOutput, AgentSession, JSONLJournal, MemoryJournal, SQLiteJournal
from toolreel.cli import cli
from toolreel.core import (
    CallModel,
    Finish,
    LoopConfig,
    PromptSubmitted,
    RunTool,
    ToolFinished,
    Validate,
    ValidationFinished,
)
from toolreel.core.outcomes import Produced
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    Divergence,
    OutputTool,
    execute_agent,
    export_session,
    import_session,
    replay,
    tool,
    verify,
)
from toolreel.shell.errors import ReplayDiverged, SessionError
from toolreel.shell.scripted import Reply, ScriptedServer, tool_calls


@attrs.frozen
class Invoice:
    number: str
    total: float


GOOD = {"number": "INV-1", "total": 40}
WRONG = {"number": "INV-1", "total": -1}


@tool
def currency_rate(currency: str) -> float:
    """Euros per unit of `currency`."""
    return {"USD": 0.92}[currency]


def positive(invoice: Invoice) -> list[str]:
    return [] if invoice.total > 0 else ["total must be positive"]


def agent(**overrides: Any) -> AgentDefinition[str, Invoice]:
    overrides.setdefault("output", OutputTool.of(Invoice, name="record_invoice"))
    return AgentDefinition(
        build_prompt=lambda source: f"Extract the invoice from: {source}",
        system_prompt="You extract invoices.",
        helpers=[currency_rate],
        validators=[positive],
        **overrides,
    )


SCRIPT = [
    tool_calls(("c1", "currency_rate", {"currency": "USD"})),
    tool_calls(("c2", "record_invoice", WRONG)),
    tool_calls(("c3", "record_invoice", GOOD)),
]


def run(definition: AgentDefinition[str, Invoice], script: list[Reply], **kwargs: Any) -> Any:
    """The agent's result against the script."""
    with ScriptedServer(script) as server:
        options = AgentOptions(model="test", base_url=server.url, api_key="sk-test")
        options = attrs.evolve(options, **kwargs.pop("options", {}))
        return anyio.run(lambda: execute_agent(definition, "INV-1 40", options, **kwargs))


def kinds(effects: tuple[dict[str, Any], ...]) -> list[str]:
    return [effect["type"] for effect in effects]


@pytest.mark.parametrize("name", ["agent.db", "agent.jsonl"])
def test_every_step_is_journaled_in_order_with_the_agent_config(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    result = run(agent(), SCRIPT, journal=path, session_id="invoice-1")
    assert isinstance(result, AgentSuccess)
    assert result.metadata.session_id == "invoice-1"
    journal = SQLiteJournal(path) if name.endswith(".db") else JSONLJournal(path)
    try:
        assert journal.sessions() == ["invoice-1"]
        config = journal.config("invoice-1")
        assert config.structured
        assert config.system_prompt == "You extract invoices."
        entries = list(journal.entries("invoice-1"))
    finally:
        journal.close()
    assert [entry.seq for entry in entries] == list(range(1, len(entries) + 1))
    first, last = entries[0], entries[-1]
    assert first.event == PromptSubmitted(text="Extract the invoice from: INV-1 40")
    assert CallModel.__name__ in kinds(first.effects)
    tool_steps = [e for e in entries if isinstance(e.event, ToolFinished)]
    assert [e.event.call_id for e in tool_steps] == ["c1"]
    assert any(RunTool.__name__ in kinds(e.effects) for e in entries)
    validations = [e.event for e in entries if isinstance(e.event, ValidationFinished)]
    assert validations == [
        ValidationFinished(attempt=1, problems=("total must be positive",)),
        ValidationFinished(attempt=2),
    ]
    assert sum(Validate.__name__ in kinds(e.effects) for e in entries) == 2
    assert isinstance(last.event, ValidationFinished)
    finish = last.effects[-1]
    assert finish["type"] == Finish.__name__
    assert finish["outcome"]["type"] == Produced.__name__
    assert (finish["attempts"]["number"], finish["iterations"]) == (2, 3)


def test_options_journal_and_session_id_are_honoured(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    result = run(agent(), SCRIPT, options={"journal": path, "session_id": "from-options"})
    assert result.metadata.session_id == "from-options"
    journal = JSONLJournal(path)
    try:
        assert journal.sessions() == ["from-options"]
    finally:
        journal.close()


def test_a_helper_call_is_on_disk_before_it_runs() -> None:
    journal = MemoryJournal()
    seen: list[list[str]] = []

    @tool(name="currency_rate")
    def looking(currency: str) -> float:
        """Euros per unit of `currency`, noting the calls the journal held when it ran."""
        seen.append(
            [
                effect["call"]["id"]
                for entry in journal.entries("s")
                for effect in entry.effects
                if effect["type"] == RunTool.__name__
            ]
        )
        return 0.92

    definition = AgentDefinition(
        build_prompt=lambda source: source,
        output=OutputTool.of(Invoice, name="record_invoice"),
        helpers=[looking],
    )
    result = run(definition, SCRIPT, journal=journal, session_id="s")
    assert isinstance(result, AgentSuccess)
    assert seen == [["c1"]]


def test_a_session_id_already_in_the_journal_is_refused() -> None:
    journal = MemoryJournal()
    run(agent(), SCRIPT, journal=journal, session_id="s")
    with pytest.raises(SessionError, match="'s'"):
        run(agent(), SCRIPT, journal=journal, session_id="s")


def test_without_a_journal_nothing_is_kept() -> None:
    result = run(agent(), SCRIPT)
    assert isinstance(result, AgentSuccess)
    assert result.metadata.session_id is None


# --- replay and verify -----------------------------------------------------------------


def journaled(path: Path | None = None) -> tuple[Any, Any]:
    """A journal holding one successful agent run "s" (in memory, or at `path`)."""
    journal: Any = MemoryJournal() if path is None else SQLiteJournal(path)
    result = run(agent(), SCRIPT, journal=journal, session_id="s")
    return journal, result


def test_an_agent_run_replays_to_its_outcome() -> None:
    journal, result = journaled()
    replayed = replay(journal, "s")
    assert isinstance(replayed, AgentSession)
    assert replayed.finish is not None
    assert replayed.outcome == AgentOutput(output=json.dumps(GOOD))
    assert replayed.finish is not None and replayed.finish.outcome == Produced(
        output=json.dumps(GOOD)
    )
    assert (replayed.attempts, replayed.iterations) == (2, 3)
    assert replayed.history == result.metadata.history
    assert replayed.events == len(list(journal.entries("s")))
    assert verify(journal, "s") == replayed


def test_a_changed_system_prompt_diverges_at_the_first_step() -> None:
    journal, _ = journaled()
    changed = attrs.evolve(journal.config("s"), system_prompt="You extract receipts.")
    divergence = replay(journal, "s", config=changed)
    assert isinstance(divergence, Divergence)
    assert divergence.seq == 1
    assert isinstance(divergence.event, PromptSubmitted)
    with pytest.raises(ReplayDiverged, match="diverges at step 1"):
        verify(journal, "s", config=changed)


def test_a_chat_config_for_an_agent_run_is_refused() -> None:
    journal, _ = journaled()
    with pytest.raises(SessionError, match="agent run"):
        replay(journal, "s", config=LoopConfig(model="test"))


def test_the_replay_command_checks_an_agent_run(tmp_path: Path) -> None:
    journal, _ = journaled(tmp_path / "agent.db")
    steps = len(list(journal.entries("s")))
    journal.close()
    result = CliRunner().invoke(cli, ["replay", str(tmp_path / "agent.db"), "s"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"OK s · agent run · {steps} events · output"


def test_an_exported_agent_run_imports_and_replays_the_same(tmp_path: Path) -> None:
    journal, _ = journaled()
    original = verify(journal, "s")
    export_session(journal, "s", tmp_path / "s.jsonl")
    target = SQLiteJournal(tmp_path / "copy.db")
    try:
        assert import_session(tmp_path / "s.jsonl", target) == "s"
        assert verify(target, "s") == original
    finally:
        target.close()


def test_show_prints_an_agent_run_attempt_by_attempt(tmp_path: Path) -> None:
    journal, _ = journaled(tmp_path / "agent.db")
    journal.close()
    result = CliRunner().invoke(cli, ["show", str(tmp_path / "agent.db"), "s"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith(
        "# Agent run\n\nmodel: test\nsystem: You extract invoices.\n"
        "output: record_invoice\nhelpers: currency_rate\n\n"
        "## Attempt 1\n\n**User:** Extract the invoice from: INV-1 40\n\n### Round 1\n"
    )
    attempt_1, attempt_2 = text.split("## Attempt 2")
    assert "→ currency_rate" in attempt_1 and "0.92" in attempt_1
    assert "Validation failed:\n- total must be positive\n" in attempt_1
    assert "Validation failed" not in attempt_2
    assert '## Output\n\n```json\n{\n  "number": "INV-1",\n  "total": 40\n}\n```\n' in attempt_2
    assert "Total: 2 attempts · 3 iterations · " in attempt_2


def test_an_aborted_run_is_journaled_to_its_end_and_replays() -> None:
    journal = MemoryJournal()
    abort = anyio.Event()
    abort.set()
    result = run(agent(), SCRIPT, journal=journal, session_id="s", abort=abort)
    assert result.error.code == "EXECUTION_CANCELLED"
    replayed = verify(journal, "s")
    assert isinstance(replayed, AgentSession)
    assert replayed.finish is not None
    assert replayed.outcome == result.error
    last = max(entry.seq for entry in journal.entries("s"))
    journal.begin("s", journal.config("s"), from_seq=last)  # SessionBusy if still held
