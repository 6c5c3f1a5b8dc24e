"""MCP servers over stdio: their tools as toolreel tools, in a Client turn, and when things fail.

The server is tests/mcp/mcp_demo_server.py, written with the `mcp` package's own
server API, run as a subprocess (each connection starts one).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import attrs
import httpx2
import pytest

pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK: pip install 'toolreel[mcp]'")

from returns.result import Failure, Success

from toolreel.core import ConfigError, ToolResult
from toolreel.mcp import MCPConnectError, MCPServer, MCPTool, MCPToolError
from toolreel.shell import AgentOptions, Client, run
from toolreel.testing import FunctionModel, ToolCalls, call

SERVER = str(Path(__file__).with_name("mcp_demo_server.py"))
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def demo(*only: str, **options) -> MCPServer:
    """The demo server over stdio (just the tools named, if any)."""
    args = [SERVER, *(word for name in only for word in ("--only", name))]
    return MCPServer.stdio(sys.executable, args, **options)


def offline(**extra) -> AgentOptions:
    """Options whose model is given to the Client (nothing is sent anywhere)."""
    return AgentOptions(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-test", **extra)


def test_tools_keep_the_servers_schemas_get_the_prefix_and_answer_text_structured_and_errors() -> (
    None
):
    async def main() -> None:
        async with demo("echo", "forecast", "fail", "paths", prefix="demo_") as server:
            tools = {item.name: item for item in server.tools()}
            listed = {item.name: item for item in server.listed}
            assert sorted(tools) == ["demo_echo", "demo_fail", "demo_forecast", "demo_paths"]
            assert all(isinstance(item, MCPTool) for item in tools.values())
            # The input schema is the server's own, unchanged (nested object, enum, default).
            assert tools["demo_paths"].parameters == listed["paths"].input_schema
            assert json.loads(tools["demo_paths"].spec.parameters) == listed["paths"].input_schema
            assert tools["demo_paths"].parameters["properties"]["mode"]["enum"] == [
                "read",
                "write",
            ]
            assert tools["demo_echo"].description == "Say the text back."

            assert await tools["demo_echo"].run('{"text": "hi"}') == Success("echo: hi")
            forecast = await tools["demo_forecast"].run('{"city": "Oslo"}')
            assert json.loads(forecast.unwrap()) == {"city": "Oslo", "high": 21, "sky": "clear"}
            failed = await tools["demo_fail"].run('{"reason": "no"}')
            assert isinstance(failed, Failure)
            assert failed.failure().endswith("cannot do that: no")  # the server's own words
            wrong = await tools["demo_echo"].run('{"text": 5}')
            assert isinstance(wrong, Failure)
            assert "text" in wrong.failure()
            assert await tools["demo_echo"].run("[1]") == Failure(
                "arguments must be a JSON object, got [1]"
            )
            # Called directly, a tool is its function: the text, or MCPToolError.
            assert await tools["demo_echo"]({"text": "direct"}) == "echo: direct"
            with pytest.raises(MCPToolError, match="cannot do that: again"):
                await tools["demo_fail"]({"reason": "again"})

    anyio.run(main)


def test_a_server_that_dies_mid_call_is_an_error_result_and_so_is_every_call_after() -> None:
    outcomes = []

    async def main() -> None:
        async with demo("crash", "echo") as server:
            tools = {item.name: item for item in server.tools()}
            with anyio.fail_after(30):  # a hang fails the test instead of hanging it
                outcomes.append(await tools["crash"].run("{}"))
                outcomes.append(await tools["echo"].run('{"text": "still there?"}'))
            raise LookupError("raised in the block")

    # What the block raised reaches the caller as it is (not wrapped in a group).
    with pytest.raises(LookupError, match="raised in the block"):
        anyio.run(main)
    crashed, after = outcomes
    assert isinstance(crashed, Failure)
    assert "Connection closed" in crashed.failure()
    assert isinstance(after, Failure)


def test_a_client_turn_calls_the_servers_tools_and_closes_the_server_with_the_client() -> None:
    def model(messages, info):
        if not messages[-1].tool_rounds:
            return ToolCalls([call("t_echo", text="hi"), call("t_pid"), call("t_fail", reason="x")])
        return "done"

    seen: list[ToolResult] = []

    async def main() -> int:
        options = offline(mcp_servers=[demo("echo", "pid", "fail", prefix="t_")])
        result = await run("go", attrs.evolve(options, on_tool_result=seen.append), model=model_of)
        assert result.text == "done"
        return int(next(item.content for item in seen if item.name == "t_pid"))

    model_of = FunctionModel(model)
    pid = anyio.run(main)
    offered = [spec.name for spec in model_of.requests[0].tools]
    assert offered == ["t_echo", "t_fail", "t_pid"]  # in the server's order
    by_name = {item.name: item for item in seen}
    assert (by_name["t_echo"].content, by_name["t_echo"].is_error) == ("echo: hi", False)
    assert by_name["t_fail"].is_error
    assert by_name["t_fail"].content.endswith("cannot do that: x")
    with pytest.raises(ProcessLookupError):  # the client closed, so did the server's process
        os.kill(pid, 0)


def test_a_tool_timeout_still_applies_to_a_call_the_server_never_answers() -> None:
    def model(messages, info):
        return "ok" if messages[-1].tool_rounds else call("wait")

    seen: list[ToolResult] = []

    async def main() -> None:
        options = offline(mcp_servers=[demo("wait", timeout=0.5)], on_tool_result=seen.append)
        with anyio.fail_after(30):
            await run("go", options, model=FunctionModel(model))

    anyio.run(main)
    assert [(item.name, item.is_error) for item in seen] == [("wait", True)]
    assert "timed out" in seen[0].content


def test_a_missing_command_is_a_config_error_when_connecting() -> None:
    async def main() -> None:
        async with MCPServer.stdio("no-such-mcp-server-program") as server:
            server.tools()

    with pytest.raises(ConfigError, match="no-such-mcp-server-program"):
        anyio.run(main)

    async def in_client() -> None:
        async with Client(offline(mcp_servers=[MCPServer.command_line("no-such-program -v")])):
            pass

    with pytest.raises(ConfigError, match="no-such-program"):
        anyio.run(in_client)


def test_a_program_that_is_no_mcp_server_is_an_mcp_connect_error() -> None:
    async def main() -> None:
        async with MCPServer.stdio(sys.executable, ["-c", "print('hello')"]):
            pass

    with pytest.raises(MCPConnectError, match="cannot connect to MCP server"):
        anyio.run(main)


def test_bad_declarations_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="args"):
        MCPServer.stdio("python", "server.py")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="url"):
        MCPServer.http("127.0.0.1:8000/mcp")
    with pytest.raises(ConfigError, match="timeout"):
        MCPServer.stdio("python", timeout=0)
    with pytest.raises(ConfigError, match="mcp_servers"):
        offline(mcp_servers=["python server.py"])
    with pytest.raises(ConfigError, match="mcp_servers"):
        offline(mcp_servers=[MCPServer.stdio("python")]).for_agent()


def test_the_web_app_connects_its_mcp_servers_once_for_every_request() -> None:
    web_module = pytest.importorskip("toolreel.web", reason="needs: pip install 'toolreel[web]'")

    def model(messages, info):
        if not messages[-1].tool_rounds:
            return ToolCalls([call("pid")])
        return "done"

    seen: list[ToolResult] = []
    options = offline(mcp_servers=[demo("pid")], on_tool_result=seen.append)
    web = web_module.app(options, model=FunctionModel(model))

    async def main() -> None:
        async with web.router.lifespan_context(web):
            transport = httpx2.ASGITransport(app=web)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                for chat in ("a", "b"):
                    body = {
                        "id": chat,
                        "messages": [{"role": "user", "parts": [{"type": "text", "text": "pid?"}]}],
                    }
                    response = await client.post("/api/chat", json=body)
                    assert response.status_code == 200, response.text

    anyio.run(main)
    pids = {item.content for item in seen}
    assert len(seen) == 2 and len(pids) == 1  # one server process answered both chats
    with pytest.raises(ProcessLookupError):  # the app's lifespan ended: the server too
        os.kill(int(pids.pop()), 0)


def test_an_image_a_tool_returns_reaches_the_model_and_what_cannot_be_shown_is_named() -> None:
    def model(messages, info):
        if not messages[-1].tool_rounds:
            return ToolCalls([call("snapshot")])
        return "seen"

    model_of = FunctionModel(model)
    seen: list[ToolResult] = []

    async def main() -> None:
        options = offline(mcp_servers=[demo("snapshot")], on_tool_result=seen.append)
        assert (await run("look", options, model=model_of)).text == "seen"

    anyio.run(main)
    [result] = seen
    assert result.content == "the pixel\n[audio (audio/wav) not shown]"
    [image] = result.images
    assert (image.media_type, image.data) == ("image/png", PIXEL)
    [answered] = model_of.requests[1].messages[-1].tool_rounds[-1].results
    assert answered.images == (image,)  # the model is shown it, not told of it
