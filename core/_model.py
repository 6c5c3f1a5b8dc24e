"""What every model call sends besides the messages, and the one builder of requests.

`LoopConfig` and `AgentConfig` each hold a `ModelSettings` (their `settings`,
derived from their own fields so that their constructors and saved forms stay
as they are); both reducers build each `CallModel`'s request with `request`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import attrs

from ._records import ChatMessage, ModelRequest, Reasoning, ToolRound, ToolSpec


@attrs.frozen(kw_only=True)
class ModelSettings:
    """The model, its instructions, the tools it is offered, and the sampling limits."""

    model: str = ""
    system_prompt: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    max_tokens: int | None = None
    temperature: float | None = None


class ModelFields(Protocol):
    """A config that names the model settings field by field (`LoopConfig`, `AgentConfig`)."""

    @property
    def model(self) -> str: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...
    @property
    def tool_choice(self) -> str: ...
    @property
    def max_tokens(self) -> int | None: ...
    @property
    def temperature(self) -> float | None: ...


def settings_of(config: ModelFields) -> ModelSettings:
    """The model settings a config's fields make up."""
    return ModelSettings(
        model=config.model,
        system_prompt=config.system_prompt,
        tools=config.tools,
        tool_choice=config.tool_choice,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
    )


def tool_specs(specs: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """Any iterable of tool specs, held as a tuple (a typed converter: strict callers pass)."""
    return tuple(specs)


def rounds_message(
    rounds: tuple[ToolRound, ...], text: str = "", reasoning: tuple[Reasoning, ...] = ()
) -> ChatMessage:
    """The assistant message of a turn or an attempt: its rounds, then any final text."""
    return ChatMessage(role="assistant", content=text, tool_rounds=rounds, reasoning=reasoning)


def so_far(
    history: tuple[ChatMessage, ...], rounds: tuple[ToolRound, ...]
) -> tuple[ChatMessage, ...]:
    """The conversation so far: the history, then the running rounds as one assistant message."""
    if not rounds:
        return history
    return (*history, rounds_message(rounds))


def request(
    settings: ModelSettings, messages: tuple[ChatMessage, ...], *, tool_choice: str | None = None
) -> ModelRequest:
    """The request for one model call; `tool_choice` overrides the settings' (a final answer).

    Without tools the settings' choice has nothing to choose from, so it is "auto".
    """
    choice = settings.tool_choice if settings.tools else "auto"
    if tool_choice is not None:
        choice = tool_choice
    return ModelRequest(
        model=settings.model,
        system=settings.system_prompt,
        messages=messages,
        tools=settings.tools,
        tool_choice=choice,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
    )
