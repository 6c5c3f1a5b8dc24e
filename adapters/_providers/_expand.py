"""Expanding compact history into the turn sequence every provider's messages follow.

Seed 001's algorithm: an assistant message with `tool_rounds` expands, per
round, into the text streamed before the calls, the calls, then their
results; after the rounds comes the final text. Here a round's text, reasoning
and calls form one `ModelTurn` (one assistant message: what one response
said), since Anthropic requires it and OpenAI and Gemini accept it; its
results form one `ResultsTurn`. Each codec maps these turns to its own shapes.

Reasoning is provider-specific (an Anthropic signature, a Responses item, a
Gemini thought signature): `expand(messages, provider)` keeps only the blocks
that provider produced, and those of unknown origin (journals written before
blocks were stamped, when a session had one provider). A session that fell
back to another provider (core/_fallback.py) thus sends none of the others'.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeAlias

import attrs

from toolreel.core import ChatMessage, ImagePart, Reasoning, ToolCall, ToolResult
from toolreel.core.record import Value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UserTurn(Value):
    """A user's text, and the images that follow it."""

    text: str
    images: tuple[ImagePart, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelTurn(Value):
    """One model response: reasoning blocks, text, then tool calls (any may be empty)."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    reasoning: tuple[Reasoning, ...] = ()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResultsTurn(Value):
    """The results of one response's calls, in call order."""

    results: tuple[ToolResult, ...]
    calls: tuple[ToolCall, ...]


Turn: TypeAlias = UserTurn | ModelTurn | ResultsTurn


def kept(blocks: tuple[Reasoning, ...], provider: str | None) -> tuple[Reasoning, ...]:
    """The reasoning blocks `provider` may be sent: its own and those of unknown origin.

    None: all of them. (Most responses carry none: nothing is rebuilt then.)
    """
    if not blocks or provider is None or all(block.provider in ("", provider) for block in blocks):
        return blocks
    return tuple(block for block in blocks if block.provider in ("", provider))


def expand(messages: Sequence[ChatMessage], provider: str | None = None) -> Iterator[Turn]:
    """The turns of `messages`, in order; empty assistant text without calls is skipped.

    With `provider`, reasoning another provider produced is left out (see the module).
    """
    for message in messages:
        if message.role == "user":
            yield UserTurn(text=message.content, images=message.images)
            continue
        for tool_round in message.tool_rounds:
            yield ModelTurn(
                text=tool_round.assistant_text,
                calls=tool_round.tool_calls,
                reasoning=kept(tool_round.reasoning, provider),
            )
            yield ResultsTurn(results=tool_round.results, calls=tool_round.tool_calls)
        reasoning = kept(message.reasoning, provider)
        if message.content or reasoning:
            yield ModelTurn(text=message.content, reasoning=reasoning)
