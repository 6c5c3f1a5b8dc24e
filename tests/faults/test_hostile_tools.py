"""Hostile tools: whatever a tool raises or returns, the model reads an error and the loop goes on.

`sys.exit()` (argparse, click), a KeyboardInterrupt raised in a sync tool's
worker thread, a CancelledError a tool raises itself, a result that cannot be
turned into text: each becomes an error result naming it. A real Ctrl-C (in
the event loop's thread) still stops the run, journaled as cancelled; a tool
blocking its worker thread forever never holds up the turn or the close.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import click
import pytest

from toolreel.adapters import SQLiteJournal, load_session
from toolreel.core._history import unanswered_calls
from toolreel.core.notices import ToolCallAnnounced
from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, run, tool
from toolreel.shell.scripted import ScriptedServer, text, tool_calls


@tool
def uses_argparse(flag: str) -> str:
    """A tool built on a command-line parser: a bad flag ends in sys.exit(2)."""
    parser = argparse.ArgumentParser(prog="inner", add_help=False)
    parser.add_argument("--size")
    return str(parser.parse_args([flag]).size)


@click.command()
@click.option("--size", type=int)
def inner_cli(size: int) -> None:
    click.echo(size)


@tool
def uses_click(flag: str) -> str:
    """A tool that runs a click command: it always ends in sys.exit."""
    inner_cli.main([flag], standalone_mode=True)
    return "unreachable"


@tool
async def exits_async() -> str:
    """An async tool calling sys.exit."""
    sys.exit(3)


@tool
def interrupts_in_thread() -> str:
    """A sync tool raising KeyboardInterrupt in its worker thread (no signal can go there)."""
    raise KeyboardInterrupt


@tool
async def raises_cancelled() -> str:
    """An async tool raising CancelledError itself (nothing is cancelling the run)."""
    raise asyncio.CancelledError("the tool's own")


@tool
def raises_cancelled_in_thread() -> str:
    """A sync tool raising CancelledError in its worker thread."""
    raise asyncio.CancelledError


@tool
def returns_set() -> Any:
    """Returns a set (JSON has none)."""
    return {1, 2}


@tool
def returns_socket() -> Any:
    """Returns an open socket."""
    return socket.socket()


@tool
def returns_object() -> Any:
    """Returns a plain object."""
    return object()


TOOLS = [
    uses_argparse,
    uses_click,
    exits_async,
    interrupts_in_thread,
    raises_cancelled,
    raises_cancelled_in_thread,
    returns_set,
    returns_socket,
    returns_object,
]

CASES = [
    ("uses_argparse", {"flag": "--colour"}, "SystemExit: 2"),
    ("uses_click", {"flag": "--size=3"}, "SystemExit: 0"),
    ("exits_async", {}, "SystemExit: 3"),
    ("interrupts_in_thread", {}, "KeyboardInterrupt"),
    ("raises_cancelled", {}, "CancelledError: the tool's own"),
    ("raises_cancelled_in_thread", {}, "CancelledError"),
    ("returns_set", {}, "tool returns_set returned a set that cannot be turned into text"),
    ("returns_socket", {}, "tool returns_socket returned a socket that cannot be turned"),
    ("returns_object", {}, "tool returns_object returned a object that cannot be turned"),
]


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    extra.setdefault("tools", TOOLS)
    return AgentOptions(
        model="test", base_url=server.url, api_key="sk-test", auto_execute_tools=True, **extra
    )


@pytest.mark.parametrize(("name", "arguments", "error"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_tool_becomes_an_error_result_and_the_loop_goes_on(
    name: str, arguments: dict[str, Any], error: str
) -> None:
    with ScriptedServer([tool_calls(("c1", name, arguments)), text("noted")]) as server:
        result = anyio.run(run, "go", options(server))
        assert result.text == "noted"  # the model was called again, with the error
        [outcome] = result.rounds[0].results
        assert outcome.is_error
        assert outcome.content.startswith(error)
        tool_message = server.requests[1]["messages"][-1]
        assert tool_message["tool_call_id"] == "c1"
        assert tool_message["content"] == outcome.content


def test_a_keyboard_interrupt_in_the_event_loop_thread_stops_the_run_journaled(tmp_path) -> None:
    """A KeyboardInterrupt where a real Ctrl-C lands (the loop's thread) is never swallowed."""

    @tool
    async def ctrl_c_lands_here() -> str:
        """Stands for the code running when the user presses Ctrl-C."""
        raise KeyboardInterrupt

    path = tmp_path / "journal.db"
    script = [tool_calls(("c1", "uses_argparse", {"flag": "--x"})), tool_calls(("c2", "ctrl", {}))]
    with ScriptedServer(script) as server:
        ctrl = tool(name="ctrl")(ctrl_c_lands_here.handler)
        opts = options(server, tools=[*TOOLS, ctrl], journal=str(path), session_id="s1")
        with pytest.raises(KeyboardInterrupt):
            anyio.run(run, "go", opts)
        assert len(server.requests) == 2
    assert_last_turn_cancelled(path)


def assert_last_turn_cancelled(path: Path) -> None:
    journal = SQLiteJournal(path)
    try:
        session = load_session(journal, "s1")
    finally:
        journal.close()
    assert session.turns[-1].reason is FinishReason.CANCELLED
    assert unanswered_calls(session.history) == ()


CTRL_C = textwrap.dedent(
    """
    import signal, sys
    import anyio
    from toolreel.shell import AgentOptions, run, tool
    from toolreel.shell.scripted import ScriptedServer, tool_calls

    @tool
    async def long_job() -> str:
        "The user gives up while this runs."
        signal.raise_signal(signal.SIGINT)  # as a terminal's Ctrl-C would
        await anyio.sleep_forever()

    with ScriptedServer([tool_calls(("c1", "long_job", {}))]) as server:
        options = AgentOptions(
            model="test", base_url=server.url, api_key="sk-test", tools=[long_job],
            journal=sys.argv[1], session_id="s1",
        )
        try:
            anyio.run(run, "go", options)
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
    """
)


def test_a_real_ctrl_c_cancels_the_run_cleanly(tmp_path) -> None:
    path = tmp_path / "journal.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "KeyboardInterrupt"
    assert done.stderr == ""  # no traceback, no "exception was never retrieved"
    assert_last_turn_cancelled(path)


def test_a_tool_blocking_its_thread_forever_holds_up_neither_the_turn_nor_the_close() -> None:
    never = threading.Event()

    @tool(timeout=0.1)
    def hangs() -> str:
        """Blocks its worker thread until the test ends."""
        never.wait(30)
        return "far too late"

    @tool
    def hangs_without_timeout() -> str:
        """Blocks its worker thread; only the close ends the wait for it."""
        never.wait(30)
        return "far too late"

    script = [tool_calls(("c1", "hangs", {})), text("gave up"), tool_calls(("c2", "stuck", {}))]
    with ScriptedServer(script) as server:

        async def main() -> tuple[Any, Any]:
            opts = options(server, tools=[hangs, tool(name="stuck")(hangs_without_timeout.handler)])
            async with Client(opts) as client:
                await client.query("go")
                first = await client.wait()  # ended by the tool's timeout
                await client.query("again")
                async for event in client.events():
                    if isinstance(event, ToolCallAnnounced):
                        break
                # leaving the block closes the client with the thread still blocked
            return first, client.last_finish

        try:
            first, second = anyio.run(main)
        finally:
            never.set()
    assert first.text == "gave up"
    assert first.rounds[0].results[0].content == "Tool hangs timed out after 0.1 s"
    assert second.reason is FinishReason.CANCELLED
