"""toolreel.adapters: provider wire formats and stores, around the pure core.

`converter` is built on first use (PEP 562 `__getattr__`), not at import; so is
`PostgresJournal`, whose module imports psycopg (the `toolreel[postgres]` extra).
"""

from typing import TYPE_CHECKING, Any

from ._errors import (
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
from ._origin import SessionOrigin
from ._providers import PROVIDERS, EventModel, ModelPort, api_key, codec_for, http_model
from ._providers._anthropic import AnthropicCodec
from ._providers._codec import Codec, StreamDecoder
from ._providers._gemini import GeminiCodec
from ._providers._http import HttpModel, Secret, Timeouts
from ._providers._ollama import OllamaCodec
from ._providers._openai import OpenAICodec
from ._providers._openai_sdk import OpenAISdkModel, openai_sdk_model
from ._providers._responses import ResponsesCodec
from ._request_diff import RequestChange, RequestDiff, diff_requests
from ._retries import Retry
from ._serde import event_from_json, event_to_json, get_converter, structure, unstructure
from ._session import Session, SessionBuilder, TurnSummary, load_session
from ._session_diff import CallChange, SessionDiff, TurnDiff, canonical_arguments, diff_sessions
from ._sqlite import SQLiteJournal
from ._transcript import render_transcript

if TYPE_CHECKING:
    from ._postgres import PostgresJournal

__all__ = [
    "PROVIDERS",
    "AnthropicCodec",
    "CallChange",
    "Codec",
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
