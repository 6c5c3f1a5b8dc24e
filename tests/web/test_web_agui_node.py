"""The official AG-UI client (`@ag-ui/client`'s HttpAgent, Node) against a real `toolreel serve`.

agui_client.mjs runs one thread through a tool round, a held call answered with
`resume` (approved), and another answered `cancelled`; these tests read its summary.
The client verifies every event it receives (it throws on a stream that breaks the
protocol's rules), so a run that completes is a run it accepted. They run when
`node` and `@ag-ui/client` are installed in `$TOOLREEL_AI_SDK` (else
~/.cache/toolreel/ai-sdk, which `.ci/run` fills) and skip otherwise, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_web_serve import Served
from web_support import HERE

AI_SDK = Path(os.environ.get("TOOLREEL_AI_SDK") or Path.home() / ".cache/toolreel/ai-sdk")
NODE = shutil.which("node")
CLIENT = AI_SDK / "node_modules/@ag-ui/client/package.json"

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not CLIENT.is_file(),
        reason=f"@ag-ui/client is not installed in {AI_SDK} (set TOOLREEL_AI_SDK, or run "
        ".ci/run's npm install line)",
    ),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, Any]]]:
    """agui_client.mjs's runs by label, against one `toolreel serve` (`multiply` held)."""
    assert NODE is not None
    folder = tmp_path_factory.mktemp("agui")
    args = ["--journal", str(folder / "web.db"), "--tools", "browser_approval_tools:TOOLS"]
    server = Served(args, folder)
    try:
        done = subprocess.run(
            [NODE, str(HERE / "agui_client.mjs"), server.url, "agui-thread"],
            capture_output=True,
            text=True,
            cwd=AI_SDK,
            timeout=90,
            check=False,
        )
    finally:
        server.stop()
    assert done.stdout, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert done.returncode == 0, summary.get("failure")
    yield {run["label"]: run for run in summary["runs"]}


def types(run: dict[str, Any]) -> list[str]:
    """The event types the run's subscriber saw, text content left out."""
    return [e["type"] for e in run["events"] if e["type"] != "TEXT_MESSAGE_CONTENT"]


def test_a_tool_round_reaches_the_client_as_steps_calls_result_and_answer(
    runs: dict[str, dict[str, Any]],
) -> None:
    run = runs["add"]
    assert types(run)[0] == "RUN_STARTED" and types(run)[-1] == "RUN_FINISHED"
    assert run["events"][0]["threadId"] == "agui-thread"
    assert types(run).count("STEP_STARTED") == 2
    assert {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"} <= set(
        types(run)
    )
    assert run["result"]["text"] == "The answer is 42." and run["errors"] == []
    roles = [m["role"] for m in run["newMessages"]]
    assert roles == ["assistant", "tool", "assistant"]  # the call joined the step's text
    assert run["newMessages"][0]["toolCalls"][0]["function"]["name"] == "add"
    # the arguments arrive fragment by fragment and add up, in the client's message, to the call's
    assert types(run).count("TOOL_CALL_ARGS") >= 2
    written = run["newMessages"][0]["toolCalls"][0]["function"]["arguments"]
    assert json.loads(written) == {"a": 25, "b": 17}


def test_a_held_call_leaves_the_client_a_pending_interrupt(
    runs: dict[str, dict[str, Any]],
) -> None:
    run = runs["held"]
    [interrupt] = run["pending"]
    assert interrupt["reason"] == "tool_approval"
    assert interrupt["id"] == interrupt["toolCallId"]
    assert run["events"][-1]["outcome"]["type"] == "interrupt"
    assert "TOOL_CALL_RESULT" not in types(run)


def test_resolving_the_interrupt_runs_the_call_and_the_turn_goes_on(
    runs: dict[str, dict[str, Any]],
) -> None:
    run = runs["approved"]
    assert run["pending"] == [] and run["errors"] == []
    assert types(run)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert run["result"]["text"] == "The answer is 56."


def test_cancelling_the_interrupt_denies_the_call_and_the_model_reads_why(
    runs: dict[str, dict[str, Any]],
) -> None:
    run = runs["cancelled"]
    assert run["pending"] == [] and run["errors"] == []
    [result] = [e for e in run["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert "denied" in result["content"]
    assert "denied" in run["result"]["text"]
