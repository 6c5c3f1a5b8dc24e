"""LoopConfig and its policies (core/_config.py)."""

from __future__ import annotations

import pytest

from toolreel.core import LoopConfig, ToolSpec
from toolreel.core.policies import RetryPolicy


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay=0.5, multiplier=2, max_delay=3)
    assert [policy.delay(n, None) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_provider_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(base_delay=1, max_retry_after=60)
    assert policy.delay(0, 12.5) == 12.5
    assert policy.delay(3, 600) == 60


def test_tool_choice_must_be_a_mode_or_a_configured_tool() -> None:
    assert LoopConfig(tools=(ToolSpec(name="add"),), tool_choice="add").tool_choice == "add"
    with pytest.raises(ValueError, match="tool_choice names no configured tool: mul"):
        LoopConfig(tools=(ToolSpec(name="add"),), tool_choice="mul")


def test_invalid_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        LoopConfig(max_iterations=0)
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)


def test_tools_given_as_a_list_are_held_as_a_tuple() -> None:
    config = LoopConfig(tools=[ToolSpec(name="a"), ToolSpec(name="b")])
    assert config.tools == (ToolSpec(name="a"), ToolSpec(name="b"))
    assert config.tool_names == frozenset({"a", "b"})
