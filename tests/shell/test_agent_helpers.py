"""The agent's helper tools get what the loop's tools have: `max_concurrent_tools`,
`tool_timeout`, PreToolUse/PostToolUse hooks and the options' observers (issue 10)."""

from __future__ import annotations

from typing import Any

import anyio
import attrs

from toolreel.adapters import AgentSession, MemoryJournal, Step
from toolreel.core import (
    HookDecided,
    ResultReason,
    RunTool,
    ToolCall,
    ToolInterrupted,
    ToolResult,
    initial_state,
    step,
)
from toolreel.core.hooks import Blocked
from toolreel.shell import (
    AgentDefinition,
    AgentOptions,
    AgentSuccess,
    OutputTool,
    execute_agent,
    tool,
    verify,
)
from toolreel.shell.hooks import HookDecision, PostToolUseEvent, PreToolUseEvent
from toolreel.testing import MakeScriptedModel, tool_calls


@attrs.frozen
class Answer:
    total: float


FINAL = tool_calls(("out", "answer", {"total": 3}))
THREE_LOOKUPS = tool_calls(*((f"c{i}", "lookup", {"key": f"k{i}"}) for i in range(3)))


class InFlight:
    """Counts helper calls running at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    async def visit(self) -> None:
        """Be in flight across a few checkpoints, so siblings can start meanwhile."""
        self.now += 1
        self.peak = max(self.peak, self.now)
        for _ in range(5):
            await anyio.sleep(0)
        self.now -= 1


def agent(*helpers: Any, **overrides: Any) -> AgentDefinition[str, Answer]:
    return AgentDefinition(
        build_prompt=lambda text: text,
        output=OutputTool.of(Answer, name="answer"),
        helpers=list(helpers),
        **overrides,
    )


def run(
    scripted_model: MakeScriptedModel,
    definition: AgentDefinition[str, Answer],
    replies: list[Any],
    **options: Any,
) -> Any:
    """The agent's result on a scripted model (in-process)."""
    scripted = scripted_model(replies, http=False)
    opts = AgentOptions(model="m", **options)
    return anyio.run(lambda: execute_agent(definition, "go", opts, model=scripted.model))


def counting_lookup(flight: InFlight) -> Any:
    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        await flight.visit()
        return key.upper()

    return lookup


def test_max_concurrent_tools_caps_the_helpers_in_flight(scripted_model: MakeScriptedModel) -> None:
    flight = InFlight()
    definition = agent(counting_lookup(flight))
    result = run(scripted_model, definition, [THREE_LOOKUPS, FINAL], max_concurrent_tools=1)
    assert isinstance(result, AgentSuccess)
    assert flight.peak == 1


def test_without_a_cap_the_helpers_of_a_round_run_at_once(
    scripted_model: MakeScriptedModel,
) -> None:
    flight = InFlight()
    result = run(scripted_model, agent(counting_lookup(flight)), [THREE_LOOKUPS, FINAL])
    assert isinstance(result, AgentSuccess)
    assert flight.peak == 3


def test_tool_timeout_applies_to_helpers(scripted_model: MakeScriptedModel) -> None:
    @tool
    async def lookup(key: str) -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return key

    results: list[tuple[str, str]] = []
    definition = agent(lookup, on_tool_result=lambda _s, name, out: results.append((name, out)))
    replies = [tool_calls(("c1", "lookup", {"key": "a"})), FINAL]
    result = run(scripted_model, definition, replies, tool_timeout=0.01)
    assert isinstance(result, AgentSuccess)
    assert results[0] == ("lookup", "Tool lookup timed out after 0.01 s")


# --- hooks ---------------------------------------------------------------------------


def recording_lookup(received: list[str]) -> Any:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        received.append(key)
        return key.upper()

    return lookup


ONE_LOOKUP = tool_calls(("c1", "lookup", {"key": "a"}))


def test_a_pre_tool_use_block_is_the_error_result_the_model_reads(
    scripted_model: MakeScriptedModel,
) -> None:
    received: list[str] = []
    results: list[tuple[str, str]] = []
    definition = agent(
        recording_lookup(received),
        on_tool_result=lambda _s, name, out: results.append((name, out)),
    )
    hooks = {"pre_tool_use": lambda _e: HookDecision(continue_=False, reason="no lookups")}
    result = run(scripted_model, definition, [ONE_LOOKUP, FINAL], hooks=hooks)
    assert isinstance(result, AgentSuccess)
    assert received == []
    assert results[0] == ("lookup", "Tool call blocked: no lookups")
    history = result.metadata.history
    told = [r for m in history for tool_round in m.tool_rounds for r in tool_round.results]
    assert [(r.content, r.is_error) for r in told if r.name == "lookup"] == [
        ("Tool call blocked: no lookups", True)
    ]


def test_a_modified_input_is_what_the_helper_receives(scripted_model: MakeScriptedModel) -> None:
    received: list[str] = []
    hooks = {"pre_tool_use": lambda _e: HookDecision(modified_input={"key": "b"})}
    result = run(
        scripted_model, agent(recording_lookup(received)), [ONE_LOOKUP, FINAL], hooks=hooks
    )
    assert isinstance(result, AgentSuccess)
    assert received == ["b"]


def test_post_tool_use_is_told_every_helper_result_and_hooks_skip_the_output_tool(
    scripted_model: MakeScriptedModel,
) -> None:
    pre: list[PreToolUseEvent] = []
    post: list[PostToolUseEvent] = []
    hooks = {"pre_tool_use": pre.append, "post_tool_use": post.append}
    result = run(scripted_model, agent(recording_lookup([])), [ONE_LOOKUP, FINAL], hooks=hooks)
    assert isinstance(result, AgentSuccess)
    assert [(e.tool_name, e.tool_input, e.tool_use_id) for e in pre] == [
        ("lookup", {"key": "a"}, "c1")
    ]
    assert [(e.tool_name, e.tool_result, e.is_error) for e in post] == [("lookup", "A", False)]


