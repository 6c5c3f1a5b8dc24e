"""Logs: what the "toolreel" loggers say about a run, and that they never say a key.

Through the public API only (a Client or `execute_agent` against a scripted
OpenAI-compatible server on 127.0.0.1), read with pytest's `caplog`. No
assertion reads a duration's value.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from toolreel.adapters import SQLiteJournal
from toolreel.core import Finish
from toolreel.core.outcomes import FinishReason
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentFailure,
    AgentOptions,
    AgentSuccess,
    Client,
    OutputTool,
    execute_agent,
    tool,
)
from toolreel.shell.scripted import Reply, ScriptedServer, http_error, text, tool_calls
from toolreel.shell.telemetry import add_observer, remove_observer

KEY = "sk-live-0123456789abcdefghijklmnop"
FAST = RetryPolicy(base_delay=0.001, max_delay=0.001)

add = tool("add", "Add", {"a": int, "b": int})(lambda args: args["a"] + args["b"])


@tool
def leak(word: str) -> str:
    """A tool whose error repeats the key it was handed."""
    raise RuntimeError(f"auth failed for {KEY}")


def options(server: ScriptedServer, **extra: Any) -> AgentOptions:
    extra.setdefault("auto_execute_tools", True)
    extra.setdefault("api_key", "sk-test")
    extra.setdefault("base_url", server.url)
    return AgentOptions(model="test", tools=[add, leak], retry=FAST, **extra)


def turn(script: list[Reply], prompt: str = "go", **extra: Any) -> Finish:
    """One Client turn against `script`; its Finish."""
    with ScriptedServer(script) as server:

        async def main() -> Finish:
            async with Client(options(server, **extra)) as client:
                await client.query(prompt)
                finish = await client.wait()
                assert finish is not None
                return finish

        return anyio.run(main)


def lines(caplog: pytest.LogCaptureFixture, name: str, level: int) -> list[str]:
    """The messages logged on `name` at exactly `level`."""
    return [r.getMessage() for r in caplog.records if r.name == name and r.levelno == level]


def test_hitting_the_iteration_cap_logs_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    again = tool_calls(("c", "add", {"a": 1, "b": 1}))
    finish = turn([again, again, again], max_tool_iterations=2)
    assert finish.reason is FinishReason.MAX_ITERATIONS
    [warning] = lines(caplog, "toolreel.loop", logging.WARNING)
    assert "max_tool_iterations (2)" in warning
    assert "Increase max_tool_iterations" in warning


def test_the_turns_end_is_logged_and_journaled_before_its_last_message_is_handed_out(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    again = tool_calls(("c", "add", {"a": 1, "b": 1}))
    journal = SQLiteJournal(tmp_path / "j.db")  # its writes go through a worker thread
    seen: list[tuple[list[str], bool]] = []

    def recorded() -> tuple[list[str], bool]:
        """The warnings so far, and whether the journal holds the turn's end."""
        effects = [e for entry in journal.entries("s") for e in entry.effects]
        return lines(caplog, "toolreel.loop", logging.WARNING), effects[-1]["type"] == "Finish"

    with ScriptedServer([again, again, text("2")]) as server:
        policy = "final_answer"  # the answer is the last message: the Finish's text

        async def main() -> None:
            opts = options(
                server,
                journal=journal,
                session_id="s",
                max_tool_iterations=2,
                on_max_iterations=policy,
            )
            async with Client(opts) as client:
                await client.query("go")
                async for item in client.events():
                    if isinstance(item, Finish) and item.text == "2":
                        seen.append(recorded())
            # leaving `async with` right after: nothing of the turn is still on its way

        anyio.run(main)
    journal.close()
    [(warnings, journaled)] = seen
    assert len(warnings) == 1 and "Hit max_tool_iterations" in warnings[0]
    assert journaled


def test_a_turn_that_completes_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    turn([tool_calls(("c", "add", {"a": 1, "b": 1})), text("2")])
    assert [r for r in caplog.records if r.name.startswith("toolreel")] == []


