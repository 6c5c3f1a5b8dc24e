"""MCP servers over streamable HTTP: the demo server served by uvicorn on 127.0.0.1 (a free
port) in a subprocess; its tools in a Client turn, a crash mid-call, and `--mcp-url`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK: pip install 'toolreel[mcp]'")

from click.testing import CliRunner
from returns.result import Failure

from toolreel.cli import cli
from toolreel.core import ToolResult
from toolreel.mcp import MCPConnectError, MCPServer
from toolreel.shell import AgentOptions, run
from toolreel.testing import FunctionModel, ToolCalls, call

SERVER = str(Path(__file__).with_name("mcp_demo_server.py"))


def http_server(*only: str) -> Iterator[str]:
    """Serve the demo server (just these tools) over HTTP; its MCP endpoint URL."""
    args = [sys.executable, SERVER, "--http", *(w for name in only for w in ("--only", name))]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            port = process.stdout.readline().strip()
            assert port.isdigit(), f"the server printed {port!r}"
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.kill()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    yield from http_server("echo", "forecast", "fail", "header")


def test_http_tools_answer_in_a_client_turn_with_text_structured_and_error_results(
    url: str,
) -> None:
    def model(messages, info):
        if messages[-1].tool_rounds:
            return "done"
        return ToolCalls(
            [
                call("web_echo", text="hi"),
                call("web_forecast", city="Rome"),
                call("web_fail"),
                call("web_header", name="x-trace"),
            ]
        )

    seen: list[ToolResult] = []
    scripted = FunctionModel(model)
    options = AgentOptions(
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-test",
        mcp_servers=[MCPServer.http(url, headers={"X-Trace": "1"}, prefix="web_")],
        on_tool_result=seen.append,
    )
    result = anyio.run(lambda: run("go", options, model=scripted))
    assert result.text == "done"
    specs = {spec.name: json.loads(spec.parameters) for spec in scripted.requests[0].tools}
    assert specs["web_forecast"]["properties"]["city"]["type"] == "string"
    by_name = {item.name: item for item in seen}
    assert (by_name["web_echo"].content, by_name["web_echo"].is_error) == ("echo: hi", False)
    forecast = json.loads(by_name["web_forecast"].content)
    assert forecast == {"city": "Rome", "high": 21, "sky": "clear"}
    # A call without its required argument: the server says what is wrong, as an error.
    assert by_name["web_fail"].is_error
    assert "reason" in by_name["web_fail"].content
    assert by_name["web_header"].content == "1"  # the headers given go with every request


def test_an_http_server_that_dies_mid_call_is_an_error_result_not_a_hang() -> None:
    outcomes = []

    async def main(url: str) -> None:
        async with MCPServer.http(url) as server:
            tools = {item.name: item for item in server.tools()}
            with anyio.fail_after(30):
                outcomes.append(await tools["crash"].run("{}"))
                outcomes.append(await tools["echo"].run('{"text": "anyone?"}'))

    for url in http_server("crash", "echo"):
        anyio.run(main, url)
    assert all(isinstance(outcome, Failure) for outcome in outcomes), outcomes


def test_a_url_with_no_server_is_an_mcp_connect_error() -> None:
    async def main() -> None:
        async with MCPServer.http("http://127.0.0.1:9/mcp"):
            pass

    with pytest.raises(MCPConnectError, match=r"127\.0\.0\.1:9/mcp"):
        anyio.run(main)


def test_the_cli_offers_the_tools_of_mcp_url(url: str) -> None:
    result = CliRunner().invoke(cli, ["run", "Say hi", "--model", "test", "--mcp-url", url])
    assert result.exit_code == 0, result.output
    assert "echo: " in result.output
    assert "clear" in result.output
