"""Human approval through the public API, end to end against a scripted OpenAI-compatible
server on 127.0.0.1: a held call pauses the turn, the pause survives the process, and
`Client.resume(...)` then `approve` / `deny` go on with the turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from toolreel.adapters import SQLiteJournal, load_session
from toolreel.core import AwaitApproval, Finish, Phase, ToolCall
from toolreel.core.notices import ApprovalRequested
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, run, tool
from toolreel.shell.errors import ApprovalPending, TurnInProgress, UnknownApproval, UnknownToolCall
from toolreel.shell.hooks import HOOK_PRE_TOOL_USE, HookDecision, PreToolUseEvent
from toolreel.shell.scripted import ScriptedServer, text, tool_calls

WORKER = Path(__file__).with_name("approval_worker.py")
DELETED: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


@tool
def look(path: str) -> str:
    """Read a file (needs no approval)."""
    return f"contents of {path}"


@pytest.fixture(autouse=True)
def _nothing_deleted() -> None:
    DELETED.clear()


def options(server: ScriptedServer, journal: Path, **extra) -> AgentOptions:
    extra.setdefault("tools", [delete, look])
    extra.setdefault("auto_execute_tools", True)
    return AgentOptions(
        model="test",
        base_url=server.url,
        api_key="sk-test",
        journal=journal,
        session_id="s1",
        **extra,
    )


def tool_messages(request: dict) -> list[dict]:
    """The tool results a request sends."""
    return [m for m in request["messages"] if m["role"] == "tool"]


async def pause(opts: AgentOptions, prompt: str = "Clean up") -> list:
    """Run a turn in a new Client until it pauses; the items its events() gave."""
    async with Client(opts) as client:
        await client.query(prompt)
        items = [item async for item in client.events()]
        assert await client.wait() is None  # no turn finished: it is paused
        assert client.phase is Phase.AWAITING_APPROVAL
    return items


def test_a_call_needing_approval_pauses_and_a_new_client_approves_it(tmp_path: Path) -> None:
    script = [tool_calls(("c1", "delete", {"path": "a.txt"})), text("Deleted a.txt.")]
    with ScriptedServer(script) as server:
        opts = options(server, tmp_path / "j.db")
        items = anyio.run(pause, opts)
        held = ApprovalRequested(
            call=ToolCall(id="c1", name="delete", arguments='{"path": "a.txt"}')
        )
        assert items[-1] == AwaitApproval(requests=(held,))
        assert held in items and DELETED == [] and len(server.requests) == 1

        async def resume() -> tuple:
            async with Client.resume("s1", opts) as client:
                waiting = (client.paused, client.pending_approvals)
                await client.approve("c1")
                return waiting, await client.wait()

        (paused, pending), finish = anyio.run(resume)

    assert paused == AwaitApproval(requests=(held,)) and pending == (held,)
    assert isinstance(finish, Finish) and finish.reason is FinishReason.COMPLETED
    assert finish.text == "Deleted a.txt." and DELETED == ["a.txt"]
    assert tool_messages(server.requests[1]) == [
        {"role": "tool", "tool_call_id": "c1", "content": "deleted a.txt"}
    ]


def test_the_denial_reason_is_what_the_model_reads_next(tmp_path: Path) -> None:
    script = [tool_calls(("c1", "delete", {"path": "a.txt"})), text("Understood.")]
    with ScriptedServer(script) as server:
        opts = options(server, tmp_path / "j.db")
        anyio.run(pause, opts)

        async def deny() -> Finish | None:
            async with Client.resume("s1", opts) as client:
                await client.deny("c1", "keep a.txt, it is the only copy")
                return await client.wait()

        finish = anyio.run(deny)
    assert finish is not None and finish.reason is FinishReason.COMPLETED and DELETED == []
    [result] = tool_messages(server.requests[1])
    assert result["content"] == "keep a.txt, it is the only copy"


def test_a_denial_without_a_reason_tells_the_model_the_user_denied_it(tmp_path: Path) -> None:
    script = [tool_calls(("c1", "delete", {"path": "a.txt"})), text("OK.")]
    with ScriptedServer(script) as server:
        opts = options(server, tmp_path / "j.db")
        anyio.run(pause, opts)

        async def deny() -> None:
            async with Client.resume("s1", opts) as client:
                await client.deny("c1")
                await client.wait()

        anyio.run(deny)
    [result] = tool_messages(server.requests[1])
    assert result["content"] == "The user denied this tool call."


def test_calls_are_decided_one_by_one_and_the_turn_goes_on_after_the_last(tmp_path) -> None:
    script = [
        tool_calls(
            ("c1", "delete", {"path": "a.txt"}),
            ("c2", "look", {"path": "b.txt"}),
            ("c3", "delete", {"path": "c.txt"}),
        ),
        text("Done."),
    ]
    with ScriptedServer(script) as server:
        opts = options(server, tmp_path / "j.db")
        anyio.run(pause, opts)

        async def first() -> tuple:
            async with Client.resume("s1", opts) as client:
                await client.approve("c3")
                return client.pending_approvals, await client.wait(), client.paused

        pending, finish, paused = anyio.run(first)
        assert [r.call.id for r in pending] == ["c1"] and finish is None
        assert paused is not None and [r.call.id for r in paused.requests] == ["c1"]
        assert DELETED == [] and len(server.requests) == 1

        async def last() -> Finish | None:
            async with Client.resume("s1", opts) as client:
                await client.deny("c1", "no")
                return await client.wait()

        finish = anyio.run(last)
    assert finish is not None and finish.reason is FinishReason.COMPLETED
    assert DELETED == ["c.txt"]
    contents = {m["tool_call_id"]: m["content"] for m in tool_messages(server.requests[1])}
    assert contents == {"c1": "no", "c2": "contents of b.txt", "c3": "deleted c.txt"}


def test_a_hook_answering_ask_holds_the_call_with_its_reason(tmp_path: Path) -> None:
    def gate(event: PreToolUseEvent) -> HookDecision | None:
        if event.tool_name == "look" and event.tool_input["path"].startswith("/etc"):
            return HookDecision(ask=True, reason="reads a system file")
        return None

    script = [tool_calls(("c1", "look", {"path": "/etc/passwd"})), text("Read it.")]
    with ScriptedServer(script) as server:
        opts = options(server, tmp_path / "j.db", hooks={HOOK_PRE_TOOL_USE: [gate]})
        items = anyio.run(pause, opts)
        assert items[-1].requests[0].reason == "reads a system file"

        async def approve() -> Finish | None:
            async with Client.resume("s1", opts) as client:
                await client.approve("c1")
                return await client.wait()

        finish = anyio.run(approve)
    assert finish is not None and finish.reason is FinishReason.COMPLETED
    assert tool_messages(server.requests[1])[0]["content"] == "contents of /etc/passwd"


def test_the_journal_says_the_session_waits_for_approval(tmp_path: Path) -> None:
    with ScriptedServer([tool_calls(("c1", "delete", {"path": "a.txt"}))]) as server:
        anyio.run(pause, options(server, tmp_path / "j.db"))
    journal = SQLiteJournal(tmp_path / "j.db")
    session = load_session(journal, "s1")
    journal.close()
    assert session.phase is Phase.AWAITING_APPROVAL
    assert [r.call.id for r in session.approvals] == ["c1"]
    assert session.turns[-1].reason is None


def test_approval_in_the_same_client_goes_on_with_the_turn(tmp_path: Path) -> None:
    script = [tool_calls(("c1", "delete", {"path": "a.txt"})), text("Deleted.")]
    with ScriptedServer(script) as server:

        async def main() -> list:
            async with Client(options(server, tmp_path / "j.db")) as client:
                await client.query("Clean up")
                await client.wait()
                await client.approve("c1")
                return [item async for item in client.events()]

        items = anyio.run(main)
    assert isinstance(items[-1], Finish) and items[-1].text == "Deleted."
    assert DELETED == ["a.txt"]


# Bad inputs -------------------------------------------------------------------------------


def test_deciding_an_unknown_call_a_decided_one_or_with_nothing_held_is_refused(
    tmp_path: Path,
) -> None:
    script = [tool_calls(("c1", "delete", {"path": "a"}), ("c2", "delete", {"path": "b"}))]
    with ScriptedServer(script) as server:
        opts = options(server, tmp_path / "j.db")

        async def main() -> list[str]:
            errors = []
            async with Client(opts) as client:
                with pytest.raises(UnknownApproval, match="no call awaits approval"):
                    await client.approve("c1")  # nothing held yet
                await client.query("Clean up")
                await client.wait()
                with pytest.raises(UnknownApproval) as unknown:
                    await client.approve("nope")
                errors.append(str(unknown.value))
                await client.approve("c1")
                with pytest.raises(UnknownToolCall) as twice:  # UnknownApproval is one
                    await client.deny("c1", "changed my mind")
                errors.append(str(twice.value))
                assert [r.call.id for r in client.pending_approvals] == ["c2"]
            return errors

        unknown, twice = anyio.run(main)
    assert "'nope'" in unknown and "['c1', 'c2']" in unknown
    assert "'c1'" in twice and "already decided" in twice and "['c2']" in twice


def test_a_prompt_while_paused_is_refused_until_the_calls_are_decided(tmp_path: Path) -> None:
    with ScriptedServer([tool_calls(("c1", "delete", {"path": "a"}))]) as server:

        async def main() -> None:
            async with Client(options(server, tmp_path / "j.db")) as client:
                await client.query("Clean up")
                await client.wait()
                with pytest.raises(TurnInProgress, match="waits for approval"):
                    await client.query("something else")

        anyio.run(main)


def test_interrupt_cancels_a_paused_turn(tmp_path: Path) -> None:
    with ScriptedServer([tool_calls(("c1", "delete", {"path": "a"}))]) as server:

        async def main() -> Finish | None:
            async with Client(options(server, tmp_path / "j.db")) as client:
                await client.query("Clean up")
                await client.wait()
                await client.interrupt()
                assert client.phase is Phase.IDLE and client.pending_approvals == ()
                return await client.wait()

        finish = anyio.run(main)
    assert finish is not None and finish.reason is FinishReason.CANCELLED and DELETED == []


def test_run_raises_approval_pending_naming_the_session(tmp_path: Path) -> None:
    pending = pytest.raises(ApprovalPending, match="s1 waits for approval of delete \\(c1\\)")
    with ScriptedServer([tool_calls(("c1", "delete", {"path": "a"}))]) as server, pending:
        anyio.run(run, "Clean up", options(server, tmp_path / "j.db"))


# Two processes ----------------------------------------------------------------------------


def worker(url: str, tmp: Path, *args: str) -> dict:
    """Run the worker to its end; the JSON line it printed."""
    command = [sys.executable, str(WORKER), url, str(tmp / "j.db"), str(tmp / "effects"), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_one_process_pauses_and_exits_and_another_approves(tmp_path: Path) -> None:
    script = [tool_calls(("c1", "delete", {"path": "a.txt"})), text("Deleted a.txt.")]
    with ScriptedServer(script) as server:
        assert worker(server.url, tmp_path, "start") == {"pending": ["c1"]}
        assert not (tmp_path / "effects").exists()
        ended = worker(server.url, tmp_path, "approve", "c1")
    assert ended == {"waiting": ["c1"], "reason": "completed", "text": "Deleted a.txt."}
    assert (tmp_path / "effects").read_text() == "a.txt\n"
