"""toolreel.open_agent runs on toolreel's core and Runner: its sessions journal, replay and verify.

open_agent's loop rules are core policies (tests/core/test_policies.py); these
tests check that the compat Client uses them, and that what it does is in the
journal: a session kept in SQLite replays step for step with `toolreel.shell.replay`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from oa_stub import StubOpenAI, call_chunks, options, text_chunks, use

from toolreel.adapters import JournalUnavailable, MemoryJournal, SQLiteJournal
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import (
    AnnouncePolicy,
    BlockedCallPolicy,
    EmptyPromptPolicy,
    ErrorFormat,
    MaxIterationsPolicy,
)
from toolreel.open_agent import HOOK_PRE_TOOL_USE, Client, HookDecision, ModelError, tool
from toolreel.shell import Divergence, replay, verify


@tool("add", "Add two numbers", {"a": int, "b": int})
async def add(args: dict[str, Any]) -> dict[str, Any]:
    return {"result": args["a"] + args["b"]}


ADD = ("c1", "add", '{"a": 1, "b": 2}')


async def read(client: Client) -> list[Any]:
    """Every block `receive_messages()` yields now."""
    return [block async for block in client.receive_messages()]


def test_the_compat_client_runs_open_agents_policies_in_the_core() -> None:
    auto = Client(options(tools=[add], auto_execute_tools=True, max_tool_iterations=4)).config
    assert (auto.max_iterations, auto.on_max_iterations) == (4, MaxIterationsPolicy.ONE_MORE_CALL)
    assert auto.on_tool_blocked is BlockedCallPolicy.END_TURN
    assert auto.announce is AnnouncePolicy.AFTER_HOOKS
    assert auto.error_format is ErrorFormat.JSON
    assert auto.retry.max_retries == 0
    manual = Client(options(tools=[add])).config
    assert (manual.auto_execute, manual.max_iterations) == (False, 1)
    assert manual.empty_prompt is EmptyPromptPolicy.CONTINUE


def test_an_auto_mode_session_in_sqlite_replays(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use(monkeypatch, StubOpenAI(call_chunks(ADD), text_chunks("1 + 2 = 3")))
    path = tmp_path / "oa.db"

    async def main() -> None:
        async with Client(options(tools=[add], auto_execute_tools=True), journal=path) as c:
            assert c.session_id
            await c.query("Add 1 and 2")
            await read(c)

    anyio.run(main)
    journal = SQLiteJournal(path)
    session_id = journal.sessions()[0]
    session = verify(journal, session_id)
    assert [m.role for m in session.history] == ["user", "assistant"]
    assert session.history[1].content == "1 + 2 = 3"
    assert session.history[1].tool_rounds[0].results[0].content == '{"result": 3}'


def test_a_manual_session_with_a_continuation_and_an_edited_history_replays(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use(
        monkeypatch,
        StubOpenAI(call_chunks(ADD), text_chunks("3"), text_chunks("Paris"), text_chunks("Yes")),
    )
    journal = SQLiteJournal(tmp_path / "oa.db")
    client = Client(options(tools=[add]), journal=journal, session_id="s1")

    async def main() -> None:
        await client.query("Add 1 and 2")
        [block] = await read(client)
        await client.add_tool_result(block.id, {"result": 3})
        await client.query("")
        await read(client)
        await client.query("Capital of France?")
        await read(client)
        client.message_history = client.history[-2:]  # keep the last exchange only
        await client.query("Sure?")
        await read(client)
        await client.close()

    anyio.run(main)
    session = replay(journal, "s1")
    assert not isinstance(session, Divergence), session
    assert [m.content for m in session.history] == ["Capital of France?", "Paris", "Sure?", "Yes"]


def test_a_blocked_call_and_a_failed_call_are_journaled_as_the_core_decided(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use(monkeypatch, StubOpenAI(call_chunks(ADD), RuntimeError("boom")))
    journal = SQLiteJournal(tmp_path / "oa.db")

    def gate(event: Any) -> HookDecision:
        return HookDecision(continue_=False, reason="no adding")

    opts = options(tools=[add], auto_execute_tools=True, hooks={HOOK_PRE_TOOL_USE: [gate]})
    client = Client(opts, journal=journal, session_id="s2")

    async def main() -> None:
        await client.query("Add 1 and 2")
        await read(client)
        assert client.last_finish is not None
        assert client.last_finish.reason is FinishReason.BLOCKED
        with pytest.raises(ModelError, match="boom"):
            await client.query("Again")
        await client.close()

    anyio.run(main)
    session = verify(journal, "s2")
    # The failed prompt was taken back (HistoryReplaced), so only the blocked turn is left.
    assert [m.role for m in session.history] == ["user", "assistant"]
    assert "no adding" in session.history[1].tool_rounds[0].results[0].content


class GivesUp(MemoryJournal):
    """A journal that stops working after its first save."""

    saves = 0

    def append(self, session_id: str, steps: Any) -> None:
        self.saves += 1
        if self.saves > 1:
            raise JournalUnavailable("the disk is full")
        super().append(session_id, steps)


def test_a_journal_that_gives_up_mid_turn_is_raised_to_the_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use(monkeypatch, StubOpenAI(call_chunks(ADD), text_chunks("3")))
    client = Client(options(tools=[add], auto_execute_tools=True), journal=GivesUp())

    async def main() -> None:
        await client.query("Add 1 and 2")
        await read(client)

    with pytest.raises(JournalUnavailable, match="disk is full"):
        anyio.run(main)
