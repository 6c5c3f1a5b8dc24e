"""The root of toolreel's errors, and the misuse errors the pure core raises.

Every exception a public toolreel function raises on purpose derives from
`ToolreelError`; anything else reaching a caller is a bug. The whole tree is
drawn in `toolreel.shell.errors`; the core owns its root and its misuse
branch, because the reducer raises `StepError` and core imports nothing above it.
"""

from __future__ import annotations

__all__ = ["ConfigError", "ToolreelError", "UsageError"]


class ToolreelError(Exception):
    """Anything toolreel raises on purpose; the message is one line that says what to do."""


class UsageError(ToolreelError):
    """The caller used the API in a way it does not allow (a programmer error)."""


class ConfigError(UsageError, ValueError):
    """An option or config value that is not allowed: names the field, the value, what is."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        """Say which field, what it got and what it accepts."""
        super().__init__(f"{field}={value!r} is not allowed: {allowed}")
        self.field = field
        self.value = value
        self.allowed = allowed
