"""toolreel.adapters: provider wire formats and stores, around the pure core.

Besides `__all__`, public modules serve toolreel's own layers (each says what for):
`toolreel.adapters.providers`, `.redaction`, `.records`, `.replay` and `.transcript`.

`converter` is built on first use (PEP 562 `__getattr__`), not at import; so is
`PostgresJournal`, whose module imports psycopg (the `toolreel[postgres]` extra).
"""

from typing import TYPE_CHECKING, Any

from ._agent_outcome import (
    AgentError,
    AgentOutput,
    ErrorCode,
    ErrorContext,
    ErrorPhase,
    agent_outcome,
)
from ._errors import (
    ContentRefused,
    DecodeError,
    JournalCorrupt,
    JournalError,
    JournalUnavailable,
    SessionBusy,
    SessionError,
    SessionNotFound,
)
from ._journal import (
    Journal,
    JournalEntry,
    MemoryJournal,
    SessionConfig,
    Step,
    effect_record,
    persisted_messages,
)
from ._jsonl import JSONLJournal
from ._lease import Lease
from ._providers import (
    PROVIDERS,
    AnthropicCodec,
    Codec,
    EventModel,
    GeminiCodec,
    HttpModel,
    ModelPort,
    OllamaCodec,
    OpenAICodec,
    OpenAISdkModel,
    ResponsesCodec,
    Secret,
    StreamDecoder,
    Timeouts,
    api_key,
    codec_for,
    http_model,
    openai_sdk_model,
)
from ._request_diff import RequestChange, RequestDiff, diff_requests
from ._retries import Retry
from ._serde import event_from_json, event_to_json, get_converter, structure, unstructure
from ._session import AgentSession, Session, SessionBuilder, TurnSummary, load_session
from ._sqlite import SQLiteJournal
from ._transcript import render_agent_transcript, render_transcript

if TYPE_CHECKING:
    from ._postgres import PostgresJournal

__all__ = [
    "PROVIDERS",
    "AgentError",
    "AgentOutput",
    "AgentSession",
    "AnthropicCodec",
    "Codec",
    "ContentRefused",
    "DecodeError",
    "ErrorCode",
    "ErrorContext",
    "ErrorPhase",
    "EventModel",
    "GeminiCodec",
    "HttpModel",
    "JSONLJournal",
    "Journal",
    "JournalCorrupt",
    "JournalEntry",
    "JournalError",
    "JournalUnavailable",
    "Lease",
    "MemoryJournal",
    "ModelPort",
    "OllamaCodec",
    "OpenAICodec",
    "OpenAISdkModel",
    "PostgresJournal",
    "RequestChange",
    "RequestDiff",
    "ResponsesCodec",
    "Retry",
    "SQLiteJournal",
    "Secret",
    "Session",
    "SessionBuilder",
    "SessionBusy",
    "SessionConfig",
    "SessionError",
    "SessionNotFound",
    "Step",
    "StreamDecoder",
    "Timeouts",
    "TurnSummary",
    "agent_outcome",
    "api_key",
    "codec_for",
    "converter",
    "diff_requests",
    "effect_record",
    "event_from_json",
    "event_to_json",
    "http_model",
    "load_session",
    "openai_sdk_model",
    "persisted_messages",
    "render_agent_transcript",
    "render_transcript",
    "structure",
    "unstructure",
]


def __getattr__(name: str) -> Any:
    """`converter` (the shared cattrs converter) and `PostgresJournal`, made when asked for."""
    if name == "converter":
        return get_converter()
    if name == "PostgresJournal":
        from ._postgres import PostgresJournal  # noqa: PLC0415 - psycopg only when it is used

        return PostgresJournal
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
