"""toolreel.open_agent: open-agent-sdk's API on toolreel — change the import, keep the code.

    from toolreel.open_agent import Client, AgentOptions, TextBlock, ToolUseBlock, tool

The names and behaviour of open-agent-sdk 0.4.2 (`query`, `Client`,
`AgentOptions`, the blocks, `tool`/`Tool`, the hooks), laid out in the same
modules (`.client`, `.types`, `.tools`, `.hooks`, `.config`, `.context`,
`.utils`). The model is an `openai.AsyncOpenAI` made by
`toolreel.open_agent.client.create_client` and read through
`toolreel.adapters.openai_sdk_model` (install `toolreel[openai]`). The loop is
toolreel's own (`toolreel.core.step` through the shell's Runner) with open_agent's
rules as core policies on `LoopConfig`, so sessions journal and replay; the
conversation is kept as toolreel records. `toolreel.shell.Client` is toolreel's
own, richer API (journals, retries, parallel tools); docs/coming-from/open-agent.md
lists where the two differ.
"""

from ._errors import ContentTypeError, ModelError, NothingToReceive, PromptBlocked, ResultsOwed
from .client import Client, query
from .hooks import (
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HOOK_USER_PROMPT_SUBMIT,
    HookDecision,
    HookEvent,
    HookHandler,
    PostToolUseEvent,
    PreToolUseEvent,
    UserPromptSubmitEvent,
)
from .tools import Tool, tool
from .types import (
    AgentOptions,
    AssistantMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
)

__all__ = [
    "HOOK_POST_TOOL_USE",
    "HOOK_PRE_TOOL_USE",
    "HOOK_USER_PROMPT_SUBMIT",
    "AgentOptions",
    "AssistantMessage",
    "Client",
    "ContentTypeError",
    "HookDecision",
    "HookEvent",
    "HookHandler",
    "ModelError",
    "NothingToReceive",
    "PostToolUseEvent",
    "PreToolUseEvent",
    "PromptBlocked",
    "ResultsOwed",
    "TextBlock",
    "Tool",
    "ToolResultBlock",
    "ToolUseBlock",
    "ToolUseError",
    "UserPromptSubmitEvent",
    "query",
    "tool",
]
