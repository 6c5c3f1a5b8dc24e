"""The provider registry's parts that toolreel's own layers build on.

Users pick a provider by name (`toolreel.adapters.http_model`, `codec_for`,
`PROVIDERS`); the shell, the command line, toolreel.testing and toolreel.open_agent
also need what is here:

- `DEFAULT_MODELS`: a sensible model per hosted provider, when none is named.
- `ToolCallRecovery`, `RECOVERY_MODES`, `recovers`: turning tool calls a local model
  wrote as text into calls, and which codecs can.
- `require_key`, `environment_keys`, `redactor_for`: a hosted provider's URL refused
  without a key; the redactor of the keys set in the environment, or of a session's.
- `is_async_client` (and, for type checkers, `AsyncClient`): a caller's own
  httpx2 or httpx client recognised.
- `status_retryable`: whether an HTTP status is worth asking again.
- `refusal`: why a codec cannot send a conversation's images (None when it can).
- `close_stream`, `plain`: an OpenAI SDK stream closed, and its chunks as JSON data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._providers import (
    DEFAULT_MODELS,
    RECOVERY_MODES,
    ToolCallRecovery,
    close_stream,
    environment_keys,
    is_async_client,
    plain,
    recovers,
    redactor_for,
    refusal,
    require_key,
    status_retryable,
)

if TYPE_CHECKING:
    from ._providers import AsyncClient as AsyncClient  # noqa: PLC0414 - re-exported for typing

__all__ = [
    "DEFAULT_MODELS",
    "RECOVERY_MODES",
    "ToolCallRecovery",
    "close_stream",
    "environment_keys",
    "is_async_client",
    "plain",
    "recovers",
    "redactor_for",
    "refusal",
    "require_key",
    "status_retryable",
]
