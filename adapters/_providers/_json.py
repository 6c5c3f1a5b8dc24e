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


#: How a response whose structure is not its format's begins its failure (retryable: a
#: 200 the server got wrong, as one without a usable choice; the retry policy bounds it).
MALFORMED = "malformed response: "


def malformed(why: str) -> ModelCallFailed:
    """The retryable failure of a response whose structure is not its format's."""
    return ModelCallFailed(retryable=True, message=MALFORMED + why)


def not_object(value: Any, name: str) -> str | None:
    """Why `value`, the field `name`, is no JSON object; None when it is one or is absent."""
    if value is None or isinstance(value, dict):
        return None
    return f"`{name}` is {json_type(value)}, not an object"


def not_objects(value: Any, name: str) -> str | None:
    """Why `value`, the field `name`, is no JSON array of objects; None when it is one or absent.

    A codec that reads such a field with `dicts` would pass over what is wrong in it
    silently, and a response that says it calls tools would end as an empty answer.
    """
    if value is None:
        return None
    if not isinstance(value, list):
        return f"`{name}` is {json_type(value)}, not an array"
    for item in value:
        if not isinstance(item, dict):
            return f"`{name}` holds {json_type(item)}, not only objects"
    return None


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, with its article: `a string`, `an array`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


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
