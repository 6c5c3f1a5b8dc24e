"""Hooks: the caller's functions the loop asks before a prompt and a tool call, and tells after.

Set them on `AgentOptions(hooks=...)` or `AgentRunOptions(hooks=...)`, keyed by
point (`HOOK_PRE_TOOL_USE`, `HOOK_POST_TOOL_USE`, `HOOK_USER_PROMPT_SUBMIT`; the
core's names, "PreToolUse", ..., and `toolreel.core.hooks.HookPoint` work too), a
list of hooks or one per point. A hook is given the point's event
(`PreToolUseEvent`, `PostToolUseEvent`, `UserPromptSubmitEvent`) and returns a
`HookDecision`, or None to allow; sync or async. The core asks them (`AskHook`) and
journals each decision, so a replay needs no hook.

`hook_points`, `call_hook` and `decide` are how toolreel runs them (the shell's
runner, toolreel.temporal's activities and toolreel.open_agent use them): hooks by
core point, one hook called, and the core `Decision` a list of hooks comes to.
"""

from __future__ import annotations

from ._hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    Hook,
    HookDecision,
    HookEvent,
    HookResult,
    Hooks,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
    call_hook,
    decide,
    hook_points,
)

__all__ = [
    "HOOK_POST_TOOL_USE",
    "HOOK_PRE_TOOL_USE",
    "HOOK_USER_PROMPT_SUBMIT",
    "Hook",
    "HookDecision",
    "HookEvent",
    "HookResult",
    "Hooks",
    "PostToolUseEvent",
    "PreToolUseEvent",
    "UserPromptSubmitEvent",
    "call_hook",
    "decide",
    "hook_points",
]
