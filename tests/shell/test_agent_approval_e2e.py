"""Human approval in agent runs through the public API, end to end against a scripted
OpenAI-compatible server on 127.0.0.1: a held helper call pauses the run (journaled), the
process exits, and `resume_agent` in another decides it and finishes the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from agent_approval_defs import definition, options
from click.testing import CliRunner

from toolreel.adapters import SQLiteJournal
from toolreel.cli import cli
from toolreel.core import Phase, ToolCall
from toolreel.core.notices import ApprovalRequested
from toolreel.shell import (
    AgentSuccess,
    agent_approvals,
    execute_agent,
    load_agent_session,
    replay,
    resume_agent,
)
from toolreel.shell.errors import ApprovalPending, UnknownApproval
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HookDecision, PreToolUseEvent
from toolreel.shell.scripted import ScriptedServer, tool_calls

WORKER = Path(__file__).with_name("agent_approval_worker.py")
GOOD = {"number": "INV-1", "total": 40}
SCRIPT = [
    tool_calls(("c1", "currency_rate", {"currency": "USD"}), ("d1", "delete_row", {"row": 3})),
    tool_calls(("o1", "record_invoice", GOOD)),
]


def tool_messages(request: dict) -> list[str]:
    """The tool results a request sends, in order."""
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def effects_of(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def pause_in_another_process(server: ScriptedServer, journal: Path, effects: Path) -> dict:
    """Run the agent in a worker process until it pauses; what `ApprovalPending` named."""
    done = subprocess.run(
        [sys.executable, str(WORKER), server.url, str(journal), str(effects)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=WORKER.parent,
    )
    return json.loads(done.stdout)


def test_a_run_paused_in_one_process_is_approved_and_finished_in_another(tmp_path: Path) -> None:
    journal, effects = tmp_path / "agent.db", tmp_path / "effects.txt"
    with ScriptedServer(SCRIPT) as server:
        assert pause_in_another_process(server, journal, effects) == {
            "session": "inv",
            "held": ["d1"],
        }
        assert effects_of(effects) == []  # nothing ran unapproved
        held = ToolCall(id="d1", name="delete_row", arguments='{"row": 3}')
        assert agent_approvals("inv", journal) == (ApprovalRequested(call=held),)
        kept = SQLiteJournal(journal)
        try:
            paused = load_agent_session(kept, "inv")
        finally:
            kept.close()
        assert (paused.state.phase, paused.finish) == (Phase.AWAITING_APPROVAL, None)
        assert paused.approvals == (ApprovalRequested(call=held),)
        listed = CliRunner().invoke(cli, ["sessions", str(journal)])
        assert "awaiting approval (1)" in listed.stdout
        result = anyio.run(
            lambda: resume_agent(
                "inv", definition(str(effects)), options(server.url, journal), approve=["d1"]
            )
        )
        assert isinstance(result, AgentSuccess)
        assert result.output.total == 40
        assert effects_of(effects) == ["3"]
        assert tool_messages(server.requests[1]) == ["0.92", "deleted row 3"]
    assert agent_approvals("inv", journal) == ()
    kept = SQLiteJournal(journal)
    try:  # the decided run replays to its output: the pause and the decision are journaled
        assert replay(kept, "inv").finish.outcome.output == '{"number": "INV-1", "total": 40}'
    finally:
        kept.close()


def test_a_denied_call_never_runs_and_the_model_reads_the_reason(tmp_path: Path) -> None:
    journal, effects = tmp_path / "agent.jsonl", tmp_path / "effects.txt"
    agent, opts = definition(str(effects)), None
    with ScriptedServer(SCRIPT) as server:
        opts = options(server.url, journal)
        with pytest.raises(ApprovalPending, match="resume_agent"):
            anyio.run(lambda: execute_agent(agent, "INV-1", opts))
        with pytest.raises(ApprovalPending):  # the same session again: still paused
            anyio.run(lambda: execute_agent(agent, "INV-1", opts))
        result = anyio.run(lambda: resume_agent("inv", agent, opts, deny={"d1": "keep row 3"}))
        assert isinstance(result, AgentSuccess)
        assert tool_messages(server.requests[1]) == ["0.92", "keep row 3"]
    assert effects_of(effects) == []


def test_a_decision_for_an_unknown_call_is_refused_and_nothing_is_journaled(
    tmp_path: Path,
) -> None:
    journal, effects = tmp_path / "agent.db", tmp_path / "effects.txt"
    agent = definition(str(effects))
    with ScriptedServer(SCRIPT) as server:
        opts = options(server.url, journal)
        with pytest.raises(ApprovalPending):
            anyio.run(lambda: execute_agent(agent, "INV-1", opts))
        with pytest.raises(UnknownApproval, match=r"'nope'.*\['d1'\]"):
            anyio.run(lambda: resume_agent("inv", agent, opts, approve=["nope"]))
        result = anyio.run(lambda: resume_agent("inv", agent, opts, approve=["d1"]))
        assert isinstance(result, AgentSuccess)
    assert effects_of(effects) == ["3"]


def test_a_hooks_ask_holds_the_call_and_an_approved_call_is_not_asked_again(
    tmp_path: Path,
) -> None:
    journal, effects = tmp_path / "agent.db", tmp_path / "effects.txt"
    asked: list[str] = []

    def gate(event: PreToolUseEvent) -> HookDecision | None:
        asked.append(event.tool_use_id)
        return (
            HookDecision(ask=True, reason="costs money")
            if event.tool_name == "currency_rate"
            else None
        )

    script = [tool_calls(("c1", "currency_rate", {"currency": "USD"})), SCRIPT[1]]
    agent = definition(str(effects))
    with ScriptedServer(script) as server:
        opts = options(server.url, journal, hooks={HOOK_PRE_TOOL_USE: [gate]})
        with pytest.raises(ApprovalPending) as pending:
            anyio.run(lambda: execute_agent(agent, "INV-1", opts))
        assert [(r.call.id, r.reason) for r in pending.value.requests] == [("c1", "costs money")]
        result = anyio.run(lambda: resume_agent("inv", agent, opts, approve=["c1"]))
        assert isinstance(result, AgentSuccess)
        assert tool_messages(server.requests[1]) == ["0.92"]
    assert asked == ["c1"]


def test_every_decision_of_one_resume_is_taken_even_when_the_first_leaves_calls_held(
    tmp_path: Path,
) -> None:
    # bfd8293 stopped after the first decision that left a call held, whatever else it was given
    journal, effects = tmp_path / "agent.db", tmp_path / "effects.txt"
    script = [
        tool_calls(("d1", "delete_row", {"row": 3}), ("d2", "delete_row", {"row": 4})),
        SCRIPT[1],
    ]
    agent = definition(str(effects))
    with ScriptedServer(script) as server:
        opts = options(server.url, journal)
        with pytest.raises(ApprovalPending):
            anyio.run(lambda: execute_agent(agent, "INV-1", opts))
        result = anyio.run(
            lambda: resume_agent("inv", agent, opts, approve=["d1"], deny={"d2": "keep row 4"})
        )
        assert isinstance(result, AgentSuccess)
        assert tool_messages(server.requests[1]) == ["deleted row 3", "keep row 4"]
    assert effects_of(effects) == ["3"]