def test_every_retry_is_a_warning_with_attempt_delay_and_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    finish = turn([http_error(429, "slow down"), http_error(503, "overloaded"), text("ok")])
    assert finish.reason is FinishReason.COMPLETED
    first, second = lines(caplog, "toolreel.model", logging.WARNING)
    assert "slow down" in first and "retry 1 in 0.00 s" in first
    assert "overloaded" in second and "retry 2 in" in second


def test_a_failure_that_is_not_retried_logs_no_retry_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    finish = turn([http_error(400, "bad request")])
    assert finish.reason is FinishReason.FAILED
    assert lines(caplog, "toolreel.model", logging.WARNING) == []


def test_each_round_is_logged_at_info_with_its_number_and_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolreel")
    script = [
        tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
        tool_calls(("c3", "add", {"a": 5, "b": 6})),
        text("done"),
    ]
    turn(script)
    first, second = lines(caplog, "toolreel.loop", logging.INFO)
    assert first.startswith("round 1: add, add (") and first.endswith(" s)")
    assert second.startswith("round 2: add (")


def test_manual_mode_rounds_are_logged_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolreel")
    with ScriptedServer([tool_calls(("c1", "add", {"a": 1, "b": 2})), text("3")]) as server:

        async def main() -> None:
            async with Client(options(server, auto_execute_tools=False)) as client:
                await client.query("go")
                async for _ in client.events():
                    pass
                await client.add_tool_result("c1", 3)
                await client.wait()

        anyio.run(main)
    assert [line.split(" (")[0] for line in lines(caplog, "toolreel.loop", logging.INFO)] == [
        "round 1: add"
    ]


def test_each_model_request_is_a_debug_line_with_counts_not_headers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="toolreel")
    turn([tool_calls(("c1", "add", {"a": 1, "b": 2})), text("3")], prompt="add them")
    requests = [
        line
        for line in lines(caplog, "toolreel.model", logging.DEBUG)
        if line.startswith("model request")
    ]
    assert len(requests) == 2
    assert "provider=openai model=test iteration=1 retry=0 messages=1 tools=2" in requests[0]
    assert "iteration=2 retry=0 messages=2 tools=2" in requests[1]
    assert all("sk-test" not in line and "uthorization" not in line for line in requests)


def test_tool_calls_are_debug_lines_on_toolreel_tools(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolreel")
    turn([tool_calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "leak", {"word": "x"})), text("3")])
    called = sorted(lines(caplog, "toolreel.tools", logging.DEBUG))
    assert called[0].startswith("tool add [c1] ok (")
    assert called[1].startswith("tool leak [c2] error: ")


def test_no_key_ever_reaches_a_log_record(caplog: pytest.LogCaptureFixture) -> None:
    """The key in the options, echoed by the server, in a tool's error and in the base URL."""
    caplog.set_level(logging.DEBUG, logger="toolreel")
    with ScriptedServer(
        [
            http_error(429, f"rate limited for key {KEY}"),
            tool_calls(("c1", "leak", {"word": "x"})),
            tool_calls(("c2", "add", {"a": 1, "b": 1})),
            text("done"),
        ]
    ) as server:
        base_url = f"http://127.0.0.1:{server.port}/{KEY}/v1"

        async def main() -> None:
            opts = options(server, api_key=KEY, base_url=base_url, max_tool_iterations=5)
            async with Client(opts) as client:
                await client.query("go")
                await client.wait()

        anyio.run(main)
    ours = [r for r in caplog.records if r.name.startswith("toolreel")]
    said = "\n".join(r.getMessage() for r in ours)
    # What each kind of line says, masked: the retry, the tool's error, the request's URL.
    assert "rate limited for key ***" in said
    assert "error: RuntimeError" in said or "auth failed for ***" in said
    assert "base_url=http://127.0.0.1:" in said and "/***/v1" in said
    for record in ours:
        assert KEY[:12] not in record.getMessage()
        assert KEY[:12] not in repr(record.args)
        assert KEY[:12] not in str(record.msg)


