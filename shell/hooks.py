"""Hooks: the caller's functions the loop asks before a prompt and a tool call, and tells after.

Set them on `AgentOptions(hooks=...)` or `AgentRunOptions(hooks=...)`, keyed by
point (`HOOK_PRE_TOOL_USE`, `HOOK_POST_TOOL_USE`, `HOOK_USER_PROMPT_SUBMIT`; the
core's names, "PreToolUse", ..., and `toolreel.core.hooks.HookPoint` work too), a
list of hooks or one per point. A hook is given the point's event
(`PreToolUseEvent`, `PostToolUseEvent`, `UserPromptSubmitEvent`) and returns a
`HookDecision`, or None to allow; sync or async. The core asks them (`AskHook`) and
journals each decision, so a replay needs no hook.

How toolreel runs them (`hook_points`, `call_hook`, `decide`) is in
`toolreel.shell.engine`, for toolreel's own extension packages.
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
]
