"""What every model call sends besides the messages, and the one builder of requests.

`LoopConfig.settings` is a `ModelSettings` derived from its own fields (so that
its constructor and saved form stay as they are); `step` builds each
`CallModel`'s request with `request`.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ._record import Value
from ._records import ChatMessage, ModelRequest, Reasoning, ToolRound, ToolSpec


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelSettings(Value):
    """The model, its instructions, the tools it is offered, and the sampling limits."""

    model: str = ""
    system_prompt: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    max_tokens: int | None = None
    temperature: float | None = None
    cache_key: str | None = None


def tool_specs(specs: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """Any iterable of tool specs, held as a tuple (a typed converter: strict callers pass)."""
    return tuple(specs)


def rounds_message(
    rounds: tuple[ToolRound, ...], text: str = "", reasoning: tuple[Reasoning, ...] = ()
) -> ChatMessage:
    """The assistant message of a turn (or of one attempt): its rounds, then any final text."""
    return ChatMessage(role="assistant", content=text, tool_rounds=rounds, reasoning=reasoning)


def so_far(
    history: tuple[ChatMessage, ...], rounds: tuple[ToolRound, ...]
) -> tuple[ChatMessage, ...]:
    """The conversation so far: the history, then the running rounds as one assistant message."""
    if not rounds:
        return history
    return (*history, rounds_message(rounds))


def request(
    settings: ModelSettings,
    messages: tuple[ChatMessage, ...],
    *,
    tool_choice: str | None = None,
    model: str | None = None,
) -> ModelRequest:
    """The request for one model call; `tool_choice` overrides the settings' (a final answer),
    `model` the settings' model (a fallback's).

    Without tools the settings' choice has nothing to choose from, so it is "auto".
    """
    choice = settings.tool_choice if settings.tools else "auto"
    if tool_choice is not None:
        choice = tool_choice
    return ModelRequest(
        model=settings.model if model is None else model,
        system=settings.system_prompt,
        messages=messages,
        tools=settings.tools,
        tool_choice=choice,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        cache_key=settings.cache_key,
    )
