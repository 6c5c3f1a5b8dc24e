"""How far a prompt travels before the reducer sees it (issue 22: "a prompt reaches `step`
in at most 4 toolreel frames").

One real turn through `Client.query` over HTTP to a scripted OpenAI-compatible server on
127.0.0.1 (one tool call, two model calls), with the runner's `step` wrapped: the wrapper
notes, for each event, the toolreel frames on the stack above it. Frames are counted, not
timed: the Driver owns the turn's lifecycle (shell/_driver.py), telemetry only observes it.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import anyio
import pytest

import toolreel.shell._runner
from toolreel.core import Effect, Event, State, step
from toolreel.shell import AgentOptions, Client, tool
from toolreel.shell.scripted import ScriptedServer, text, tool_calls


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def toolreel_frames() -> list[str]:
    """The toolreel functions on the caller's caller's stack, outermost first."""
    frames = []
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("toolreel."):
            frames.append(f"{frame.f_globals['__name__']}.{frame.f_code.co_qualname}")
        frame = frame.f_back
    return frames[::-1]


@pytest.fixture
def stacks(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """The toolreel frames above `step` when it first received each kind of event."""
    seen: dict[str, list[str]] = {}

    def spied(state: State, event: Event) -> tuple[State, tuple[Effect, ...]]:
        seen.setdefault(type(event).__name__, toolreel_frames())
        return step(state, event)

    monkeypatch.setattr(toolreel.shell._runner, "step", spied)
    return seen


def one_turn() -> None:
    """A prompt, a tool call and an answer, through the public Client."""
    script = [tool_calls(("c1", "add", {"a": 1, "b": 2})), text("3")]

    async def main(url: str) -> Any:
        options = AgentOptions(
            model="m", base_url=url, api_key="x", tools=[add], auto_execute_tools=True
        )
        async with Client(options) as client:
            await client.query("What is 1 plus 2?")
            return await client.wait()

    with ScriptedServer(script) as server:
        finish = anyio.run(main, server.url)
    assert finish is not None and finish.text == "3"


def test_a_prompt_reaches_step_in_four_toolreel_frames(stacks: dict[str, list[str]]) -> None:
    one_turn()
    assert stacks["PromptSubmitted"] == [
        "toolreel.shell._turn_task.TurnTask.start.<locals>.turn",
        "toolreel.shell._driver.Driver.run",
        "toolreel.shell._driver.Driver.feed",
        "toolreel.shell._runner.Runner._reduce",
    ]


def test_a_streamed_event_reaches_step_through_the_stream_alone(
    stacks: dict[str, list[str]],
) -> None:
    one_turn()
    for kind in ("TextDelta", "ToolCallStarted", "ModelResponded"):
        assert stacks[kind] == [
            "toolreel.shell._turn_task.TurnTask.start.<locals>.turn",
            "toolreel.shell._driver.Driver.run",
            "toolreel.shell._driver.Driver._loop",
            "toolreel.shell._driver.Driver._stream",
            "toolreel.shell._driver.Driver.feed",
            "toolreel.shell._runner.Runner._reduce",
        ], kind
    assert len(stacks["ToolFinished"]) == 5  # from the inbox: `_loop` feeds it
