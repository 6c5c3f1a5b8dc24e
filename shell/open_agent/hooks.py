"""open_agent's hooks: events, `HookDecision`, the hook names, and how hooks run.

Hooks run in the order registered, each awaited (sync ones called); the first
that returns a decision (not None) decides and the rest are not asked. An
exception from a hook goes to the caller. Semantics (see `Client`):

- PreToolUse: `continue_=False` yields a `ToolUseError` with the reason instead
  of the call and ends the turn (no further model call); `modified_input` is
  what the `ToolUseBlock` shows and the tool runs with.
- PostToolUse: told each result (`tool_result` is the tool's own value, not
  text); its decision is ignored.
- UserPromptSubmit: `continue_=False` makes `query()` raise; `modified_prompt`
  is what is sent and kept. Never asked on a continuation (`query("")` after
  tool results, or auto mode's next call).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from toolreel.core.record import Record

HOOK_PRE_TOOL_USE = "pre_tool_use"
HOOK_POST_TOOL_USE = "post_tool_use"
HOOK_USER_PROMPT_SUBMIT = "user_prompt_submit"


@attrs.define(repr=False)
class PreToolUseEvent(Record):
    """A tool call, before it is shown (and, in auto mode, run)."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_use_id: str
    history: list[dict[str, Any]] = attrs.field(factory=list)


@attrs.define(repr=False)
class PostToolUseEvent(Record):
    """A tool result, once it is in the history (`tool_result` as the tool returned it)."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_result: Any
    tool_use_id: str
    history: list[dict[str, Any]] = attrs.field(factory=list)


@attrs.define(repr=False)
class UserPromptSubmitEvent(Record):
    """A user prompt, before it is sent."""

    prompt: str
    history: list[dict[str, Any]] = attrs.field(factory=list)


@attrs.define(repr=False)
class HookDecision(Record):
    """Go on (perhaps with a changed input or prompt), or stop, and why."""

    continue_: bool = True
    modified_input: dict[str, Any] | None = None
    modified_prompt: str | None = None
    reason: str | None = None


HookEvent: TypeAlias = PreToolUseEvent | PostToolUseEvent | UserPromptSubmitEvent
HookHandler: TypeAlias = Callable[[Any], Awaitable[HookDecision | None] | HookDecision | None]
Hooks: TypeAlias = Mapping[str, Sequence[HookHandler]]


async def run_hooks(hooks: Hooks | None, point: str, event: HookEvent) -> HookDecision | None:
    """The first decision the hooks registered at `point` return for `event`, if any."""
    for handler in (hooks or {}).get(point, ()):
        answer = handler(event)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, HookDecision):
            return answer
    return None
