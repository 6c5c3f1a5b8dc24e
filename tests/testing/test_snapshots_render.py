"""Transcripts: retried model calls where they happened, and `hide=` rules (chat and agent)."""

from __future__ import annotations

import anyio
import attrs
import pytest

from toolreel.adapters import MemoryJournal, Retry, load_session, render_transcript
from toolreel.core import ConfigError
from toolreel.core.policies import RetryPolicy
from toolreel.shell import (
    AgentDefinition,
    AgentSuccess,
    Client,
    OutputTool,
    execute_agent,
    load_agent_session,
    tool,
)
from toolreel.testing import ScriptedModel, http_error, text, tool_calls

QUICK = RetryPolicy(max_retries=3, base_delay=0.0, max_delay=0.0)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def chat(replies: list) -> str:
    """The transcript of one turn "go" answered by `replies` (journaled, then loaded)."""
    model = ScriptedModel(replies, http=False)
    journal = MemoryJournal()
    options = model.options(
        tools=[add], auto_execute_tools=True, retry=QUICK, journal=journal, session_id="s"
    )

    async def main() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("go")
            await client.wait()

    anyio.run(main)
    return load_session(journal, "s")


RETRIED = [
    tool_calls(("c1", "add", {"a": 1, "b": 2})),
    http_error(429, "slow down"),
    http_error(503, "busy"),
    text("3"),
]


def test_a_retried_call_shows_before_what_its_retry_produced() -> None:
    session = chat(RETRIED)
    assert session.turns[0].retries == (
        Retry(
            scope=1,
            iteration=2,
            retry=1,
            seconds=0.0,
            message="HTTP 429: slow down",
            status=429,
        ),
        Retry(
            scope=1,
            iteration=2,
            retry=2,
            seconds=0.0,
            message="HTTP 503: busy",
            status=503,
        ),
    )
    lines = render_transcript(session).splitlines()
    first = lines.index("↻ model call 2 failed (HTTP 429: slow down): retry 1 after 0 s")
    assert lines[first + 1] == "↻ model call 2 failed (HTTP 503: busy): retry 2 after 0 s"
    assert lines.index("### Round 1") < first < lines.index("**Assistant:** 3")


def test_hide_leaves_out_usage_ids_timings_and_retries() -> None:
    session = chat(RETRIED)
    full = render_transcript(session, ids=True)
    assert "tokens" in full and "[c1]" in full and "after 0 s" in full
    quiet = render_transcript(session, ids=True, hide=("usage", "ids", "timings"))
    assert "tokens" not in quiet and "[c1]" not in quiet and "# Session\n" in quiet
    assert "retry 1\n" in quiet and "after" not in quiet
    assert "↻" not in render_transcript(session, hide=["retries"])
    assert "_completed · 2 iterations_" in quiet and quiet.endswith("Total: 1 turn\n")


def test_an_unknown_hide_name_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="names among ids, retries, timings, usage"):
        render_transcript(chat([text("hi")]), hide=("timestamps",))


@attrs.frozen
class Total:
    total: int


def test_an_agent_runs_retries_show_in_their_attempt_and_hide_applies() -> None:
    model = ScriptedModel(
        [http_error(429, "slow down"), tool_calls(("c1", "record_total", {"total": 3}))],
        http=False,
    )
    journal = MemoryJournal()
    definition = AgentDefinition(
        build_prompt=lambda source: f"Sum {source}",
        output=OutputTool.of(Total, name="record_total"),
    )
    result = anyio.run(
        lambda: execute_agent(
            definition,
            "1 2",
            model.options(retry=QUICK),
            model=model.model,
            journal=journal,
            session_id="run",
        )
    )
    assert isinstance(result, AgentSuccess)
    session = load_agent_session(journal, "run")
    transcript = render_transcript(session)
    line = "↻ model call 1 failed (HTTP 429: slow down): retry 1 after 0 s"
    assert transcript.index("## Attempt 1") < transcript.index(line) < transcript.index("## Output")
    quiet = render_transcript(session, hide=("usage", "retries"))
    assert "↻" not in quiet and "tokens" not in quiet
