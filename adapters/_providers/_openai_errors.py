"""OpenAI-style error payloads: find the error object of a body, say it, and judge a retry.

Used by the OpenAI codec for error bodies and for the `{"error": {...}}` payload
a server may send inside a 200 stream (rule 4 of _openai.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from returns.result import Success

from ._codec import parse_json
from ._failures import status_retryable
from ._json import as_count

#: Error types/codes that asking again may cure (a 200 stream's error payload).
RETRYABLE_KINDS = frozenset(
    {
        "server_error",
        "api_error",
        "internal_error",
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded_error",
        "service_unavailable",
        "timeout",
    }
)
#: Error types/codes that asking again will not cure.
FATAL_KINDS = frozenset(
    {
        "insufficient_quota",
        "billing_hard_limit_reached",
        "invalid_request_error",
        "invalid_api_key",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "model_not_found",
        "context_length_exceeded",
        "unsupported_parameter",
        "content_filter",
    }
)
#: Codes that make even a 429 fatal: the account is out of credit, not rate limited.
QUOTA_KINDS = frozenset({"insufficient_quota", "billing_hard_limit_reached"})


def error_object(body: bytes) -> dict[str, Any] | None:
    """The error object of a body: `{"error": {...}}`, `{"error": "text"}`, or vLLM's bare one."""
    match parse_json(body):
        case Success(data) if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                return error
            if isinstance(error, str):
                return {"message": error}
            if isinstance(data.get("message"), str):
                return data
    return None


def error_kinds(error: Mapping[str, Any]) -> list[str]:
    """The error's code, then its type (the code is the more specific)."""
    return [kind for kind in (error.get("code"), error.get("type")) if isinstance(kind, str)]


def error_message(error: Mapping[str, Any]) -> str:
    """The provider's message, with its type, code and param when it sent them."""
    message = error.get("message")
    said = message if isinstance(message, str) and message else "unknown error"
    details = [
        f"{key}={error[key]}"
        for key in ("type", "code", "param")
        if error.get(key) is not None and error.get(key) != ""
    ]
    return f"{said} ({', '.join(details)})" if details else said


def payload_retryable(error: Mapping[str, Any]) -> bool:
    """Whether an error payload sent instead of (or inside) a response may pass on a retry.

    Known kinds decide; an HTTP status as `code` (vLLM, OpenRouter) decides by
    status; anything else broke mid-response on the server's side: retryable.
    """
    for kind in error_kinds(error):
        if kind in FATAL_KINDS:
            return False
        if kind in RETRYABLE_KINDS:
            return True
    code = as_count(error.get("code"))
    return True if code is None else status_retryable(code)
