"""JSON helpers the codecs share: read untrusted JSON values, and turn a bad body into a failure.

A provider's body is untrusted: every reader here returns a safe default for a
value of the wrong type instead of raising, so a codec never crashes on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from returns.result import Failure, Success

from toolreel.core import ModelCallFailed, ModelEvent, ToolSpec

from ._codec import parse_json


def guarded_body(body: bytes, decode: Callable[[Any], list[ModelEvent]]) -> list[ModelEvent]:
    """Parse a whole body and decode it; bytes that are not the format become a fatal failure."""
    match parse_json(body):
        case Success(data):
            try:
                return decode(data)
            except Exception as exc:
                return [fatal(f"malformed response body: {type(exc).__name__}: {exc}")]
        case Failure(why):
            return [fatal(f"response body is {why}")]
    return []  # pragma: no cover - a Result is a Success or a Failure


def fatal(message: str) -> ModelCallFailed:
    """A failure asking again will not cure."""
    return ModelCallFailed(retryable=False, message=message)


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """JSON, with a bearer token when there is a key (OpenAI-style and Ollama servers)."""
    headers = {"content-type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def arguments_text(value: Any) -> str:
    """Arguments as JSON text (a few servers send an object instead of the string)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value)
    return ""


def dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON array (anything else: none)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    """A JSON string, or ""."""
    return value if isinstance(value, str) else ""


def as_count(value: Any) -> int | None:
    """A non-negative JSON integer, or None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def count(value: Any) -> int:
    """A token counter, or 0."""
    return as_count(value) or 0


def tool_json(spec: ToolSpec) -> dict[str, Any]:
    """A tool as a `function` tool (the schema parsed back from its JSON text; Ollama's too)."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": json.loads(spec.parameters),
        },
    }
