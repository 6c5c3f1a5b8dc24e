"""toolreel.adapters: provider wire formats and stores, around the pure core.

Besides `__all__`, public modules serve toolreel's own layers (each says what for):
`toolreel.adapters.providers`, `.redaction`, `.records`, `.replay`, `.transcript` and
`.lazy`.

`converter` is built on first use (PEP 562 `__getattr__`), not at import; so is
`PostgresJournal`, whose module imports psycopg (the `toolreel[postgres]` extra), and so
are the names a program talking to one OpenAI-compatible server does not use (`_LAZY`:
the other providers' codecs, the SQLite and JSON lines journals, sessions, diffs,
transcripts).
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
from ._lazy import lazy_names
from ._lease import Lease
from ._origin import SessionOrigin
from ._providers import (
    PROVIDERS,
    Codec,
    EventModel,
    HttpModel,
    ModelPort,
    OpenAICodec,
    OpenAISdkModel,
    Secret,
    StreamDecoder,
    Timeouts,
    api_key,
    codec_for,
    http_model,
    openai_sdk_model,
)
from ._retries import Retry
from ._serde import event_from_json, event_to_json, get_converter, structure, unstructure

if TYPE_CHECKING:
    from ._jsonl import JSONLJournal
    from ._postgres import PostgresJournal
    from ._providers import AnthropicCodec, GeminiCodec, OllamaCodec, ResponsesCodec
    from ._request_diff import RequestChange, RequestDiff, diff_requests
    from ._session import AgentSession, Session, SessionBuilder, TurnSummary, load_session
    from ._session_diff import (
        CallChange,
        SessionDiff,
        TurnDiff,
        canonical_arguments,
        diff_sessions,
    )
    from ._sqlite import SQLiteJournal
    from ._transcript import render_agent_transcript, render_transcript

#: Each name imported at first use, and the module it comes from.
_LAZY = {
    "JSONLJournal": "._jsonl",
    "SQLiteJournal": "._sqlite",
    # psycopg only when it is used
    "PostgresJournal": "._postgres",
    **dict.fromkeys(
        ("AnthropicCodec", "GeminiCodec", "OllamaCodec", "ResponsesCodec"), "._providers"
    ),
    **dict.fromkeys(("RequestChange", "RequestDiff", "diff_requests"), "._request_diff"),
    **dict.fromkeys(
        ("AgentSession", "Session", "SessionBuilder", "TurnSummary", "load_session"), "._session"
    ),
    **dict.fromkeys(
        ("CallChange", "SessionDiff", "TurnDiff", "canonical_arguments", "diff_sessions"),
        "._session_diff",
    ),
    **dict.fromkeys(("render_agent_transcript", "render_transcript"), "._transcript"),
}

__all__ = [
    "PROVIDERS",
    "AgentError",
    "AgentOutput",
    "AgentSession",
    "AnthropicCodec",
    "CallChange",
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
    "SessionDiff",
    "SessionError",
    "SessionNotFound",
    "SessionOrigin",
    "Step",
    "StreamDecoder",
    "Timeouts",
    "TurnDiff",
    "TurnSummary",
    "agent_outcome",
    "api_key",
    "canonical_arguments",
    "codec_for",
    "converter",
    "diff_requests",
    "diff_sessions",
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


_lazy = lazy_names(globals(), _LAZY)


def __getattr__(name: str) -> Any:
    """`converter` (the shared cattrs converter), made when asked for; a `_LAZY` name, imported."""
    if name == "converter":
        return get_converter()
    return _lazy(name)


def __dir__() -> list[str]:
    """Every name, the lazy ones included."""
    return sorted({*globals(), *__all__})
