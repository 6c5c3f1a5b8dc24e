"""The errors toolreel.open_agent raises on purpose, each also the builtin open_agent raises.

open_agent's users catch `ValueError`, `TypeError` and `RuntimeError`; each error
here is one of those and a `ToolreelError`, so both kinds of handler work
(drawn in toolreel.shell.errors' tree).
"""

from __future__ import annotations

from toolreel.core import ToolreelError, UsageError


class NothingToReceive(UsageError, RuntimeError):
    """`receive_messages()` with no response under way: call `query()` first."""


class ContentTypeError(UsageError, TypeError):
    """A tool result that is not a str, dict or list."""


class ResultsOwed(UsageError, RuntimeError):
    """A new prompt while tool calls of the last response still wait for results."""


class PromptBlocked(ToolreelError, RuntimeError):
    """A UserPromptSubmit hook blocked the prompt: nothing was sent."""


class ModelError(ToolreelError, RuntimeError):
    """The model call failed (the provider's or the client's message, and status if any)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        """Keep the provider's message and HTTP status."""
        super().__init__(message)
        self.status = status
