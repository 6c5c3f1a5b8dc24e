"""Whole conversations from the design notes, folded through `step` and snapshotted."""

from __future__ import annotations

import pytest
from loop import WEATHER, call, config, done, text
from render import scenario

from toolreel.core import (
    Cancelled,
    HookDecided,
    ModelCallFailed,
    PromptSubmitted,
    TimerFired,
    ToolFinished,
    ToolSpec,
)
from toolreel.core.hooks import Allowed, Blocked, HookPoint
from toolreel.core.policies import MaxIterationsPolicy, RetryPolicy

CALCULATOR = (
    ToolSpec(name="add", description="Add two numbers"),
    ToolSpec(name="divide", description="Divide a by b"),
)
GITHUB = (
    ToolSpec(name="github_search", description="Search GitHub repositories"),
    ToolSpec(name="github_star", description="Star a repository"),
)
CALENDAR = (
    ToolSpec(name="list_events", description="Events on a day"),
    ToolSpec(name="free_slots", description="Free slots on a day"),
)


def test_weather_in_tokyo_single_round(snapshot) -> None:
    events = [
        PromptSubmitted(text="What's the weather in Tokyo?"),
        *text("Let me check ", "the weather for you..."),
        *call(0, "call_1", "weather_lookup", '{"city": "Tokyo"}'),
        done("tool_calls", 50, 12),
        ToolFinished(call_id="call_1", output='{"condition": "sunny", "temp": 22}'),
        *text("The weather in Tokyo ", "is 22°C and sunny!"),
        done("stop", 80, 10),
    ]
    assert scenario(config(tools=(WEATHER,)), events) == snapshot


def test_find_the_top_swift_repo_and_star_it_in_two_rounds(snapshot) -> None:
    events = [
        PromptSubmitted(text="Find the top GitHub repo for Swift and star it"),
        *text("I'll search for the top Swift repository..."),
        *call(0, "call_1", "github_search", '{"query": "language:swift", "sort": "stars"}'),
        done("tool_calls"),
        ToolFinished(
            call_id="call_1",
            output='{"repos": [{"name": "swift", "owner": "apple", "stars": 65000}]}',
        ),
        *text("Found it! Now let me star it for you..."),
        *call(0, "call_2", "github_star", '{"owner": "apple", "repo": "swift"}'),
        done("tool_calls"),
        ToolFinished(call_id="call_2", output='{"success": true}'),
        *text("Done! I've starred apple/swift - it has 65,000 stars!"),
        done(),
    ]
    assert scenario(config(tools=GITHUB), events) == snapshot


def test_calculator_25_plus_17(snapshot) -> None:
    events = [
        PromptSubmitted(text="What is 25 plus 17?"),
        *call(0, "call_add", "add", '{"a": 25, "b": 17}', pieces=5),
        done("tool_calls"),
        ToolFinished(call_id="call_add", output="42"),
        *text("25 plus 17 is 42."),
        done(),
    ]
    assert scenario(config(tools=CALCULATOR), events) == snapshot


def test_divide_by_zero_is_an_error_the_model_recovers_from(snapshot) -> None:
    events = [
        PromptSubmitted(text="What is 1 divided by 0?"),
        *call(0, "call_div", "divide", '{"a": 1, "b": 0}'),
        done("tool_calls"),
        ToolFinished(
            call_id="call_div", output="ZeroDivisionError: division by zero", is_error=True
        ),
        *text("Dividing by zero is undefined."),
        done(),
    ]
    assert scenario(config(tools=CALCULATOR), events) == snapshot


def test_unknown_tool(snapshot) -> None:
    events = [
        PromptSubmitted(text="What is 2 to the power 10?"),
        *call(0, "call_pow", "power", '{"a": 2, "b": 10}'),
        done("tool_calls"),
        *text("I have no power tool; 2^10 is 1024."),
        done(),
    ]
    assert scenario(config(tools=CALCULATOR), events) == snapshot


def test_hook_blocks_a_call_and_the_model_sees_why(snapshot) -> None:
    events = [
        PromptSubmitted(text="Star apple/swift"),
        *call(0, "call_star", "github_star", '{"owner": "apple", "repo": "swift"}'),
        done("tool_calls"),
        HookDecided(hook_id="pre:call_star", decision=Blocked(reason="starring is disabled")),
        *text("I'm not allowed to star repositories."),
        done(),
    ]
    cfg = config(tools=GITHUB, hooks={HookPoint.PRE_TOOL_USE})
    assert scenario(cfg, events) == snapshot


def test_two_parallel_calendar_tools_finishing_in_reverse_order(snapshot) -> None:
    events = [
        PromptSubmitted(text="When am I free on Monday?"),
        *call(0, "call_events", "list_events", '{"day": "monday"}'),
        *call(1, "call_slots", "free_slots", '{"day": "monday"}'),
        done("tool_calls"),
        HookDecided(hook_id="pre:call_slots", decision=Allowed()),
        HookDecided(hook_id="pre:call_events", decision=Allowed()),
        ToolFinished(call_id="call_slots", output='["10:00", "15:00"]'),
        ToolFinished(call_id="call_events", output='["standup 09:30"]'),
        *text("You are free at 10:00 and 15:00."),
        done(),
    ]
    cfg = config(tools=CALENDAR, hooks={HookPoint.PRE_TOOL_USE})
    assert scenario(cfg, events) == snapshot


@pytest.mark.parametrize("policy", list(MaxIterationsPolicy), ids=lambda p: p.value)
def test_max_iterations_3(policy: MaxIterationsPolicy, snapshot) -> None:
    events = [PromptSubmitted(text="Keep adding one.")]
    for i in range(1, 4):
        events += [*call(0, f"call_{i}", "add", f'{{"a": {i}, "b": 1}}'), done("tool_calls")]
        events.append(ToolFinished(call_id=f"call_{i}", output=str(i + 1)))
    if policy is MaxIterationsPolicy.FINAL_ANSWER:
        events += [*text("After three additions the total is 4."), done()]
    cfg = config(tools=CALCULATOR, max_iterations=3, on_max_iterations=policy)
    assert scenario(cfg, events) == snapshot


def test_429_retried_then_success(snapshot) -> None:
    events = [
        PromptSubmitted(text="Hi"),
        *text("Hel"),
        ModelCallFailed(retryable=True, message="Rate limit reached", status=429, retry_after=2),
        TimerFired(token="retry:1:1:1"),
        *text("Hello!"),
        done(),
    ]
    cfg = config(retry=RetryPolicy(max_retries=2))
    assert scenario(cfg, events) == snapshot


def test_cancel_mid_tool(snapshot) -> None:
    events = [
        PromptSubmitted(text="When am I free on Monday?"),
        *call(0, "call_events", "list_events", '{"day": "monday"}'),
        *call(1, "call_slots", "free_slots", '{"day": "monday"}'),
        done("tool_calls"),
        ToolFinished(call_id="call_events", output='["standup 09:30"]'),
        Cancelled(),
        ToolFinished(call_id="call_slots", output='["10:00"]'),
    ]
    assert scenario(config(tools=CALENDAR), events) == snapshot
