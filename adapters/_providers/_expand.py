"""Expanding compact history into the turn sequence every provider's messages follow.

Seed 001's algorithm: an assistant message with `tool_rounds` expands, per
round, into the text streamed before the calls, the calls, then their
results; after the rounds comes the final text. Here a round's text, reasoning
and calls form one `ModelTurn` (one assistant message: what one response
said), since Anthropic requires it and OpenAI and Gemini accept it; its
results form one `ResultsTurn`. Each codec maps these turns to its own shapes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeAlias

import attrs

from toolreel.core import ChatMessage, ImagePart, Reasoning, ToolCall, ToolResult


@attrs.frozen(kw_only=True)
class UserTurn:
    """A user's text, and the images that follow it."""

    text: str
    images: tuple[ImagePart, ...] = ()


@attrs.frozen(kw_only=True)
class ModelTurn:
    """One model response: reasoning blocks, text, then tool calls (any may be empty)."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    reasoning: tuple[Reasoning, ...] = ()


@attrs.frozen(kw_only=True)
class ResultsTurn:
    """The results of one response's calls, in call order."""

    results: tuple[ToolResult, ...]
    calls: tuple[ToolCall, ...]


Turn: TypeAlias = UserTurn | ModelTurn | ResultsTurn


def expand(messages: Sequence[ChatMessage]) -> Iterator[Turn]:
    """The turns of `messages`, in order; empty assistant text without calls is skipped."""
    for message in messages:
        if message.role == "user":
            yield UserTurn(text=message.content, images=message.images)
            continue
        for tool_round in message.tool_rounds:
            yield ModelTurn(
                text=tool_round.assistant_text,
                calls=tool_round.tool_calls,
                reasoning=tool_round.reasoning,
            )
            yield ResultsTurn(results=tool_round.results, calls=tool_round.tool_calls)
        if message.content or message.reasoning:
            yield ModelTurn(text=message.content, reasoning=message.reasoning)
