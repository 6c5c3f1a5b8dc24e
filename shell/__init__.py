"""toolreel.shell: the effect interpreter and the public APIs.

`Client`/`AgentOptions`/`tool` (open_agent compatible), `run()` for scripts,
hooks (`HookDecision`, `PreToolUseEvent`, ...), blocks (`TextBlock`,
`ToolUseBlock`, `ToolUseError`) and the `Runner` that carries out the core's
effects.
"""

from ._blocks import Block, TextBlock, ToolUseBlock, ToolUseError
from ._client import Client, RunFailed, RunResult, ToolreelError, open_journal, run
from ._hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)
from ._options import AgentOptions
from ._runner import Observers, RunMetadata, Runner
from ._tools import Tool, tool

__all__ = [
    "HOOK_POST_TOOL_USE",
    "HOOK_PRE_TOOL_USE",
    "HOOK_USER_PROMPT_SUBMIT",
    "AgentOptions",
    "Block",
    "Client",
    "HookDecision",
    "Observers",
    "PostToolUseEvent",
    "PreToolUseEvent",
    "RunFailed",
    "RunMetadata",
    "RunResult",
    "Runner",
    "TextBlock",
    "Tool",
    "ToolUseBlock",
    "ToolUseError",
    "ToolreelError",
    "UserPromptSubmitEvent",
    "open_journal",
    "run",
    "tool",
]
