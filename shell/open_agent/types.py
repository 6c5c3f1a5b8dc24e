"""open_agent's options and message blocks: `AgentOptions`, `TextBlock`, `ToolUseBlock`, ...

`AgentOptions` checks itself when built as open_agent's does: `model` and
`base_url` are required and non-empty, `base_url` starts with http:// or
https://; `timeout` is 60 s by default. Blocks are plain mutable records, as
open_agent's dataclasses are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

from toolreel.core import ConfigError
from toolreel.core.record import Record


def _not_empty(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    """Refuse an empty required text field, as open_agent does."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(attribute.name, value, f"{attribute.name} cannot be empty")


def _http_url(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    """Refuse a base URL that is empty or has no http(s) scheme."""
    _not_empty(instance, attribute, value)
    if not value.startswith(("http://", "https://")):
        raise ConfigError("base_url", value, "base_url must start with http:// or https://")


@attrs.define(repr=False)
class AgentOptions(Record):
    """How to reach the model and run the conversation (open_agent's fields and defaults)."""

    system_prompt: str
    model: str = attrs.field(validator=_not_empty)
    base_url: str = attrs.field(validator=_http_url)
    tools: Sequence[Any] = attrs.field(factory=list)
    hooks: Mapping[str, Sequence[Callable[..., Any]]] | None = None
    auto_execute_tools: bool = False
    max_tool_iterations: int = 5
    max_turns: int = 1
    max_tokens: int | None = 4096
    temperature: float = 0.7
    timeout: float = 60.0
    api_key: str = "not-needed"


@attrs.define(repr=False)
class TextBlock(Record):
    """Text from the model (each streamed piece is a block of its own)."""

    text: str
    type: str = "text"


@attrs.define(repr=False)
class ToolUseBlock(Record):
    """A tool call from the model: `input` is what the tool runs with (after PreToolUse)."""

    id: str
    name: str
    input: dict[str, Any]
    type: str = "tool_use"


@attrs.define(repr=False)
class ToolResultBlock(Record):
    """A tool's result, to send back to the model."""

    tool_use_id: str
    content: Any
    is_error: bool = False
    type: str = "tool_result"


@attrs.define(repr=False)
class ToolUseError(Record):
    """A tool call that could not be used: unparsable, unknown, failed, or blocked by a hook."""

    error: str
    raw_data: str | None = None
    type: str = "tool_use_error"


Block: TypeAlias = TextBlock | ToolUseBlock | ToolUseError


@attrs.define(repr=False)
class AssistantMessage(Record):
    """What `query()` yields: the blocks one piece of the response brought."""

    content: list[Block] = attrs.field(factory=list)
    role: str = "assistant"
