"""`toolreel run/chat/serve --mcp "CMD ARGS"`: a stdio MCP server's tools on the command line."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="toolreel.mcp needs the MCP SDK: pip install 'toolreel[mcp]'")

from click.testing import CliRunner, Result

from toolreel.cli import cli

SERVER = str(Path(__file__).with_name("mcp_demo_server.py"))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("command", ["run", "chat", "serve"])
def test_run_chat_and_serve_take_mcp_and_mcp_url(command: str) -> None:
    listing = invoke(command, "--help").output
    assert '--mcp "CMD ARGS"' in listing
    assert "--mcp-url URL" in listing


def test_run_offers_the_tools_of_the_mcp_server_it_starts() -> None:
    server = shlex.join([sys.executable, SERVER, "--only", "echo", "--only", "add"])
    result = invoke("run", "Use the tools", "--model", "test", "--mcp", server)
    assert result.exit_code == 0, result.output
    assert "echo: " in result.output  # echo's result, shown as the turn ran
    assert '"add"' in result.output  # the TestModel's answer names each tool it called


def test_a_missing_mcp_program_is_one_error_line_and_exit_2() -> None:
    result = invoke("run", "hi", "--model", "test", "--mcp", "no-such-mcp-program --flag")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: command='no-such-mcp-program'")
    assert "Traceback" not in result.output


def test_an_unparsable_mcp_command_line_is_a_usage_error() -> None:
    result = invoke("run", "hi", "--model", "test", "--mcp", "server 'unclosed")
    assert result.exit_code == 2
    assert "--mcp" in result.stderr


def test_neither_the_shell_nor_the_command_line_loads_the_mcp_sdk_until_asked() -> None:
    program = (
        "import sys, toolreel.shell, toolreel.cli\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('mcp', 'httpx2')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
