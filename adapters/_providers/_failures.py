"""Classifying failed model calls: retryable or fatal, and how long the provider asks to wait.

Retryable: 408 (timeout), 409 (conflict/lock), 425, 429 (rate limit), every
5xx, and 529 (Anthropic "overloaded"). Fatal: every other 4xx — a bad request,
a bad key, a missing model will not get better by asking again. A provider
body may overrule the status (OpenAI's 429 `insufficient_quota` is fatal).

A refusal of a request longer than the model's context is marked
`context_too_long`, whichever provider's words say it (`too_long`): a compaction
policy may shorten the request and call once more (rule 18 of core/_step.py), a
fallback policy may move on to another model (rule 8, core/_fallback.py).

The wait asked for: `retry-after-ms` (OpenAI), else `Retry-After` as seconds
or as an HTTP date (RFC 9110 §10.2.3: `delay-seconds / HTTP-date`), the date
becoming the seconds from now (never negative: a date past means "now").
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Mapping

from toolreel.core import ModelCallFailed

RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
#: How providers say a request is longer than the model's context: OpenAI's code
#: `context_length_exceeded` ("This model's maximum context length is N tokens"; the
#: Responses API: "Your input exceeds the context window of this model"), Anthropic's
#: "prompt is too long: N tokens > M maximum" and "input length and `max_tokens` exceed
#: context limit", Gemini's "The input token count (N) exceeds the maximum number of
#: tokens allowed (M)", and the OpenAI-compatible servers' (vLLM, Ollama, llama.cpp)
#: wordings of these ("... exceeds the context length", "requested more tokens than the
#: context length", "too many tokens").
TOO_LONG = re.compile(
    r"context_length_exceeded|maximum context length|prompt is too long"
    r"|exceeds? (?:the )?context (?:window|limit|length)"
    r"|input token count.{0,40}exceeds the maximum number of tokens"
    r"|context length|too many tokens",
    re.IGNORECASE,
)


def too_long(message: str) -> bool:
    """Whether a provider's message says the request is longer than the model's context."""
    return TOO_LONG.search(message) is not None


def status_retryable(status: int) -> bool:
    """Whether asking again may succeed."""
    return status in RETRYABLE_STATUSES or status >= 500


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value, whatever the case of its name."""
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds from `retry-after-ms`, or `retry-after` (seconds or an HTTP date), if sent.

    `now` is the Unix time a date is counted from (default: the clock).
    """
    millis = header(headers, "retry-after-ms")
    if millis is not None:
        seconds = _number(millis)
        return None if seconds is None else seconds / 1000
    value = header(headers, "retry-after") or ""
    seconds = _number(value)
    return seconds if seconds is not None else _until(value, now)


def _until(date: str, now: float | None) -> float | None:
    """Seconds from `now` until an HTTP date (0 if it is past), or None if it is not one."""
    if not date.strip():
        return None  # no header: nothing to parse
    import email.utils  # noqa: PLC0415 - only a dated Retry-After needs the parser

    try:
        when = email.utils.parsedate_to_datetime(date.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT; "-0000" parses as naive
        when = when.replace(tzinfo=datetime.UTC)
    clock = time.time() if now is None else now
    return max(0.0, when.timestamp() - clock)


def duration(text: str) -> float | None:
    """A protobuf-style duration ("34.4s", "1.5s") in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", text)
    return float(match.group(1)) if match else None


def _number(text: str) -> float | None:
    """A non-negative number of seconds, or None."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def http_failure(
    status: int,
    message: str,
    headers: Mapping[str, str],
    *,
    retryable: bool | None = None,
    wait: float | None = None,
) -> ModelCallFailed:
    """The failure of an HTTP error response: the provider's message, `HTTP <status>: ` first."""
    retrying = status_retryable(status) if retryable is None else retryable
    return ModelCallFailed(
        retryable=retrying,
        message=f"HTTP {status}: {message}",
        status=status,
        retry_after=wait if wait is not None else retry_after(headers),
        context_too_long=not retrying and too_long(message),
    )


def body_text(body: bytes, limit: int = 500) -> str:
    """A body as readable text, cut to `limit` characters (for bodies that are not JSON)."""
    text = body.decode("utf-8", errors="replace").strip()
    return text if len(text) <= limit else text[:limit] + "…"
