"""A user's file: the core's public constructors as a strict-typing project calls them.

Not a test module: `test_typing.py` runs `mypy --strict` over it, so a
constructor whose parameters mypy cannot type (an untyped `converter=tuple`)
fails the suite instead of every user's type check.
"""

from __future__ import annotations

from typing import assert_type

from toolreel.core import LoopConfig, PlainOutput, ReflectiveOutput, ToolSpec, ValidationFinished
from toolreel.core.hooks import HookPoint

add = ToolSpec(name="add", parameters={"type": "object"})
record = ToolSpec(name="record")

config = LoopConfig(tools=(add,), hooks={HookPoint.PRE_TOOL_USE})
assert_type(config.tools, tuple[ToolSpec, ...])
assert_type(config.hooks, frozenset[HookPoint])

from_lists = LoopConfig(tools=[add], hooks=[HookPoint.POST_TOOL_USE], max_iterations=3)
assert_type(from_lists.settings.tools, tuple[ToolSpec, ...])

agent = LoopConfig(output=PlainOutput(tool=record, max_attempts=2), tools=[add])
reflective = LoopConfig(output=ReflectiveOutput(tool=record), tools=(add,))
assert_type(agent.offered, tuple[ToolSpec, ...])

checked = ValidationFinished(attempt=1, problems=["$.total: expected a number"])
assert_type(checked.problems, tuple[str, ...])
