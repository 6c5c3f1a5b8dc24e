"""`toolreel mcp-serve`: a toolreel agent as an MCP server, driven by the `mcp` SDK's own client.

The server runs as `python -m toolreel mcp-serve --model test ...` (TestModel: calls each
tool once, then answers; an agent's output generated from its schema) with the tools and
agents of tests/mcp/served_agent.py, over stdio and over streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK: pip install 'toolreel[mcp]'")

import mcp_types as types
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from toolreel.cli import cli
from toolreel.mcp import SESSION_META

HERE = Path(__file__).parent
SERVE = [sys.executable, "-m", "toolreel", "mcp-serve", "--model", "test"]


def serve_args(journal: Path, *flags: str, tools: str = "served_agent:TOOLS") -> list[str]:
    """The mcp-serve command line: the test model, the tools and agents, a journal."""
    return [
        *SERVE[1:],
        "--tools",
        tools,
        "--agents",
        "served_agent:AGENTS",
        "--journal",
        str(journal),
        *flags,
    ]


@contextlib.asynccontextmanager
async def over_stdio(
    journal: Path, *flags: str, elicit: Any = None, tools: str = "served_agent:TOOLS"
) -> AsyncIterator[ClientSession]:
    """A client session with `toolreel mcp-serve` run as a child process."""
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(journal, *flags, tools=tools), cwd=str(HERE)
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def test_stdio_lists_the_chat_and_agent_tools_answers_and_journals_each_call(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "served.db"
    progress: list[tuple[float, str | None]] = []

    async def noted(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with over_stdio(journal) as session:
            listed = {item.name: item for item in (await session.list_tools()).tools}
            assert sorted(listed) == ["chat", "summarise"]  # no plain tools unless asked
            assert listed["chat"].input_schema["required"] == ["prompt"]
            assert listed["chat"].input_schema["properties"]["prompt"]["type"] == "string"
            # The agent's input is its build_prompt's parameter; its output schema the output's.
            assert listed["summarise"].input_schema["properties"] == {"text": {"type": "string"}}
            assert listed["summarise"].output_schema is not None
            assert sorted(listed["summarise"].output_schema["properties"]) == ["title", "words"]
            chat = await session.call_tool(
                "chat", {"prompt": "Add two numbers"}, progress_callback=noted
            )
            chat_progress = list(progress)
            progress.clear()
            agent = await session.call_tool(
                "summarise", {"text": "one two three"}, progress_callback=noted
            )
            progress[:0] = chat_progress
            return chat, agent

    chat, agent = anyio.run(main)
    assert not chat.is_error, text_of(chat)
    assert '"add"' in text_of(chat)  # the TestModel's answer: the results of the tools it called
    # The chat's one round; the agent's attempt, then its output tool's call.
    assert progress == [(1.0, "round 1: add"), (1.0, "attempt 1"), (2.0, "record_summary: done")]
    assert not agent.is_error, text_of(agent)
    assert agent.structured_content is not None
    assert set(agent.structured_content) == {"title", "words"}
    assert json.loads(text_of(agent)) == agent.structured_content  # and as JSON text
    sessions = [chat.meta[SESSION_META], agent.meta[SESSION_META]]  # type: ignore[index]
    listed = run_cli("sessions", "-q", str(journal))
    assert sorted(listed.output.split()) == sorted(sessions)
    replayed = run_cli("replay", str(journal))
    assert replayed.exit_code == 0, replayed.output
    assert replayed.output.count("OK ") == 2


def test_bad_arguments_are_error_results_and_an_unknown_tool_a_protocol_error(
    tmp_path: Path,
) -> None:
    async def main() -> list[types.CallToolResult]:
        async with over_stdio(tmp_path / "j.db") as session:
            results = [
                await session.call_tool("chat", {}),
                await session.call_tool("chat", {"prompt": 3}),
                await session.call_tool("chat", {"prompt": "hi", "extra": 1}),
                await session.call_tool("summarise", {"text": ["not", "text"]}),
            ]
            with pytest.raises(MCPError, match="Unknown tool: nope") as raised:
                await session.call_tool("nope", {})
            assert raised.value.error.code == types.INVALID_PARAMS
            return results

    missing, wrong_type, extra, agent = anyio.run(main)
    assert all(result.is_error for result in (missing, wrong_type, extra, agent))
    assert "'prompt' must be a non-empty string, got missing" in text_of(missing)
    assert "got a int" in text_of(wrong_type)
    assert "unexpected argument(s): extra" in text_of(extra)
    assert text_of(agent).startswith("Invalid arguments for summarise: ")
    assert run_cli("sessions", "-q", str(tmp_path / "j.db")).output == ""  # no session began


def test_expose_tools_lists_the_plain_tools_but_never_one_that_needs_approval(
    tmp_path: Path,
) -> None:
    async def main() -> tuple[list[str], types.CallToolResult]:
        async with over_stdio(
            tmp_path / "j.db", "--expose-tools", tools="served_agent:GUARDED"
        ) as session:
            names = sorted(item.name for item in (await session.list_tools()).tools)
            return names, await session.call_tool("add", {"a": 2, "b": 3})

    names, added = anyio.run(main)
    assert names == ["add", "chat", "summarise"]  # `wipe` requires approval: not exposed
    assert text_of(added) == "5.0"


def test_a_held_call_is_elicited_from_a_client_that_takes_elicitation(tmp_path: Path) -> None:
    asked: list[str] = []

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def main() -> types.CallToolResult:
        async with over_stdio(
            tmp_path / "j.db", elicit=approve, tools="served_agent:GUARDED"
        ) as session:
            return await session.call_tool("chat", {"prompt": "Clean up"})

    result = anyio.run(main)
    assert len(asked) == 1 and asked[0].startswith("Approve the call wipe(")
    assert not result.is_error, text_of(result)
    assert "wiped " in text_of(result)  # the approved call ran


def test_an_agents_held_helper_is_elicited_or_said_held_with_how_to_resume(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "j.db"

    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        flags = ("--agents", "served_agent:GUARDED_AGENTS")
        async with over_stdio(journal, *flags, elicit=approve) as session:
            elicited = await session.call_tool("tidy", {"folder": "/tmp"})
        async with over_stdio(journal, *flags) as session:
            return elicited, await session.call_tool("tidy", {"folder": "/tmp"})

    elicited, held = anyio.run(main)
    assert not elicited.is_error, text_of(elicited)
    assert elicited.structured_content is not None
    assert set(elicited.structured_content) == {"title", "words"}
    assert held.is_error
    session = held.meta[SESSION_META]  # type: ignore[index]
    assert f"waits in session {session}" in text_of(held)
    assert f"`resume_agent({session!r}, definition, options, approve=['call_1'])`" in text_of(held)
    replayed = run_cli("replay", str(journal))
    assert replayed.exit_code == 0 and "awaiting approval (1)" in replayed.output


@pytest.mark.parametrize(
    ("answer", "read"),
    [
        (types.ElicitResult(action="decline"), "The user denied this tool call."),
        (
            types.ElicitResult(action="accept", content={"approve": False, "reason": "not today"}),
            "not today",
        ),
    ],
)
def test_a_declined_or_refused_elicitation_denies_the_call(
    tmp_path: Path, answer: types.ElicitResult, read: str
) -> None:
    async def decide(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return answer

    async def main() -> types.CallToolResult:
        async with over_stdio(
            tmp_path / "j.db", elicit=decide, tools="served_agent:GUARDED"
        ) as session:
            return await session.call_tool("chat", {"prompt": "Clean up"})

    result = anyio.run(main)
    assert not result.is_error, text_of(result)  # the turn completed: the model read the denial
    assert "wiped " not in text_of(result)
    assert read in text_of(result)


def test_without_elicitation_a_held_call_is_an_error_saying_how_to_decide_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "j.db"

    async def main() -> types.CallToolResult:
        async with over_stdio(journal, tools="served_agent:GUARDED") as session:
            return await session.call_tool("chat", {"prompt": "Clean up"})

    result = anyio.run(main)
    assert result.is_error
    session = result.meta[SESSION_META]  # type: ignore[index]
    found = re.search(r"`(toolreel approve [^`]+)`", text_of(result))
    assert found is not None, text_of(result)
    command = shlex.split(found[1])
    assert command[:6] == ["toolreel", "approve", "--journal", str(journal), "--session", session]
    # The command it names decides the call, and the turn goes on (the server's flags again).
    monkeypatch.chdir(HERE)
    decided = run_cli(*command[1:], "--model", "test", "--tools", "served_agent:GUARDED")
    assert decided.exit_code == 0, decided.output
    assert "wiped " in decided.output


def test_a_call_the_client_gives_up_on_is_a_cancelled_turn_in_the_journal(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "j.db"

    def last_finish() -> str:
        return run_cli("sessions", str(journal)).output

    async def main() -> list[str]:
        async with over_stdio(journal, tools="served_agent:SLOW") as session:
            with anyio.move_on_after(2):  # the SDK's client sends notifications/cancelled
                await session.call_tool("chat", {"prompt": "Take your time"})
            with anyio.fail_after(30):  # while still connected: the cancel, not the shutdown
                while "cancelled" not in last_finish():
                    await anyio.sleep(0.1)
            return [item.name for item in (await session.list_tools()).tools]

    assert anyio.run(main) == ["chat", "summarise"]  # the server goes on serving
    assert run_cli("replay", str(journal)).exit_code == 0


@contextlib.contextmanager
def over_http(journal: Path, *flags: str, tools: str = "served_agent:TOOLS") -> Iterator[str]:
    """`toolreel mcp-serve --transport http --port 0` as a child process; its endpoint URL."""
    args = serve_args(journal, "--transport", "http", "--port", "0", *flags, tools=tools)
    child = subprocess.Popen(
        [*SERVE[:1], *args],
        cwd=HERE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert child.stderr is not None
        line = child.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+/mcp)", line)
        assert found is not None, line + child.stderr.read()
        yield found[1]
    finally:
        child.terminate()
        child.wait(timeout=30)


def test_streamable_http_answers_the_sdk_client_and_refuses_other_hosts(tmp_path: Path) -> None:
    journal = tmp_path / "j.db"
    with over_http(journal) as url:

        async def main() -> types.CallToolResult:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = [item.name for item in (await session.list_tools()).tools]
                assert names == ["chat", "summarise"]
                return await session.call_tool("summarise", {"text": "a b"})

        result = anyio.run(main)
        assert not result.is_error and result.structured_content is not None
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream"}
        rebound = httpx2.post(url, json=body, headers={**accept, "Host": "evil.example"})
        assert rebound.status_code == 421  # DNS rebinding: a name this server is not
        elsewhere = httpx2.post(url, json=body, headers={**accept, "Origin": "http://evil.example"})
        assert elsewhere.status_code == 403
        huge = httpx2.post(url, content=b"x" * (4 * 1024 * 1024 + 1), headers=accept)
        assert huge.status_code == 413
    assert run_cli("replay", str(journal)).exit_code == 0


def test_over_http_a_held_call_is_elicited_too(tmp_path: Path) -> None:
    async def approve(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True})

    with over_http(tmp_path / "j.db", tools="served_agent:GUARDED") as url:

        async def main() -> types.CallToolResult:
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write, elicitation_callback=approve) as session,
            ):
                await session.initialize()
                return await session.call_tool("chat", {"prompt": "Clean up"})

        result = anyio.run(main)
    assert not result.is_error, text_of(result)
    assert "wiped " in text_of(result)


def test_with_a_token_every_http_request_must_carry_it(tmp_path: Path) -> None:
    token = "t" * 24
    with over_http(tmp_path / "j.db", "--token", token) as url:
        accept = {"Accept": "application/json, text/event-stream"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        refused = httpx2.post(url, json=body, headers=accept)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        wrong = httpx2.post(url, json=body, headers={**accept, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401

        async def main() -> list[str]:
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
            async with (
                client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return [item.name for item in (await session.list_tools()).tools]

        assert anyio.run(main) == ["chat", "summarise"]


def test_toolreel_run_uses_toolreel_mcp_serve_as_an_mcp_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(HERE)
    inner = tmp_path / "inner.db"
    server = shlex.join([*SERVE, "--tools", "served_agent:TOOLS", "--journal", str(inner)])
    result = run_cli("run", "Ask the agent", "--model", "test", "--mcp", server)
    assert result.exit_code == 0, result.output
    assert "chat" in result.output  # the outer model called the served agent's chat tool
    assert '\\"add\\"' in result.output or '"add"' in result.output  # whose answer came back
