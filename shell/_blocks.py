"""What `Client.receive_messages()` yields, as open_agent names it."""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs


@attrs.frozen(kw_only=True)
class TextBlock:
    """Text the model wrote in one response."""

    text: str


@attrs.frozen(kw_only=True)
class ToolUseBlock:
    """A tool call the model made (yielded before it runs, for visibility)."""

    id: str
    name: str
    input: dict[str, Any]


@attrs.frozen(kw_only=True)
class ToolUseError:
    """A call that failed, was unknown, or was blocked; the model sees `error` too."""

    tool_use_id: str
    tool_name: str
    error: str


Block: TypeAlias = TextBlock | ToolUseBlock | ToolUseError