def test_a_journaled_run_replays_without_running_its_hooks_again(
    scripted_model: MakeScriptedModel,
) -> None:
    asked: list[str] = []

    def gate(event: PreToolUseEvent) -> HookDecision:
        asked.append(event.tool_name)
        return HookDecision(continue_=False, reason="no")

    journal = MemoryJournal()
    result = run(
        scripted_model,
        agent(recording_lookup([])),
        [ONE_LOOKUP, FINAL],
        hooks={"pre_tool_use": gate},
        journal=journal,
        session_id="s",
    )
    assert isinstance(result, AgentSuccess)
    session = verify(journal, "s")
    assert isinstance(session, AgentSession)
    assert asked == ["lookup"]
    decided = [e.event for e in journal.entries("s") if isinstance(e.event, HookDecided)]
    assert decided == [HookDecided(hook_id="pre:c1", decision=Blocked(reason="no"))]  # as a chat's
    results = [r for m in result.metadata.history for t in m.tool_rounds for r in t.results]
    [read] = [r for r in results if r.call_id == "c1"]
    assert (read.content, read.is_error) == ("Tool call blocked: no", True)


# --- observers -----------------------------------------------------------------------


def test_the_options_observers_are_told_of_helper_calls_and_results(
    scripted_model: MakeScriptedModel,
) -> None:
    told: list[object] = []
    definition = agent(
        recording_lookup([]),
        on_tool_call=lambda _s, name, _input: told.append(("definition call", name)),
        on_tool_result=lambda _s, name, _out: told.append(("definition result", name)),
    )
    result = run(
        scripted_model,
        definition,
        [ONE_LOOKUP, FINAL],
        on_tool_call=told.append,
        on_tool_result=told.append,
    )
    assert isinstance(result, AgentSuccess)
    helper_part = told[:4]
    assert helper_part == [
        ("definition call", "lookup"),
        ToolCall(id="c1", name="lookup", arguments='{"key": "a"}'),
        ("definition result", "lookup"),
        ToolResult(call_id="c1", name="lookup", content="A"),
    ]
    assert [entry for entry in told[4:] if not isinstance(entry, tuple)] == []


def test_the_observers_see_a_blocked_call_as_the_error_the_model_reads(
    scripted_model: MakeScriptedModel,
) -> None:
    results: list[ToolResult] = []
    hooks = {"pre_tool_use": lambda _e: HookDecision(continue_=False, reason="no")}
    run(
        scripted_model,
        agent(recording_lookup([])),
        [ONE_LOOKUP, FINAL],
        hooks=hooks,
        on_tool_result=results.append,
    )
    blocked = ResultReason.BLOCKED
    assert results == [
        ToolResult(
            call_id="c1",
            name="lookup",
            content="Tool call blocked: no",
            is_error=True,
            reason=blocked,
        )
    ]


# --- resume after a crash ------------------------------------------------------------


def crashed_while_running_lookup(scripted_model: MakeScriptedModel, helper: Any) -> MemoryJournal:
    """A journal whose run stopped right after its `lookup` call was saved, before its outcome."""
    whole = MemoryJournal()
    run(scripted_model, agent(helper), [ONE_LOOKUP, FINAL], journal=whole, session_id="s")
    config = whole.config("s")
    assert config.structured
    crashed = MemoryJournal()
    lease = crashed.begin("s", config)
    state = initial_state(config)
    for entry in whole.entries("s"):
        state, effects = step(state, entry.event)
        crashed.append("s", [Step(seq=entry.seq, event=entry.event, effects=effects)])
        if any(isinstance(effect, RunTool) for effect in effects):
            break
    crashed.release(lease)
    return crashed


def test_an_interrupted_run_resumes_and_a_lost_helper_call_is_not_run_again(
    scripted_model: MakeScriptedModel,
) -> None:
    received: list[str] = []
    journal = crashed_while_running_lookup(scripted_model, recording_lookup(received))
    received.clear()
    result = run(
        scripted_model, agent(recording_lookup(received)), [FINAL], journal=journal, session_id="s"
    )
    assert isinstance(result, AgentSuccess)
    assert result.output == Answer(total=3)
    assert received == []
    lost = [e.event for e in journal.entries("s") if isinstance(e.event, ToolInterrupted)]
    assert lost == [ToolInterrupted(call_id="c1")]
    results = [r for m in result.metadata.history for t in m.tool_rounds for r in t.results]
    [result] = [r for r in results if r.call_id == "c1"]
    assert (result.call_id, result.content, result.is_error) == (
        "c1",
        "interrupted; outcome unknown",
        True,
    )
    assert isinstance(verify(journal, "s"), AgentSession)


def test_an_idempotent_helper_call_without_outcome_runs_again_on_resume(
    scripted_model: MakeScriptedModel,
) -> None:
    received: list[str] = []

    @tool(idempotent=True)
    def lookup(key: str) -> str:
        """Look a key up (safe to repeat)."""
        received.append(key)
        return key.upper()

    journal = crashed_while_running_lookup(scripted_model, lookup)
    received.clear()
    result = run(scripted_model, agent(lookup), [FINAL], journal=journal, session_id="s")
    assert isinstance(result, AgentSuccess)
    assert received == ["a"]
    assert isinstance(verify(journal, "s"), AgentSession)
