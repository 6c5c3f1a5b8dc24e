"""Offline re-execution serves the recorded outputs for plain-function tools too."""

from __future__ import annotations

from pathlib import Path

import anyio

from toolreel.core.outcomes import FinishReason
from toolreel.shell import AgentOptions, Client, Recording
from toolreel.testing import MakeScriptedModel, text, tool_calls

RUNS: list[tuple[int, int]] = []


def add(a: int, b: int) -> int:
    """Add two integers (a plain function: AgentOptions wraps it with `tool`)."""
    RUNS.append((a, b))
    return a + b


def test_a_rerun_answers_plain_function_tools_from_the_recording(
    tmp_path: Path, scripted_model: MakeScriptedModel
) -> None:
    model = scripted_model([tool_calls(("c1", "add", {"a": 2, "b": 3})), text("5")], http=False)
    journal = tmp_path / "calc.jsonl"
    options = model.options(
        tools=[add], auto_execute_tools=True, journal=str(journal), session_id="s"
    )

    async def record() -> None:
        async with Client(options, model=model.model) as client:
            await client.query("2 + 3?")
            await client.wait()

    anyio.run(record)
    RUNS.clear()
    recording = Recording.from_file(journal, "s")
    offline = AgentOptions(model="scripted", tools=[add], auto_execute_tools=True)
    assert anyio.run(recording.rerun, offline) == [FinishReason.COMPLETED]
    assert RUNS == []  # the recorded output answered: the function did not run