def test_the_library_prints_nothing_unless_logging_is_configured() -> None:
    """A capped turn (a warning) in a fresh interpreter that configures no logging."""
    program = """
import logging
import anyio
from toolreel.shell import AgentOptions, Client, tool
from toolreel.shell.scripted import ScriptedServer, tool_calls

assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("toolreel").handlers)
add = tool("add", "Add", {"a": int, "b": int})(lambda args: args["a"] + args["b"])
again = tool_calls(("c", "add", {"a": 1, "b": 1}))
with ScriptedServer([again, again]) as server:
    async def main():
        options = AgentOptions(model="test", base_url=server.url, api_key="sk-test",
                               tools=[add], auto_execute_tools=True, max_tool_iterations=1)
        async with Client(options) as client:
            await client.query("go")
            finish = await client.wait()
            assert finish.max_iterations_reached
    anyio.run(main)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# --- agent runs: the same loggers --------------------------------------------------------


@attrs.frozen
class Answer:
    value: int


def agent_run(script: list[Reply], **definition: Any) -> AgentSuccess[Answer] | AgentFailure:
    """`execute_agent` against `script` with the `add` helper."""
    with ScriptedServer(script) as server:
        agent = AgentDefinition(
            build_prompt=lambda text: text,
            output=OutputTool.of(Answer, name="answer"),
            helpers=[add],
            **definition,
        )
        opts = AgentOptions(model="test", base_url=server.url, api_key="sk-test", retry=FAST)
        return anyio.run(lambda: execute_agent(agent, "1 + 1?", opts))


def test_an_agent_run_logs_retries_rounds_and_requests(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolreel")
    script = [
        http_error(500, "server fell over"),
        tool_calls(("c1", "add", {"a": 1, "b": 1})),
        tool_calls(("c2", "answer", {"value": 2})),
    ]
    assert isinstance(agent_run(script), AgentSuccess)
    [retry] = lines(caplog, "toolreel.model", logging.WARNING)
    assert "server fell over" in retry and "retry 1 in" in retry
    rounds = [line.split(" (")[0] for line in lines(caplog, "toolreel.loop", logging.INFO)]
    assert rounds == ["round 1: add", "round 2: answer"]  # the output tool's call is a round too
    requests = [
        line
        for line in lines(caplog, "toolreel.model", logging.DEBUG)
        if line.startswith("model request")
    ]
    assert len(requests) == 3
    assert "provider=openai model=test iteration=1 retry=1 messages=1 tools=2" in requests[1]


def test_an_agent_attempt_at_the_iteration_cap_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    again = tool_calls(("c", "add", {"a": 1, "b": 1}))
    result = agent_run([again, again], max_iterations_per_attempt=2)
    assert isinstance(result, AgentFailure)
    [warning] = lines(caplog, "toolreel.loop", logging.WARNING)
    assert "iteration cap" in warning and "attempt 1" in warning


class Broken:
    """A telemetry observer whose every callback raises."""

    def __init__(self, info: object) -> None:
        self.info = info

    def __getattr__(self, name: str) -> Any:
        def fail(*args: object) -> None:
            raise RuntimeError(f"broken {name}")

        return fail


def test_an_observer_that_raises_is_logged_and_never_breaks_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolreel")
    add_observer(Broken)
    try:
        finish = turn([tool_calls(("c1", "add", {"a": 1, "b": 2})), text("3")])
    finally:
        remove_observer(Broken)
    assert finish.reason is FinishReason.COMPLETED and finish.text == "3"
    failed = {
        line.split(" failed")[0] for line in lines(caplog, "toolreel.telemetry", logging.WARNING)
    }
    assert failed == {
        "telemetry model_started",
        "telemetry model_ended",
        "telemetry tool_started",
        "telemetry tool_ended",
        "telemetry round_finished",
        "telemetry ended",
    }
