"""open_agent's low-level helpers: the OpenAI client, request messages and tools, stream parsing.

    create_client(options)        an `openai.AsyncOpenAI` for options.base_url, api_key, timeout
                                  (the one of `.client`, where the Client looks it up)
    format_messages(system, user, history=None)
                                  [system message, *history, user message] for a request
    format_tools(tools)           each tool's OpenAI function definition
    ToolCallAggregator()          reads streamed chunks: `process_chunk` returns the new text
                                  as a TextBlock; `finalize_tools` returns the tool calls
                                  assembled from their fragments (ToolUseBlock, or
                                  ToolUseError for a call without id/name or with bad JSON)

toolreel's own `Client` does not use these: it streams through the model port and
toolreel's OpenAI codec. They are here, with open_agent's names and behaviour, for
code written against `open_agent.utils`. The aggregator reads chunk objects as the
openai package makes them (attributes), or plain dicts of the same shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from .client import create_client
from .types import TextBlock, ToolUseBlock, ToolUseError

__all__ = [
    "ToolCallAggregator",
    "create_client",
    "format_messages",
    "format_tools",
]


class _OpenAITool(Protocol):
    """A tool that can describe itself as an OpenAI function (open_agent's `Tool`)."""

    def to_openai_format(self) -> dict[str, Any]:
        """The tool's {"type": "function", "function": {...}} definition."""
        ...


def format_messages(
    system_prompt: str, user_prompt: str, history: Sequence[Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The request's messages: the system prompt, the history as given, then the user's."""
    return [
        {"role": "system", "content": system_prompt},
        *(dict(message) for message in history or ()),
        {"role": "user", "content": user_prompt},
    ]


def format_tools(tools: Iterable[_OpenAITool]) -> list[dict[str, Any]]:
    """The request's `tools`: each tool's own OpenAI function definition."""
    return [tool.to_openai_format() for tool in tools]


class ToolCallAggregator:
    """Reads one streamed response: text as it comes, tool calls once complete."""

    def __init__(self) -> None:
        """Nothing received yet."""
        #: Tool calls being assembled, by their stream index: id, name, arguments_buffer.
        self.pending_tools: dict[int, dict[str, Any]] = {}
        self._text = ""

    def process_chunk(self, chunk: Any) -> TextBlock | None:
        """Take one chunk: remember tool-call fragments; return its new text, if any."""
        choices = _field(chunk, "choices") or ()
        if not choices:
            return None
        delta = _field(choices[0], "delta")
        if delta is None:
            return None
        for position, call in enumerate(_field(delta, "tool_calls") or ()):
            self._add_fragment(position, call)
        text = self._new_text(_text_of(_field(delta, "content")))
        return TextBlock(text=text) if text else None

    def finalize_tools(self) -> list[ToolUseBlock | ToolUseError]:
        """The assembled tool calls in stream order; then start afresh for the next response."""
        pending, self.pending_tools, self._text = self.pending_tools, {}, ""
        return [_finished(pending[index]) for index in sorted(pending)]

    def _add_fragment(self, position: int, call: Any) -> None:
        """Fold one tool-call fragment into the call of its index."""
        index = _field(call, "index")
        entry = self.pending_tools.setdefault(
            index if isinstance(index, int) else position,
            {"id": None, "name": None, "arguments_buffer": ""},
        )
        if call_id := _field(call, "id"):
            entry["id"] = call_id
        function = _field(call, "function")
        if function is None:
            return
        if name := _field(function, "name"):
            entry["name"] = name
        if arguments := _field(function, "arguments"):
            entry["arguments_buffer"] += arguments

    def _new_text(self, text: str) -> str:
        """The part of `text` not seen yet: some servers resend the whole text every chunk."""
        if self._text and text.startswith(self._text):
            text = text[len(self._text) :]
        self._text += text
        return text


def _finished(entry: Mapping[str, Any]) -> ToolUseBlock | ToolUseError:
    """One assembled call as a ToolUseBlock, or a ToolUseError saying what is wrong with it."""
    call_id, name = entry.get("id"), entry.get("name")
    raw = str(entry.get("arguments_buffer") or "")
    if not call_id or not name:
        return ToolUseError(
            error=f"Tool call missing required fields (id={call_id!r}, name={name!r})",
            raw_data=raw,
        )
    if not raw.strip():
        return ToolUseBlock(id=call_id, name=name, input={})
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolUseError(error=f"Invalid JSON in arguments of {name}: {exc}", raw_data=raw)
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        return ToolUseError(
            error=f"Invalid JSON in arguments of {name}: an object is needed, not a {kind}",
            raw_data=raw,
        )
    return ToolUseBlock(id=call_id, name=name, input=arguments)


def _field(value: Any, name: str) -> Any:
    """An attribute of an SDK object, or the key of a dict of the same shape; else None."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _text_of(content: Any) -> str:
    """A delta's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(_field(part, "text") or "") for part in content)
    return ""
